package pyjson

import (
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"
)

func TestMarshalMatchesPythonDumpsVectors(t *testing.T) {
	raw, err := os.ReadFile("testdata/python_dumps_vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vectors struct {
		Canonical []struct {
			JSON      string `json:"json"`
			Canonical string `json:"canonical"`
		} `json:"canonical"`
	}
	if err := json.Unmarshal(raw, &vectors); err != nil {
		t.Fatal(err)
	}
	if len(vectors.Canonical) != 60 {
		t.Fatalf("loaded %d vectors, want 60", len(vectors.Canonical))
	}
	sorted := Style{ItemSep: ",", KeySep: ":", SortKeys: true}
	for i, v := range vectors.Canonical {
		val, err := Decode([]byte(v.JSON))
		if err != nil {
			t.Fatalf("vector %d: Decode: %v", i, err)
		}
		got, err := Marshal(val, sorted)
		if err != nil {
			t.Fatalf("vector %d: Marshal: %v", i, err)
		}
		if string(got) != v.Canonical {
			t.Errorf("vector %d:\n got %s\nwant %s", i, got, v.Canonical)
		}
	}
}

func TestMarshalSpacedKeepsOrder(t *testing.T) {
	v, err := Decode([]byte(`{"z": "\u00e9\ud83d\ude00\u007f/<>&\u2028", "a": [1, 2.0, null, true], "m": {"b": 300.00, "a": 34.50}}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Marshal(v, Spaced)
	if err != nil {
		t.Fatal(err)
	}
	// Python: json.dumps(json.loads(same text))
	want := `{"z": "\u00e9\ud83d\ude00\u007f/<>&\u2028", "a": [1, 2.0, null, true], "m": {"b": 300.0, "a": 34.5}}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestDecodeRepeatedKeyKeepsFirstPositionLastValue(t *testing.T) {
	v, err := Decode([]byte(`{"a": 1, "b": 2, "a": 3}`))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := Marshal(v, Compact)
	if string(got) != `{"a":3,"b":2}` {
		t.Errorf("got %s", got)
	}
}

func TestDecodeErrors(t *testing.T) {
	cases := []struct {
		in, want string
	}{
		{``, "unexpected end of JSON input"},
		{`{"a": 1`, "unexpected end of JSON input"},
		{`[1, 2] x`, "after the JSON value: invalid character 'x' looking for beginning of value"},
		{`1 2`, "unexpected 2 after the JSON value at offset 3"},
		{`{"a": 1e999}`, "at offset 11: number 1e999 is not a finite float64"},
		{`{"a": NaN}`, "invalid character 'N' looking for beginning of value"},
		{`[01]`, "invalid character '1' after array element"},
		{strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1), "at offset 10001: nesting deeper than 10000"},
	}
	for _, c := range cases {
		_, err := Decode([]byte(c.in))
		if err == nil || err.Error() != c.want {
			t.Errorf("Decode(%.20q) error = %v, want %q", c.in, err, c.want)
		}
	}
}

func TestMarshalErrorsNameThePath(t *testing.T) {
	v := NewObject(Member{"rows", []any{NewObject(Member{"price", Float(math.Inf(1))})}})
	_, err := Marshal(v, Compact)
	if err == nil || err.Error() != "$.rows[0].price: float +Inf has no JSON representation" {
		t.Fatalf("error = %v", err)
	}
	_, err = Marshal([]any{struct{}{}}, Compact)
	if err == nil || err.Error() != "$[0]: unsupported value of type struct {}" {
		t.Fatalf("error = %v", err)
	}
}

func TestCloneIsDeep(t *testing.T) {
	orig := NewObject(Member{"items", []any{NewObject(Member{"q", Int(1)})}})
	c := Clone(orig).(*Object)
	items, _ := c.Get("items")
	items.([]any)[0].(*Object).Set("q", Int(2))
	if !Equal(orig, NewObject(Member{"items", []any{NewObject(Member{"q", Int(1)})}})) {
		t.Error("mutating the clone changed the original")
	}
	if Equal(orig, c) {
		t.Error("Equal ignores the changed value")
	}
}

func TestEqualDistinguishesKinds(t *testing.T) {
	if Equal(Int(1), Float(1)) {
		t.Error("Equal(1, 1.0) = true; the stable hash tells them apart")
	}
	if Equal(NewObject(Member{"a", nil}, Member{"b", nil}), NewObject(Member{"b", nil}, Member{"a", nil})) {
		t.Error("Equal ignores key order")
	}
}

// FuzzDecode checks that whatever Decode accepts re-encodes, and that encoding is a
// fixed point (decode(encode(v)) encodes to the same bytes), so no literal changes
// kind or value on a round trip through the server's state.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"products":[{"id":"P-001","price":89.99,"stock":42}],"orders":[]}`,
		`[300.00, 34.50, -0, -0.0, 1e16, 1E-5, 99999999999999999999]`,
		`"\u00e9\ud83d\ude00\u007f\ud800"`,
		`{"a":1,"a":2}`,
		`[1e400]`, `{`, `nul`, `[[[]]]`, `{"":{"":{"":null}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Decode(data)
		if err != nil {
			return
		}
		if json.Valid(data) == false {
			t.Fatalf("Decode accepted invalid JSON %q", data)
		}
		out, err := Marshal(v, Compact)
		if err != nil {
			t.Fatalf("Marshal after Decode(%q): %v", data, err)
		}
		v2, err := Decode(out)
		if err != nil {
			t.Fatalf("Decode(Marshal(v)) = %v for %s", err, out)
		}
		if !Equal(v, v2) {
			t.Fatalf("round trip changed the value: %q -> %s", data, out)
		}
		out2, _ := Marshal(v2, Compact)
		if string(out) != string(out2) {
			t.Fatalf("encoding is not a fixed point: %s vs %s", out, out2)
		}
	})
}
