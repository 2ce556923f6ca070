package dbservice

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"tolokaforge.io/operator/dbservice/client"
)

func TestNameRules(t *testing.T) {
	long := strings.Repeat("a", 100_000)
	tests := []struct {
		name, rule, why string
	}{
		{"orders", "", ""},
		{"Order Items", "", ""},
		{"заказы", "", ""},
		{"a.b-c_d:e", "", ""},
		{"...", "", ""},
		{strings.Repeat("x", maxNameBytes), "", ""},
		{"", ruleEmpty, "must not be empty"},
		{strings.Repeat("x", maxNameBytes+1), ruleTooLong, "is 129 bytes long, more than the limit of 128"},
		{long, ruleTooLong, "is 100000 bytes long, more than the limit of 128"},
		{".", ruleDotName, `must not be "." or ".."`},
		{"..", ruleDotName, `must not be "." or ".."`},
		{"../../x", ruleSeparator, `must not contain a path separator ('/' or '\'), found '/' at byte 2`},
		{`a\b`, ruleSeparator, `must not contain a path separator ('/' or '\'), found '\\' at byte 1`},
		{"a\x00b", ruleControl, "must not contain control or non-printing characters, found U+0000 at byte 1"},
		{"a\nb", ruleControl, "must not contain control or non-printing characters, found U+000A at byte 1"},
		{"\x7f", ruleControl, "must not contain control or non-printing characters, found U+007F at byte 0"},
		{"a\u200bb", ruleControl, "must not contain control or non-printing characters, found U+200B at byte 1"},
		{"a\u2028", ruleControl, "must not contain control or non-printing characters, found U+2028 at byte 1"},
		{"ok\xff", ruleUTF8, "is not valid UTF-8 (byte 2)"},
	}
	for _, tt := range tests {
		rule, why, ok := nameProblem(tt.name)
		if ok != (tt.rule == "") || rule != tt.rule || why != tt.why {
			t.Errorf("nameProblem(%s) = %q %q %v, want %q %q", quoteName(tt.name), rule, why, ok, tt.rule, tt.why)
		}
	}
	if q := quoteName(long); q != `"`+strings.Repeat("a", nameQuoteBytes)+`"...` {
		t.Errorf("quoteName(100k) = %s", q)
	}
	// A cut never splits a rune.
	if q := quoteName(strings.Repeat("é", 100)); q != `"`+strings.Repeat("é", nameQuoteBytes/2)+`"...` {
		t.Errorf("quoteName(é x100) = %s", q)
	}
}

