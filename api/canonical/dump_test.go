package canonical

import (
	"errors"
	"math"
	"strings"
	"testing"
)

var (
	dumpsLayout   = DumpOptions{}
	compactLayout = DumpOptions{Compact: true}
	sortedLayout  = DumpOptions{SortKeys: true}
	canonLayout   = DumpOptions{Compact: true, SortKeys: true}
)

func parseOrdered(t testing.TB, s string) Value {
	t.Helper()
	v, err := ParseWith([]byte(s), ParseOptions{KeepOrder: true})
	if err != nil {
		t.Fatalf("ParseWith(%q, KeepOrder): %v", s, err)
	}
	return v
}

// python_dumps_vectors.json is written by testdata/gen_dumps_vectors.py with CPython.
func TestDumpMatchesPythonVectors(t *testing.T) {
	vecs := loadTestdata(t, "python_dumps_vectors.json")
	for _, group := range []struct {
		name string
		want int
	}{{"canonical", 60}, {"ordered", 6}} {
		cases := field(t, vecs, group.name).(Array)
		if len(cases) != group.want {
			t.Fatalf("%s: loaded %d vectors, want %d", group.name, len(cases), group.want)
		}
		for i, c := range cases {
			v := parseOrdered(t, str(t, c, "json"))
			for _, l := range []struct {
				key  string
				opts DumpOptions
			}{{"dumps", dumpsLayout}, {"compact", compactLayout}, {"sorted", sortedLayout}, {"canonical", canonLayout}} {
				if got, want := string(Dump(v, l.opts)), str(t, c, l.key); got != want {
					t.Errorf("%s[%d] %s:\n got %s\nwant %s", group.name, i, l.key, got, want)
				}
			}
			// The order is invisible to the canonical form.
			if got, want := string(Marshal(v)), str(t, c, "canonical"); got != want {
				t.Errorf("%s[%d] Marshal of the ordered value:\n got %s\nwant %s", group.name, i, got, want)
			}
		}
	}
}

func TestDumpSpacedKeepsOrder(t *testing.T) {
	v := parseOrdered(t, `{"z": "\u00e9\ud83d\ude00\u007f/<>&\u2028", "a": [1, 2.0, null, true], "m": {"b": 300.00, "a": 34.50}}`)
	// Python: json.dumps(json.loads(same text))
	want := `{"z": "\u00e9\ud83d\ude00\u007f/<>&\u2028", "a": [1, 2.0, null, true], "m": {"b": 300.0, "a": 34.5}}`
	if got := string(Dump(v, dumpsLayout)); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// Without KeepOrder the keys come out sorted.
	plain, _ := Parse([]byte(`{"b": 1, "a": [{"y": 1, "x": 2}]}`))
	if got, want := string(Dump(plain, dumpsLayout)), `{"a": [{"x": 2, "y": 1}], "b": 1}`; got != want {
		t.Errorf("unordered value: got %s, want %s", got, want)
	}
}

