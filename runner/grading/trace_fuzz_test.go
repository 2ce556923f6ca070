package grading

import (
	"bytes"
	"testing"

	"tolokaforge.io/operator/api/canonical"
)

// FuzzExpected: whatever JSON a selector value holds, resolving it never panics; a
// value with every reference bound keeps no "${v}" of a bound name at any depth, and a
// value with no reference at all comes back equal to itself.
func FuzzExpected(f *testing.F) {
	for _, s := range []string{
		`"${v}"`, `["${v}", {"a": "x ${v} y", "b": [["${v}"]]}]`, `{"k": {"${v}": "${v}"}}`,
		`"\u0024{v}"`, `[1, 2.5, null, true, "plain"]`, `"${unbound}"`, `"${"`, `{"a":"${v}${v}"}`, `1e400`, `[`,
	} {
		f.Add([]byte(s))
	}
	env := bindings{"v": canonical.String("O-7")}
	f.Fuzz(func(t *testing.T, raw []byte) {
		want, err := expected(raw, env)
		if err != nil {
			return
		}
		enc := canonical.Marshal(want)
		if bytes.Contains(enc, []byte(`${v}`)) && !keyHolds(want, "${v}") {
			t.Fatalf("%s resolved to %s, which still holds ${v}", raw, enc)
		}
		parsed, perr := canonical.Parse(bytes.TrimSpace(raw))
		if perr == nil && !bytes.Contains(canonical.Marshal(parsed), []byte("${")) && !canonical.Equal(parsed, want) {
			t.Fatalf("%s holds no reference, yet resolved to %s", raw, enc)
		}
	})
}

// keyHolds reports whether an object key at any depth contains s: keys are matched
// literally, so a reference there is left as written.
func keyHolds(v canonical.Value, s string) bool {
	switch x := v.(type) {
	case canonical.Array:
		for _, e := range x {
			if keyHolds(e, s) {
				return true
			}
		}
	case canonical.Object:
		for k, e := range x.All() {
			if bytes.Contains([]byte(k), []byte(s)) || keyHolds(e, s) {
				return true
			}
		}
	}
	return false
}
