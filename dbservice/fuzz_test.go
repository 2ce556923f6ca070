package dbservice

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"tolokaforge.io/operator/api/canonical"
)

// fuzzLimits are small enough for the fuzzer to cross.
var fuzzLimits = func() Limits {
	l := defaultLimits
	l.MaxNumberDigits, l.MaxOpsPerPatch = 12, 4
	return l
}()

var fuzzSeeds = []string{
	`{"operations":[{"op":"insert","record":{"id":1234567890123}}]}`,
	`{"operations":[{"op":"insert","record":{"id":1.5e-123456789012}}]}`,
	`{"operations":[{"op":"delete","filter":{}},{"op":"delete","filter":{}},{"op":"delete","filter":{}},{"op":"delete","filter":{}},{"op":"delete","filter":{}}]}`,
	`{"tables":{"t":[{"n":-99999999999999999999}]}}`,
	`{"operations":[{"op":"insert","record":{"id":1,"x":300.00}}]}`,
	`{"operations":[{"op":"update","filter":{"id":1.0},"set":{"v":true}},{"op":"delete","filter":{}}],"if_version":1}`,
	`{"operations":[{"op":"upsert","record":{"id":"3","n":null},"key":"id"},{"op":"upsert","record":{"n":2}}]}`,
	`{"operations":[{"op":"delete","filter":{"b":null}},{"op":"insert","record":{"id":2}}]}`,
	`{"operations":[{"op":"merge"}]}`,
	`{"operations":[{"op":"insert","record":{"id":NaN}}]}`,
	`{"tables":{"t":[{"id":1}]},"schemas":[{"table_name":"t","primary_key":"id"}],"unstable_fields":[{"table_name":"t","field_name":"ts"}]}`,
	`{"jsonpath":"$.db.t[?@.id == 1]","stable":true}`,
	`{"operations":[]}`, `[]`, `{"operations":{}}`, `{`, `{"operations":[{"op":"update","filter":{},"set":{"id":2}}],"etag":"x"}`,
	`{"tables":{"a\u0000b":[]}}`, `{"tables":{"..":[],"t":[]}}`, `{"tables":{"ok":[]},"schemas":[{"table_name":"../../x"}]}`,
	`{"tables":{},"unstable_fields":[{"table_name":"t\n","field_name":"f"}]}`, "{\"tables\":{\"\u2028\":[]}}",
}

// The request decoders accept or reject any byte string without panicking, and every
// rejection is a 400 that names what was wrong.
func FuzzDecodeRequests(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkErr := func(kind string, e *Error) {
			if e == nil {
				return
			}
			if e.Message == "" || e.Details == nil {
				t.Fatalf("%s: rejection %+v is not described", kind, e)
			}
			if e.Status == http.StatusRequestEntityTooLarge {
				if e.Type != errTypePayloadTooLarge || e.Details["limit"] != "max_operations_per_patch" ||
					!strings.Contains(e.Message, "(limit max_operations_per_patch=4)") {
					t.Fatalf("%s: 413 %+v does not name its limit", kind, e)
				}
				return
			}
			if e.Status != http.StatusBadRequest {
				t.Fatalf("%s: rejection %+v is not a 400", kind, e)
			}
			if l, ok := e.Details["limit"]; ok && !strings.Contains(e.Message, fmt.Sprintf("(%v)", l)) {
				t.Fatalf("%s: limit refusal %q does not name %v", kind, e.Message, l)
			}
			switch e.Type {
			case errTypeInvalidJSON, errTypeValidation, errTypeInvalidOperation:
			default:
				t.Fatalf("%s: unexpected error type %q", kind, e.Type)
			}
		}
		if req, e := decodePatch(body, &fuzzLimits); e == nil {
			if len(req.ops) == 0 {
				t.Fatal("accepted a PATCH without operations")
			}
			for i, op := range req.ops {
				if _, ok := opKeys[op.op]; !ok {
					t.Fatalf("accepted op %d %q", i, op.op)
				}
			}
		} else {
			checkErr("patch", e)
			if e.Type == errTypeInvalidOperation && !strings.HasPrefix(e.Message, "operations[") {
				t.Fatalf("InvalidOperation without an index: %q", e.Message)
			}
		}
		if req, e := decodeInit(body, &fuzzLimits); e == nil {
			named := func(where, name string) {
				if rule, why, ok := nameProblem(name); !ok {
					t.Fatalf("init accepted %s %s (%s: %s)", where, quoteName(name), rule, why)
				}
			}
			for _, sc := range req.schemas {
				named("schema table", sc.Name)
			}
			for _, uf := range req.unstable {
				named("unstable field table", uf.Table)
			}
			for name, v := range req.tables.All() {
				named("table", name)
				for _, r := range v.(canonical.Array) {
					if r.Kind() != canonical.KindObject {
						t.Fatalf("table %q accepted a non-object record", name)
					}
				}
			}
		} else {
			checkErr("init", e)
		}
		if _, e := decodeQuery(body, &fuzzLimits); e != nil {
			checkErr("query", e)
		}
	})
}