func TestParseKeepOrderRepeatedKeyKeepsFirstPositionLastValue(t *testing.T) {
	v := parseOrdered(t, `{"b": 1, "a": 2, "b": 3, "c": {}}`)
	if got, want := string(Dump(v, compactLayout)), `{"b":3,"a":2,"c":{}}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	o := v.(Object)
	if got, _ := o.Get("b"); !Equal(got, NewInt(3)) {
		t.Errorf("Get(b) = %v, want 3", got)
	}
	if keys := strings.Join(o.Keys(), ","); keys != "a,b,c" {
		t.Errorf("Keys() = %s, want key order a,b,c", keys)
	}
	c, _ := o.Get("c")
	if !c.(Object).Ordered() {
		t.Error("an empty object parsed with KeepOrder has no order, so keys added later would sort")
	}
}

// KeepOrder changes the shape of objects, never what is accepted.
func TestParseKeepOrderErrors(t *testing.T) {
	cases := []struct {
		in, want string
	}{
		{``, "invalid JSON at offset 0: unexpected end of input, expected a value"},
		{`{"a": 1`, "invalid JSON at offset 7: unexpected end of input, expected ',' or '}' in object"},
		{`[1, 2] x`, "invalid JSON at offset 7: unexpected character 'x' after the top-level value"},
		{`1 2`, "invalid JSON at offset 2: unexpected character '2' after the top-level value"},
		{`{"a": 1e999}`, "invalid JSON at offset 6: number 1e999 is outside the float64 range"},
		{`{"a": NaN}`, "invalid JSON at offset 6: NaN and Infinity are not allowed"},
		{`[01]`, "invalid JSON at offset 2: unexpected character '1', expected ',' or ']' in array"},
		{`{"a" 1}`, "invalid JSON at offset 5: unexpected character '1', expected ':' after object key"},
		{strings.Repeat("[", DefaultMaxDepth+1), "invalid JSON at offset 1000: nesting deeper than 1000 levels"},
	}
	for _, c := range cases {
		v, err := ParseWith([]byte(c.in), ParseOptions{KeepOrder: true})
		var se *SyntaxError
		if !errors.As(err, &se) || err.Error() != c.want {
			t.Errorf("ParseWith(%.20q, KeepOrder) = %v, %v; want %q", c.in, v, err, c.want)
		}
		if _, perr := Parse([]byte(c.in)); perr == nil || perr.Error() != err.Error() {
			t.Errorf("Parse(%.20q) = %v; KeepOrder answered %v", c.in, perr, err)
		}
	}
}

// The layouts follow json.dumps with its default allow_nan=True: Values built in Go
// may hold NaN and infinities, and every layout writes them as Python does.
func TestDumpNonFiniteFloats(t *testing.T) {
	v := NewOrderedObject(Member{"rows", Array{NewOrderedObject(
		Member{"nan", Float(math.NaN())}, Member{"inf", Float(math.Inf(1))}, Member{"ninf", Float(math.Inf(-1))},
	)}})
	if got, want := string(Dump(v, dumpsLayout)), `{"rows": [{"nan": NaN, "inf": Infinity, "ninf": -Infinity}]}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if got, want := string(Dump(v, canonLayout)), string(Marshal(v)); got != want {
		t.Errorf("canonical layout %s differs from Marshal %s", got, want)
	}
}

// Ordered objects are values like any other: operations return new objects, follow
// Python's dict (assignment keeps a key's position, update appends new keys) and
// leave the original alone.
func TestOrderedObjectOperations(t *testing.T) {
	orig := NewOrderedObject(Member{"id", String("P-1")}, Member{"stock", NewInt(5)}, Member{"items", Array{NewOrderedObject(Member{"q", NewInt(1)})}})
	const origText = `{"id":"P-1","stock":5,"items":[{"q":1}]}`
	dump := func(v Value) string { return string(Dump(v, compactLayout)) }

	tests := []struct {
		name string
		got  Object
		want string
	}{
		{"With existing key keeps its position", orig.With("stock", NewInt(4)), `{"id":"P-1","stock":4,"items":[{"q":1}]}`},
		{"With new key goes last", orig.With("a", Bool(true)), `{"id":"P-1","stock":5,"items":[{"q":1}],"a":true}`},
		{"Merge is dict.update", orig.Merge(NewOrderedObject(Member{"z", Null{}}, Member{"id", String("P-2")})), `{"id":"P-2","stock":5,"items":[{"q":1}],"z":null}`},
		{"Merge of an unordered set", orig.Merge(NewObject(Member{"y", NewInt(2)}, Member{"x", NewInt(1)})), `{"id":"P-1","stock":5,"items":[{"q":1}],"x":1,"y":2}`},
		{"unordered Merge ordered", NewObject(Member{"b", NewInt(1)}, Member{"a", NewInt(2)}).Merge(NewOrderedObject(Member{"d", NewInt(3)}, Member{"c", NewInt(4)})), `{"a":2,"b":1,"d":3,"c":4}`},
		{"Without keeps the rest in order", orig.Without("stock", "nope"), `{"id":"P-1","items":[{"q":1}]}`},
		{"Without everything", orig.Without("id", "stock", "items").With("k", NewInt(1)).With("a", NewInt(2)), `{"k":1,"a":2}`},
		{"NewOrderedObject repeated key", NewOrderedObject(Member{"b", NewInt(1)}, Member{"a", NewInt(2)}, Member{"b", NewInt(3)}), `{"b":3,"a":2}`},
		{"empty ordered object", NewOrderedObject().With("z", NewInt(1)).With("a", NewInt(2)), `{"z":1,"a":2}`},
	}
	for _, tt := range tests {
		if got := dump(tt.got); got != tt.want {
			t.Errorf("%s: got %s, want %s", tt.name, got, tt.want)
		}
		if !tt.got.Ordered() {
			t.Errorf("%s: the result lost its insertion order", tt.name)
		}
	}
	if got := dump(orig); got != origText {
		t.Errorf("operations changed the original: %s", got)
	}
	// Key-order views are unaffected by insertion order.
	if got := strings.Join(orig.Keys(), ","); got != "id,items,stock" {
		t.Errorf("Keys() = %s", got)
	}
	var inOrder []string
	for k := range orig.InOrder() {
		inOrder = append(inOrder, k)
	}
	if got := strings.Join(inOrder, ","); got != "id,stock,items" {
		t.Errorf("InOrder() = %s", got)
	}
	var sorted []string
	for k := range NewObject(Member{"b", nil}, Member{"a", nil}).InOrder() {
		sorted = append(sorted, k)
	}
	if got := strings.Join(sorted, ","); got != "a,b" {
		t.Errorf("InOrder() of an unordered object = %s, want key order", got)
	}
}

// Equal is Python's ==: insertion order does not matter, as for dicts, and Dump is
// where order and the int/float kind show.
func TestEqualIgnoresInsertionOrder(t *testing.T) {
	ab := NewOrderedObject(Member{"a", NewInt(1)}, Member{"b", Float(2)})
	ba := NewOrderedObject(Member{"b", NewInt(2)}, Member{"a", NewInt(1)})
	if !Equal(ab, ba) {
		t.Error("Equal distinguishes {a, b} from {b, a}")
	}
	if Hash(ab) == Hash(ba) {
		t.Error("the hash ignores the int/float kind: 2.0 and 2 must hash apart")
	}
	if Hash(ab.With("b", NewInt(2))) != Hash(ba) {
		t.Error("the hash depends on insertion order")
	}
	if string(Dump(ab, dumpsLayout)) == string(Dump(ba, dumpsLayout)) {
		t.Error("Dump ignores insertion order")
	}
}

// FuzzDump: ParseWith(KeepOrder) accepts and refuses what Parse does, with equal
// values, and whatever it accepts dumps to text that parses back to
// the same value and dumps to the same bytes (no literal changes kind or value and no
// key moves on a round trip through a server's state), and its canonical layout is
// Marshal.
func FuzzDump(f *testing.F) {
	for _, s := range []string{
		`{"products":[{"id":"P-001","price":89.99,"stock":42}],"orders":[]}`,
		`[300.00, 34.50, -0, -0.0, 1e16, 1E-5, 99999999999999999999]`,
		`"\u00e9\ud83d\ude00\u007f\ud800"`,
		`{"a":1,"a":2}`,
		`[1e400]`, `{`, `nul`, `[[[]]]`, `{"":{"":{"":null}}}`,
		`{"b":{"d":1,"c":2},"a":[{"z":1,"y":2}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := ParseWith(data, ParseOptions{KeepOrder: true})
		plain, perr := Parse(data)
		if (err == nil) != (perr == nil) || (err != nil && err.Error() != perr.Error()) {
			t.Fatalf("KeepOrder changed what is accepted for %q: %v vs %v", data, err, perr)
		}
		if err != nil {
			return
		}
		if !Equal(v, plain) || string(Marshal(v)) != string(Marshal(plain)) {
			t.Fatalf("KeepOrder changed the value of %q: %s vs %s", data, Marshal(v), Marshal(plain))
		}
		for _, opts := range []DumpOptions{dumpsLayout, compactLayout, sortedLayout} {
			out := Dump(v, opts)
			v2, err := ParseWith(out, ParseOptions{KeepOrder: true})
			if err != nil {
				t.Fatalf("%+v: parse of Dump(%q) = %s: %v", opts, data, out, err)
			}
			if !Equal(v, v2) {
				t.Fatalf("%+v: round trip changed the value: %q -> %s", opts, data, out)
			}
			if out2 := Dump(v2, opts); string(out) != string(out2) {
				t.Fatalf("%+v: not a fixed point: %s vs %s", opts, out, out2)
			}
		}
		if got, want := Dump(v, canonLayout), Marshal(v); string(got) != string(want) {
			t.Fatalf("canonical layout %s differs from Marshal %s", got, want)
		}
	})
}