// Every place a table or snapshot name enters refuses a bad one with a 400
// ValidationError naming the place, the name (quoted, cut) and the rule, and leaves the
// trial exactly as it was.
func TestBadNamesAreRefusedAndChangeNothing(t *testing.T) {
	ctx := context.Background()
	_, base := startServer(t, Options{})
	c := client.New(base)
	if _, err := c.Init(ctx, "b", client.InitRequest{Tables: tablesOf(t, `{"t":[{"id":1}]}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Snapshot(ctx, "b", "s1"); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("n", 100_000)
	longQ := `"` + strings.Repeat("n", nameQuoteBytes) + `"...`
	ctl := "must not contain control or non-printing characters, found "
	sep := `must not contain a path separator ('/' or '\'), found '/' at byte 2`
	patch := `{"operations":[{"op":"insert","record":{"id":9}}]}`
	tests := []struct {
		name, method, path, body string
		rule, msg                string
	}{
		{"init NUL table", "POST", "/trials/new/init", `{"tables":{"a\u0000b":[]}}`, ruleControl,
			`$.tables: table name "a\x00b" ` + ctl + "U+0000 at byte 1"},
		{"init newline table", "POST", "/trials/new/init", `{"tables":{"t":[],"a\nb":[]}}`, ruleControl,
			`$.tables: table name "a\nb" ` + ctl + "U+000A at byte 1"},
		{"init 100k table", "POST", "/trials/new/init", `{"tables":{"` + long + `":[]}}`, ruleTooLong,
			"$.tables: table name " + longQ + " is 100000 bytes long, more than the limit of 128"},
		{"init dot-dot table", "POST", "/trials/new/init", `{"tables":{"..":[]}}`, ruleDotName,
			`$.tables: table name ".." must not be "." or ".."`},
		{"init schema path", "POST", "/trials/new/init", `{"tables":{},"schemas":[{"table_name":"../../x"}]}`, ruleSeparator,
			`$.schemas[0].table_name: table name "../../x" ` + sep},
		{"init unstable field table", "POST", "/trials/new/init", `{"tables":{},"unstable_fields":[{"table_name":"x\u2028","field_name":"f"}]}`, ruleControl,
			`$.unstable_fields[0].table_name: table name "x\u2028" ` + ctl + "U+2028 at byte 1"},
		{"init unstable field empty table", "POST", "/trials/new/init", `{"tables":{},"unstable_fields":[{"table_name":"","field_name":"f"}]}`, ruleEmpty,
			`$.unstable_fields[0].table_name: table name "" must not be empty`},
		{"patch NUL table", "PATCH", "/trials/b/state/a%00b", patch, ruleControl,
			`{table}: table name "a\x00b" ` + ctl + "U+0000 at byte 1"},
		{"patch path table", "PATCH", "/trials/b/state/..%2F..%2Fx", patch, ruleSeparator,
			`{table}: table name "../../x" ` + sep},
		{"patch dot-dot table", "PATCH", "/trials/b/state/%2E%2E", patch, ruleDotName,
			`{table}: table name ".." must not be "." or ".."`},
		{"patch 100k table", "PATCH", "/trials/b/state/" + long, patch, ruleTooLong,
			"{table}: table name " + longQ + " is 100000 bytes long, more than the limit of 128"},
		{"state newline table", "GET", "/trials/b/state?tables=t," + url.QueryEscape("a\nb"), "", ruleControl,
			`?tables: table name "a\nb" ` + ctl + "U+000A at byte 1"},
		{"stable state backslash table", "GET", "/trials/b/state/stable?tables=" + url.QueryEscape(`a\b`), "", ruleSeparator,
			`?tables: table name "a\\b" must not contain a path separator ('/' or '\'), found '\\' at byte 1`},
		{"snapshot path name", "POST", "/trials/b/snapshots/..%2F..%2Fx", "", ruleSeparator,
			`{name}: snapshot name "../../x" ` + sep},
		{"snapshot 100k name", "POST", "/trials/b/snapshots/" + long, "", ruleTooLong,
			"{name}: snapshot name " + longQ + " is 100000 bytes long, more than the limit of 128"},
		{"restore NUL name", "POST", "/trials/b/snapshots/s%001/restore", "", ruleControl,
			`{name}: snapshot name "s\x001" ` + ctl + "U+0000 at byte 1"},
		{"delete dot snapshot", "DELETE", "/trials/b/snapshots/%2E", "", ruleDotName,
			`{name}: snapshot name "." must not be "." or ".."`},
	}
	type view struct {
		version      int64
		full, stable string
		data         string
	}
	look := func() view {
		st, err := c.State(ctx, "b", nil)
		if err != nil {
			t.Fatal(err)
		}
		return view{st.Version, st.FullHash, st.StableHash, dataCanon(t, st.Data)}
	}
	before := look()
	for _, tt := range tests {
		code, body := rawDo(t, tt.method, base+tt.path, tt.body)
		var e struct {
			Error, Message string
			Details        map[string]any
		}
		if err := json.Unmarshal([]byte(body), &e); err != nil || code != 400 || e.Error != errTypeValidation || e.Message != tt.msg || e.Details["rule"] != tt.rule {
			t.Errorf("%s: got %d %.300s\nwant 400 ValidationError %q (rule %s)", tt.name, code, body, tt.msg, tt.rule)
		}
		if len(body) > 1024 {
			t.Errorf("%s: the refusal is %d bytes long", tt.name, len(body))
		}
		if !utf8.ValidString(body) {
			t.Errorf("%s: the refusal is not UTF-8", tt.name)
		}
		if got := look(); got != before {
			t.Fatalf("%s changed the trial: %+v -> %+v", tt.name, before, got)
		}
		if _, err := c.Hash(ctx, "new"); !errors.Is(err, client.ErrTrialNotFound) {
			t.Fatalf("%s created trial \"new\": %v", tt.name, err)
		}
	}
	if r, err := c.Restore(ctx, "b", "s1"); err != nil || r.StableHash != before.stable {
		t.Fatalf("snapshot s1 after bad names: %+v, %v", r, err)
	}
}