// Any PATCH body that decodes is applied exactly as the slice model applies it; a
// rejected one leaves the trial's state untouched.
func FuzzApplyOperations(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	base := `[{"id":1,"n":"a","v":1.0,"b":true},{"id":2,"n":"b","v":2,"b":false},{"id":"3","n":"c"},{"n":"d"}]`
	baseVal, err := canonical.Parse([]byte(base))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte, withPK bool) {
		req, e := decodePatch(body, &fuzzLimits)
		if e != nil {
			return
		}
		ir := &initRequest{tables: canonical.NewObject(canonical.Member{Key: "t", Value: baseVal})}
		model := &refModel{tables: map[string][]canonical.Object{}, pk: map[string]string{}}
		if withPK {
			ir.schemas = []tableSchema{{Name: "t", PrimaryKey: "id", Fields: canonical.Object{}}}
			model.pk["t"] = "id"
		}
		for _, r := range baseVal.(canonical.Array) {
			model.tables["t"] = append(model.tables["t"], r.(canonical.Object))
		}
		tr, e := newTrial("fz", ir)
		if e != nil {
			t.Fatal(e)
		}
		before := string(tr.current.canonicalBytes(false))
		for _, table := range []string{"t", "other"} {
			next, n, e := tr.applyPatch(table, req.ops)
			wantN, wantErr := model.apply(table, req.ops)
			gotErr := ""
			if e != nil {
				gotErr = e.Type
			}
			if gotErr != wantErr || (e == nil && n != wantN) {
				t.Fatalf("table %s: got (%d, %q), model (%d, %q)", table, n, gotErr, wantN, wantErr)
			}
			if after := string(tr.current.canonicalBytes(false)); after != before {
				t.Fatalf("applyPatch modified the current state in place")
			}
			if e != nil {
				continue
			}
			if got, want := string(next.canonicalBytes(false)), model.canonical(nil); got != want {
				t.Fatalf("table %s: got %s\nwant %s", table, got, want)
			}
			// Both tables start from the original state.
			delete(model.tables, "other")
			model.tables["t"] = nil
			for _, r := range baseVal.(canonical.Array) {
				model.tables["t"] = append(model.tables["t"], r.(canonical.Object))
			}
		}
	})
}

// The query encoder writes exactly canonical.Marshal's bytes for any value, and
// refuses (errCapReached) exactly when those bytes are longer than its cap.
func FuzzCappedEncoder(f *testing.F) {
	for _, s := range []string{
		`{"b":[1,2.5,-0.0,1e16,"\u00e9\ud83d\ude00",null,true,false],"a":{"":{}}}`,
		`"\ud800"`, `[{"z":1,"é":2,"e":3,"😀":4,"\uffff":5}]`, `123456789012345678901234567890`, `0.1`, `[]`,
	} {
		f.Add([]byte(s), int64(16))
	}
	f.Fuzz(func(t *testing.T, data []byte, max int64) {
		v, err := canonical.Parse(data)
		if err != nil || max < 0 {
			return
		}
		want := canonical.Marshal(v)
		enc := cappedEncoder{max: max}
		err = enc.value(canonical.ToAny(v))
		switch {
		case int64(len(want)) > max:
			if err != errCapReached {
				t.Fatalf("%d bytes under cap %d: %v", len(want), max, err)
			}
		case err != nil:
			t.Fatalf("%d bytes within cap %d refused: %v", len(want), max, err)
		case string(enc.buf) != string(want):
			t.Fatalf("encoded %s, canonical %s", enc.buf, want)
		}
	})
}

// The name rule holds for any string: an accepted name is printable UTF-8 of at most
// MaxNameBytes bytes, no path step, and a refusal's message stays short and names the
// rule; checkName never panics and agrees with nameProblem.
func FuzzNames(f *testing.F) {
	for _, s := range []string{"orders", "", ".", "..", "...", "../../x", `a\b`, "a\x00b", "a\nb", "\xff",
		"\u200b", "é 字 😀", strings.Repeat("a", maxNameBytes+1), strings.Repeat("é", 70)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		rule, why, ok := nameProblem(name)
		e := checkName("table", "$.tables", name)
		if ok != (e == nil) {
			t.Fatalf("nameProblem ok=%v but checkName %v", ok, e)
		}
		if ok {
			if name == "" || len(name) > maxNameBytes || name == "." || name == ".." || !utf8.ValidString(name) ||
				strings.ContainsAny(name, "/\\") || strings.IndexFunc(name, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
				t.Fatalf("accepted %q", name)
			}
			return
		}
		if rule == "" || why == "" || e.Status != http.StatusBadRequest || e.Type != errTypeValidation || e.Details["rule"] != rule {
			t.Fatalf("refusal of %q: %+v", name, e)
		}
		if len(e.Message) > 400 || !utf8.ValidString(e.Message) || !strings.HasPrefix(e.Message, "$.tables: table name ") {
			t.Fatalf("refusal message of %q: %q", name, e.Message)
		}
	})
}
