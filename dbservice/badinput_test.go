package dbservice

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"tolokaforge.io/operator/dbservice/client"
)

// Every rejected request must answer with the exact error and leave the trial's state,
// version, hashes and snapshots as they were.
func TestBadInputLeavesStateUnchanged(t *testing.T) {
	ctx := context.Background()
	const limit = 4096
	_, base := startServer(t, Options{MaxBodyBytes: limit})
	c := client.New(base)
	if _, err := c.Init(ctx, "b", client.InitRequest{
		Tables:  tablesOf(t, `{"t":[{"id":1,"v":1.5}],"u":[]}`),
		Schemas: []client.TableSchema{{TableName: "t", PrimaryKey: "id"}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Patch(ctx, "b", "t", client.PatchRequest{Operations: []client.Operation{client.Insert(json.RawMessage(`{"id":2}`))}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Snapshot(ctx, "b", "s1"); err != nil {
		t.Fatal(err)
	}
	big := `{"tables":{"t":[{"pad":"` + strings.Repeat("x", limit) + `"}]}}`
	tests := []struct {
		name, method, path, body string
		status                   int
		errType, msg             string
	}{
		{"init malformed", "POST", "/trials/new/init", `{"tables": {`, 400, "InvalidJSON",
			"invalid JSON at offset 12: unexpected end of input, expected an object key"},
		{"init trailing garbage", "POST", "/trials/new/init", `{"tables":{}} x`, 400, "InvalidJSON",
			"invalid JSON at offset 14: unexpected character 'x' after the top-level value"},
		{"init record not object", "POST", "/trials/new/init", `{"tables":{"t":[{"a":1},[1]]}}`, 400, "ValidationError",
			`$.tables["t"][1]: record must be an object, got an array`},
		{"init table not array", "POST", "/trials/new/init", `{"tables":{"t":{"a":1}}}`, 400, "ValidationError",
			`$.tables["t"]: must be an array of records, got an object`},
		{"init tables missing", "POST", "/trials/new/init", `{"schemas":[]}`, 400, "ValidationError",
			`$: missing required key "tables"`},
		{"init unknown key", "POST", "/trials/new/init", `{"tables":{},"extra":1}`, 400, "ValidationError",
			`$: unknown key "extra" (allowed: tables, schemas, unstable_fields)`},
		{"init NaN", "POST", "/trials/new/init", `{"tables":{"t":[{"a":NaN}]}}`, 400, "InvalidJSON",
			"invalid JSON at offset 21: NaN and Infinity are not allowed"},
		{"init -Infinity", "POST", "/trials/new/init", `{"tables":{"t":[{"a":-Infinity}]}}`, 400, "InvalidJSON",
			"invalid JSON at offset 21: NaN and Infinity are not allowed"},
		{"init float overflow", "POST", "/trials/new/init", `{"tables":{"t":[{"a":1e999}]}}`, 400, "InvalidJSON",
			"invalid JSON at offset 21: number 1e999 is outside the float64 range"},
		{"init schema without name", "POST", "/trials/new/init", `{"tables":{},"schemas":[{"primary_key":"id"}]}`, 400, "ValidationError",
			"$.schemas[0].table_name: is required and must be a non-empty string"},
		{"init duplicate schema", "POST", "/trials/new/init", `{"tables":{},"schemas":[{"table_name":"a"},{"table_name":"a"}]}`, 400, "ValidationError",
			`$.schemas[1].table_name: table "a" already has a schema at $.schemas[0]`},
		{"init unstable field not string", "POST", "/trials/new/init", `{"tables":{},"unstable_fields":[{"table_name":"a","field_name":3}]}`, 400, "ValidationError",
			"$.unstable_fields[0].field_name: must be a string, got an int"},
		{"init duplicate primary key", "POST", "/trials/new/init", `{"tables":{"a":[{"k":1},{"k":1.0}]},"schemas":[{"table_name":"a","primary_key":"k"}]}`, 400, "ValidationError",
			`$.tables["a"][1]: duplicate primary key k=1.0 (also at index 0)`},
		{"init invalid utf-8", "POST", "/trials/new/init", "{\"tables\":{\"\xff\":[]}}", 400, "InvalidJSON",
			"invalid JSON at offset 12: invalid UTF-8 byte 0xff in string"},
		{"init too large", "POST", "/trials/new/init", big, 413, "PayloadTooLarge",
			"request body exceeds the limit of 4096 bytes"},
		{"init bad trial id", "POST", "/trials/bad%20id/init", `{"tables":{}}`, 400, "InvalidTrialID",
			`trial id "bad id" must match [A-Za-z0-9._:-]{1,253}`},
		{"init trial id too long", "POST", "/trials/" + strings.Repeat("a", 254) + "/init", `{"tables":{}}`, 400, "InvalidTrialID",
			`trial id "` + strings.Repeat("a", 254) + `" must match [A-Za-z0-9._:-]{1,253}`},
		{"init existing", "POST", "/trials/b/init", `{"tables":{}}`, 409, "TrialAlreadyExists",
			`trial "b" already exists; delete it before initializing it again`},
		{"patch malformed", "PATCH", "/trials/b/state/t", `{"operations":[{"op":"insert","record":{"id":3}]}`, 400, "InvalidJSON",
			"invalid JSON at offset 47: unexpected character ']', expected ',' or '}' in object"},
		{"patch unknown op", "PATCH", "/trials/b/state/t", `{"operations":[{"op":"insert","record":{"id":3}},{"op":"merge","record":{}}]}`, 400, "InvalidOperation",
			`operations[1]: unknown op "merge" (allowed: insert, update, delete, upsert)`},
		{"patch op missing", "PATCH", "/trials/b/state/t", `{"operations":[{"record":{}}]}`, 400, "InvalidOperation",
			`operations[0]: missing "op"`},
		{"patch op not string", "PATCH", "/trials/b/state/t", `{"operations":[{"op":1}]}`, 400, "InvalidOperation",
			`operations[0]: "op" must be a string, got an int`},
		{"patch op not object", "PATCH", "/trials/b/state/t", `{"operations":[{"op":"delete","filter":{}},"insert"]}`, 400, "InvalidOperation",
			`operations[1]: must be an object, got a string`},
		{"patch extra key", "PATCH", "/trials/b/state/t", `{"operations":[{"op":"delete","filter":{},"record":{}}]}`, 400, "InvalidOperation",
			`operations[0]: unknown key "record" for op "delete" (allowed: op, filter)`},
		{"patch record not object", "PATCH", "/trials/b/state/t", `{"operations":[{"op":"insert","record":[1]}]}`, 400, "InvalidOperation",
			`operations[0]: "record" must be an object, got an array`},
		{"patch update without set", "PATCH", "/trials/b/state/t", `{"operations":[{"op":"update","filter":{}}]}`, 400, "InvalidOperation",
			`operations[0]: op "update" requires "set"`},
		{"patch filter null", "PATCH", "/trials/b/state/t", `{"operations":[{"op":"delete","filter":null}]}`, 400, "InvalidOperation",
			`operations[0]: "filter" must be an object, got null`},
		{"patch upsert bad key", "PATCH", "/trials/b/state/t", `{"operations":[{"op":"upsert","record":{},"key":5}]}`, 400, "InvalidOperation",
			`operations[0]: "key" must be a non-empty string, got 5`},
		{"patch Infinity", "PATCH", "/trials/b/state/t", `{"operations":[{"op":"insert","record":{"id":Infinity}}]}`, 400, "InvalidJSON",
			"invalid JSON at offset 45: NaN and Infinity are not allowed"},
		{"patch operations missing", "PATCH", "/trials/b/state/t", `{}`, 400, "ValidationError",
			`$: missing required key "operations"`},
		{"patch operations empty", "PATCH", "/trials/b/state/t", `{"operations":[]}`, 400, "ValidationError",
			"$.operations: must hold at least one operation"},
		{"patch operations not array", "PATCH", "/trials/b/state/t", `{"operations":{}}`, 400, "ValidationError",
			"$.operations: must be an array, got an object"},
		{"patch if_version float", "PATCH", "/trials/b/state/t", `{"operations":[{"op":"delete","filter":{}}],"if_version":2.0}`, 400, "ValidationError",
			"$.if_version: must be an integer, got 2.0"},
		{"patch unknown top key", "PATCH", "/trials/b/state/t", `{"operations":[{"op":"delete","filter":{}}],"ops":[]}`, 400, "ValidationError",
			`$: unknown key "ops" (allowed: operations, if_version, etag)`},
		{"patch body not object", "PATCH", "/trials/b/state/t", `[]`, 400, "ValidationError",
			"$: must be an object, got an array"},
		{"patch duplicate key", "PATCH", "/trials/b/state/t", `{"operations":[{"op":"delete","filter":{"id":1}},{"op":"insert","record":{"id":2}}]}`, 409, "DuplicateKey",
			`operations[1]: table "t" already holds a record with id=2`},
		{"patch missing table update", "PATCH", "/trials/b/state/zz", `{"operations":[{"op":"update","filter":{},"set":{}}]}`, 404, "TableNotFound",
			`table "zz" not found in trial "b"`},
		{"patch stale version", "PATCH", "/trials/b/state/t", `{"operations":[{"op":"delete","filter":{}}],"if_version":1}`, 409, "VersionMismatch",
			"if_version 1 does not match the current version 2"},
		{"patch too large", "PATCH", "/trials/b/state/t", `{"operations":[{"op":"insert","record":{"p":"` + strings.Repeat("y", limit) + `"}}]}`, 413, "PayloadTooLarge",
			"request body exceeds the limit of 4096 bytes"},
		{"patch unknown trial", "PATCH", "/trials/nope/state/t", `{"operations":[{"op":"delete","filter":{}}]}`, 404, "TrialNotFound",
			`trial "nope" not found`},
		{"query missing path", "POST", "/trials/b/query", `{}`, 400, "ValidationError",
			"$.jsonpath: is required and must be a non-empty string"},
		{"query bad stable", "POST", "/trials/b/query", `{"jsonpath":"$","stable":"yes"}`, 400, "ValidationError",
			"$.stable: must be a boolean, got a string"},
		{"restore unknown", "POST", "/trials/b/snapshots/zz/restore", "", 404, "SnapshotNotFound",
			`snapshot "zz" not found in trial "b"`},
		{"delete unknown snapshot", "DELETE", "/trials/b/snapshots/zz", "", 404, "SnapshotNotFound",
			`snapshot "zz" not found in trial "b"`},
		{"reset bad id", "POST", "/trials/a%2Fb/reset", "", 400, "InvalidTrialID",
			`trial id "a/b" must match [A-Za-z0-9._:-]{1,253}`},
		{"empty trial id", "POST", "/trials//init", `{"tables":{}}`, 400, "InvalidTrialID",
			`trial id "" must match [A-Za-z0-9._:-]{1,253}`},
		{"unicode trial id", "GET", "/trials/%C3%A9/state/hash", "", 400, "InvalidTrialID",
			`trial id "é" must match [A-Za-z0-9._:-]{1,253}`},
	}
	type trialView struct {
		version      int64
		full, stable string
		data         string
	}
	view := func() trialView {
		st, err := c.State(ctx, "b", nil)
		if err != nil {
			t.Fatal(err)
		}
		return trialView{version: st.Version, full: st.FullHash, stable: st.StableHash, data: dataCanon(t, st.Data)}
	}
	before := view()
	for _, tt := range tests {
		code, body := rawDo(t, tt.method, base+tt.path, tt.body)
		var e struct {
			Error   string         `json:"error"`
			Message string         `json:"message"`
			Details map[string]any `json:"details"`
		}
		if err := json.Unmarshal([]byte(body), &e); err != nil || code != tt.status || e.Error != tt.errType || e.Message != tt.msg {
			t.Errorf("%s: got %d %s\nwant %d %s %q", tt.name, code, body, tt.status, tt.errType, tt.msg)
		}
		if e.Details == nil {
			t.Errorf("%s: error body lacks details: %s", tt.name, body)
		}
		if got := view(); got != before {
			t.Fatalf("%s changed the trial: %+v -> %+v", tt.name, before, got)
		}
		if _, err := c.Hash(ctx, "new"); !errors.Is(err, client.ErrTrialNotFound) {
			t.Fatalf("%s created trial \"new\": %v", tt.name, err)
		}
	}
	// The snapshot survived every rejected request.
	r, err := c.Restore(ctx, "b", "s1")
	if err != nil || r.StableHash != before.stable {
		t.Fatalf("snapshot after bad requests: %+v, %v", r, err)
	}
}

// A body without Content-Length is cut off at the limit too.
func TestBodyLimitChunked(t *testing.T) {
	_, base := startServer(t, Options{MaxBodyBytes: 100})
	body := io.MultiReader(strings.NewReader(`{"tables":{"t":[{"p":"`), strings.NewReader(strings.Repeat("z", 200)), strings.NewReader(`"}]}}`))
	req, err := http.NewRequest("POST", base+"/trials/x/init", io.NopCloser(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 413 || string(b) != `{"error":"PayloadTooLarge","message":"request body exceeds the limit of 100 bytes","details":{"limit_bytes":100}}` {
		t.Fatalf("chunked oversize = %d %s", resp.StatusCode, b)
	}
	if req.ContentLength != 0 || len(req.TransferEncoding) != 0 && req.TransferEncoding[0] != "chunked" {
		t.Fatalf("request was not sent without a length: %d %v", req.ContentLength, req.TransferEncoding)
	}
	code, _ := rawDo(t, "GET", base+"/trials/x/state/hash", "")
	if code != 404 {
		t.Fatalf("oversize init created the trial: %d", code)
	}
}
