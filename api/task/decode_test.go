package task

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"
)

// strictProbe exercises DecodeStrict's generic paths that the wire types do not
// all have: maps of structs, pointers to structs inside slices, fixed arrays,
// embedded structs, unsigned and sized ints, time.Time, interfaces.
type strictProbe struct {
	Name    string                     `json:"name"`
	Count   int8                       `json:"count"`
	Size    uint16                     `json:"size"`
	Ratio   float32                    `json:"ratio"`
	Flag    bool                       `json:"flag"`
	ByName  map[string]strictLeaf      `json:"by_name"`
	Ptrs    []*strictLeaf              `json:"ptrs"`
	Pair    [2]int                     `json:"pair"`
	When    time.Time                  `json:"when"`
	Any     any                        `json:"any"`
	Raw     json.RawMessage            `json:"raw"`
	RawMap  map[string]json.RawMessage `json:"raw_map"`
	Strs    []string                   `json:"strs"`
	Skipped string                     `json:"-"`
	strictEmbedded
}

type strictEmbedded struct {
	Promoted string `json:"promoted"`
}

type strictLeaf struct {
	Value int    `json:"value"`
	Note  string `json:"note,omitempty"`
}

func TestDecodeStrictGeneric(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // error text; "" = success
	}{
		{"unknown top-level key", `{"nmae":"x"}`, "nmae: unknown key"},
		{"tag match is exact, not case-insensitive", `{"Name":"x"}`, "Name: unknown key"},
		{"json:\"-\" field is not a key", `{"Skipped":"x"}`, "Skipped: unknown key"},
		{"unknown key in map of structs", `{"by_name":{"a":{"value":1},"b":{"valeu":2}}}`, "by_name.b.valeu: unknown key"},
		{"unknown key behind pointer in slice", `{"ptrs":[{"value":1},{"value":2,"extra":true}]}`, "ptrs[1].extra: unknown key"},
		{"duplicate key in struct", `{"name":"a","name":"b"}`, "name: duplicate key"},
		{"duplicate key in typed map", `{"by_name":{"a":{"value":1},"a":{"value":2}}}`, "by_name.a: duplicate key"},
		{"string for int", `{"count":"3"}`, "count: expected integer, got string"},
		{"fraction for int", `{"count":1.5}`, "count: expected integer, got 1.5"},
		{"exponent for int", `{"count":1e2}`, "count: expected integer, got 1e2"},
		{"int8 overflow", `{"count":300}`, "count: 300 is out of range for int8"},
		{"negative for uint", `{"size":-1}`, "size: expected non-negative integer, got -1"},
		{"float overflow", `{"ratio":1e300}`, "ratio: 1e300 is out of range for float32"},
		{"object for string", `{"name":{}}`, "name: expected string, got object"},
		{"number for bool", `{"flag":1}`, "flag: expected boolean, got number"},
		{"array for map", `{"by_name":[]}`, "by_name: expected object, got array"},
		{"object for slice", `{"strs":{}}`, "strs: expected array, got object"},
		{"null list element of non-nullable type", `{"strs":["a",null]}`, "strs[1]: expected string, got null"},
		{"null map value of struct type", `{"by_name":{"a":null}}`, "by_name.a: expected object, got null"},
		{"wrong array length", `{"pair":[1,2,3]}`, "pair: expected 2 elements, got 3"},
		{"bad time", `{"when":"yesterday"}`, `when: parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"`},
		{"top level not an object", `[1]`, "expected object, got array"},
		{"trailing data", `{"name":"a"} {"name":"b"}`, "invalid JSON: invalid character '{' after top-level value"},
		{"trailing garbage", `{"name":"a"}x`, "invalid JSON: invalid character 'x' after top-level value"},
		{"malformed", `{"name":`, "invalid JSON: unexpected end of JSON input"},
		{"empty input", ``, "invalid JSON: unexpected end of JSON input"},
		{"all kinds accepted", `{"name":"a","count":-3,"size":7,"ratio":0.5,"flag":true,"by_name":{"a":{"value":1}},
			"ptrs":[null,{"value":2}],"pair":[1,2],"when":"2024-01-02T03:04:05Z","any":{"x":[1]},"raw":{ "a" : [1, 2.0] },
			"raw_map":{"k":null},"strs":[],"promoted":"p"}`, ""},
		{"null fields are absent", `{"name":null,"count":null,"by_name":null,"ptrs":null,"raw":null,"when":null}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p strictProbe
			err := DecodeStrict([]byte(tt.in), &p)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("want error %q, got none", tt.want)
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T is not *DecodeError", err)
			}
			if err.Error() != tt.want {
				t.Fatalf("error\n got %q\nwant %q", err.Error(), tt.want)
			}
		})
	}
}

func TestDecodeStrictValues(t *testing.T) {
	var p strictProbe
	in := `{"name":"a","count":-3,"size":7,"ratio":0.5,"flag":true,"by_name":{"a":{"value":1}},
		"ptrs":[null,{"value":2}],"pair":[1,2],"when":"2024-01-02T03:04:05Z","any":{"x":[1]},
		"raw":{ "a" : [1, 2.0, "<&>"] },"raw_map":{"k":null},"strs":[],"promoted":"p"}`
	if err := DecodeStrict([]byte(in), &p); err != nil {
		t.Fatal(err)
	}
	want := strictProbe{
		Name: "a", Count: -3, Size: 7, Ratio: 0.5, Flag: true,
		ByName: map[string]strictLeaf{"a": {Value: 1}},
		Ptrs:   []*strictLeaf{nil, {Value: 2}},
		Pair:   [2]int{1, 2},
		When:   time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC),
		Any:    map[string]any{"x": []any{1.0}},
		// RawMessage is compacted but keeps number literals (2.0 stays 2.0).
		Raw:            json.RawMessage(`{"a":[1,2.0,"<&>"]}`),
		RawMap:         map[string]json.RawMessage{"k": json.RawMessage("null")},
		Strs:           []string{},
		strictEmbedded: strictEmbedded{Promoted: "p"},
	}
	if !reflect.DeepEqual(p, want) {
		t.Fatalf("decoded\n got %#v\nwant %#v", p, want)
	}

	// A null struct field is absent: RawMessage nil (not "null"), pointers nil.
	var q strictProbe
	if err := DecodeStrict([]byte(`{"raw":null,"ptrs":null}`), &q); err != nil {
		t.Fatal(err)
	}
	if q.Raw != nil || q.Ptrs != nil {
		t.Fatalf("null fields not absent: raw=%q ptrs=%v", q.Raw, q.Ptrs)
	}
}

func TestDecodeStrictNeedsPointer(t *testing.T) {
	var p strictProbe
	for _, v := range []any{nil, p, (*strictProbe)(nil)} {
		if err := DecodeStrict([]byte(`{}`), v); err == nil {
			t.Fatalf("DecodeStrict(%T) accepted a non-pointer", v)
		}
	}
}

func TestDecodeStrictDepthLimit(t *testing.T) {
	// TraceConstraint.require is recursive; a payload nesting it without bound
	// is refused instead of being scanned once per level.
	inner := `{"kind":"absent","match":{}}`
	for range 40 {
		inner = `{"kind":"occurs","bind":{"var":"v","from":{},"value":"args.x"},"require":` + inner + `}`
	}
	var tc TraceConstraint
	err := DecodeStrict([]byte(inner), &tc)
	var de *DecodeError
	if !errors.As(err, &de) || de.Msg != "nested deeper than 64 levels" {
		t.Fatalf("error = %v", err)
	}
	if want := "require.require.require."; len(de.Path) < len(want) || de.Path[:len(want)] != want {
		t.Fatalf("path = %q", de.Path)
	}
	// Realistic nesting is far from the bound.
	if _, err := DecodeTrialSpec(readTestdataSpec(t)); err != nil {
		t.Fatal(err)
	}
}

func TestDecodeStrictLeavesTargetOnError(t *testing.T) {
	p := strictProbe{Name: "kept", Strs: []string{"a"}}
	if err := DecodeStrict([]byte(`{"name":"changed","strs":["b"],"bogus":1}`), &p); err == nil {
		t.Fatal("accepted an unknown key")
	}
	if p.Name != "kept" || !reflect.DeepEqual(p.Strs, []string{"a"}) {
		t.Fatalf("refused document changed the target: %+v", p)
	}
	// On success the target is replaced, not merged into.
	if err := DecodeStrict([]byte(`{"count":1}`), &p); err != nil {
		t.Fatal(err)
	}
	if p.Name != "" || p.Strs != nil || p.Count != 1 {
		t.Fatalf("decode merged into the old value: %+v", p)
	}
}
