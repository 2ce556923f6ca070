package task

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestDictKeyColumn(t *testing.T) {
	for _, c := range []struct {
		name, rec, key, with string
		ok                   bool
	}{
		{"a record", `{"name":"Noah","address":{"city":"Austin"}}`, "noah_1", `{"__tolokaforge_key__":"noah_1","name":"Noah","address":{"city":"Austin"}}`, true},
		{"an empty record", `{}`, "k", `{"__tolokaforge_key__":"k"}`, true},
		{"a key needing escapes", ` {"a":1} `, `#W"1`, `{"__tolokaforge_key__":"#W\"1","a":1}`, true},
		{"not an object", `[1]`, "k", ``, false},
		{"empty", ``, "k", ``, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := WithDictKey(json.RawMessage(c.rec), c.key)
			if ok != c.ok || string(got) != c.with {
				t.Fatalf("WithDictKey(%s, %q) = %s, %v; want %s, %v", c.rec, c.key, got, ok, c.with, c.ok)
			}
			if !ok {
				return
			}
			back := StripDictKey(got)
			var want, have any
			if err := json.Unmarshal([]byte(c.rec), &want); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(back, &have); err != nil {
				t.Fatalf("StripDictKey(%s) = %s, not JSON: %v", got, back, err)
			}
			if !jsonEqual(want, have) {
				t.Fatalf("StripDictKey(%s) = %s, want %s", got, back, c.rec)
			}
		})
	}
	// Field order and number literals survive; a record without the column is untouched.
	if got := StripDictKey(json.RawMessage(`{"b":1.50,"__tolokaforge_key__":"k","a":[1e3]}`)); string(got) != `{"b":1.50,"a":[1e3]}` {
		t.Fatalf("StripDictKey kept %s", got)
	}
	if in := json.RawMessage(`{"id":"x"}`); !bytes.Equal(StripDictKey(in), in) {
		t.Fatal("StripDictKey changed a record without the column")
	}
	if in := json.RawMessage(`{"__tolokaforge_key__":`); !bytes.Equal(StripDictKey(in), in) {
		t.Fatal("StripDictKey changed malformed input")
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// FuzzStripDictKey: whatever the bytes, StripDictKey does not panic, and on a JSON
// object it returns a JSON object without the column.
func FuzzStripDictKey(f *testing.F) {
	for _, s := range []string{`{"__tolokaforge_key__":"k","a":1}`, `{}`, `[]`, `{"__tolokaforge_key__":`, `{"a":{"__tolokaforge_key__":1}}`, `"__tolokaforge_key__"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out := StripDictKey(data)
		var m map[string]json.RawMessage
		if json.Unmarshal(data, &m) != nil || m == nil {
			return
		}
		var back map[string]json.RawMessage
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("StripDictKey(%q) = %q: %v", data, out, err)
		}
		if _, ok := back[DictKeyField]; ok {
			t.Fatalf("StripDictKey(%q) kept the column: %q", data, out)
		}
	})
}
