package dbservice

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"tolokaforge.io/operator/dbservice/client"
)

func TestPatchSemantics(t *testing.T) {
	const base = `{"t":[{"id":1,"n":"a","v":1.0,"b":true},{"id":2,"n":"b","v":2,"b":false},{"id":"3","n":"c"}]}`
	tests := []struct {
		name     string
		tables   string
		pk       string // declares a schema for t with this primary key
		table    string
		body     string
		affected int
		after    string // canonical data after the request; "" = unchanged
		errType  string
		errMsg   string
	}{
		{name: "insert appends", table: "t", body: `{"operations":[{"op":"insert","record":{"id":4,"x":300.00}}]}`,
			affected: 1, after: `{"t":[{"b":true,"id":1,"n":"a","v":1.0},{"b":false,"id":2,"n":"b","v":2},{"id":"3","n":"c"},{"id":4,"x":300.0}]}`},
		{name: "update by int matches float and int", table: "t", body: `{"operations":[{"op":"update","filter":{"v":2.0},"set":{"n":"B"}}]}`,
			affected: 1, after: `{"t":[{"b":true,"id":1,"n":"a","v":1.0},{"b":false,"id":2,"n":"B","v":2},{"id":"3","n":"c"}]}`},
		{name: "update id 1.0 finds int 1", table: "t", body: `{"operations":[{"op":"update","filter":{"id":1.0},"set":{"n":"A","new":[1]}}]}`,
			affected: 1, after: `{"t":[{"b":true,"id":1,"n":"A","new":[1],"v":1.0},{"b":false,"id":2,"n":"b","v":2},{"id":"3","n":"c"}]}`},
		{name: "string id does not equal int", table: "t", body: `{"operations":[{"op":"update","filter":{"id":3},"set":{"n":"X"}}]}`,
			affected: 0, after: base},
		{name: "true does not equal 1", table: "t", body: `{"operations":[{"op":"update","filter":{"v":true},"set":{"n":"X"}}]}`,
			affected: 0, after: base},
		{name: "bool matches bool", table: "t", body: `{"operations":[{"op":"delete","filter":{"b":false}}]}`,
			affected: 1, after: `{"t":[{"b":true,"id":1,"n":"a","v":1.0},{"id":"3","n":"c"}]}`},
		{name: "null matches missing field", table: "t", body: `{"operations":[{"op":"delete","filter":{"b":null}}]}`,
			affected: 1, after: `{"t":[{"b":true,"id":1,"n":"a","v":1.0},{"b":false,"id":2,"n":"b","v":2}]}`},
		{name: "empty filter matches all", table: "t", body: `{"operations":[{"op":"update","filter":{},"set":{"k":0}}]}`,
			affected: 3, after: `{"t":[{"b":true,"id":1,"k":0,"n":"a","v":1.0},{"b":false,"id":2,"k":0,"n":"b","v":2},{"id":"3","k":0,"n":"c"}]}`},
		{name: "multi-field filter", table: "t", body: `{"operations":[{"op":"delete","filter":{"id":1,"n":"zz"}}]}`,
			affected: 0, after: base},
		{name: "delete all", table: "t", body: `{"operations":[{"op":"delete","filter":{}}]}`,
			affected: 3, after: `{"t":[]}`},
		{name: "upsert merges into match keeping old fields", table: "t", body: `{"operations":[{"op":"upsert","record":{"id":2,"v":20.5}}]}`,
			affected: 1, after: `{"t":[{"b":true,"id":1,"n":"a","v":1.0},{"b":false,"id":2,"n":"b","v":20.5},{"id":"3","n":"c"}]}`},
		{name: "upsert appends when no match", table: "t", body: `{"operations":[{"op":"upsert","record":{"id":9}}]}`,
			affected: 1, after: `{"t":[{"b":true,"id":1,"n":"a","v":1.0},{"b":false,"id":2,"n":"b","v":2},{"id":"3","n":"c"},{"id":9}]}`},
		{name: "upsert explicit key", table: "t", body: `{"operations":[{"op":"upsert","record":{"n":"c","z":1},"key":"n"}]}`,
			affected: 1, after: `{"t":[{"b":true,"id":1,"n":"a","v":1.0},{"b":false,"id":2,"n":"b","v":2},{"id":"3","n":"c","z":1}]}`},
		{name: "upsert defaults to the primary key", pk: "n", table: "t", body: `{"operations":[{"op":"upsert","record":{"n":"a","id":7}}]}`,
			affected: 1, after: `{"t":[{"b":true,"id":7,"n":"a","v":1.0},{"b":false,"id":2,"n":"b","v":2},{"id":"3","n":"c"}]}`},
		{name: "upsert lacking key", table: "t", body: `{"operations":[{"op":"insert","record":{"id":5}},{"op":"upsert","record":{"n":"q"}}]}`,
			errType: "InvalidOperation", errMsg: `operations[1]: upsert record lacks its key field "id"`},
		{name: "ops apply in order", table: "t", body: `{"operations":[{"op":"insert","record":{"id":5}},{"op":"update","filter":{"id":5},"set":{"s":1}},{"op":"delete","filter":{"id":1}}]}`,
			affected: 3, after: `{"t":[{"b":false,"id":2,"n":"b","v":2},{"id":"3","n":"c"},{"id":5,"s":1}]}`},
		{name: "missing table created by insert", table: "new", body: `{"operations":[{"op":"insert","record":{"a":1}},{"op":"update","filter":{},"set":{"b":2}}]}`,
			affected: 2, after: `{"new":[{"a":1,"b":2}],"t":[{"b":true,"id":1,"n":"a","v":1.0},{"b":false,"id":2,"n":"b","v":2},{"id":"3","n":"c"}]}`},
		{name: "missing table created by upsert", table: "new", body: `{"operations":[{"op":"upsert","record":{"id":1}}]}`,
			affected: 1, after: `{"new":[{"id":1}],"t":[{"b":true,"id":1,"n":"a","v":1.0},{"b":false,"id":2,"n":"b","v":2},{"id":"3","n":"c"}]}`},
		{name: "missing table update is 404", table: "new", body: `{"operations":[{"op":"update","filter":{},"set":{"b":2}}]}`,
			errType: "TableNotFound", errMsg: `table "new" not found in trial "p"`},
		{name: "missing table delete is 404", table: "new", body: `{"operations":[{"op":"delete","filter":{}},{"op":"insert","record":{}}]}`,
			errType: "TableNotFound", errMsg: `table "new" not found in trial "p"`},
		{name: "duplicate key rolls back earlier ops", pk: "id", table: "t", body: `{"operations":[{"op":"insert","record":{"id":10}},{"op":"delete","filter":{}},{"op":"insert","record":{"id":11}},{"op":"insert","record":{"id":11.0}}]}`,
			errType: "DuplicateKey", errMsg: `operations[3]: table "t" already holds a record with id=11.0`},
		{name: "duplicate key against existing", pk: "id", table: "t", body: `{"operations":[{"op":"insert","record":{"id":"3"}}]}`,
			errType: "DuplicateKey", errMsg: `operations[0]: table "t" already holds a record with id="3"`},
		{name: "insert without a schema allows repeats", table: "t", body: `{"operations":[{"op":"insert","record":{"id":1}}]}`,
			affected: 1, after: `{"t":[{"b":true,"id":1,"n":"a","v":1.0},{"b":false,"id":2,"n":"b","v":2},{"id":"3","n":"c"},{"id":1}]}`},
		{name: "upsert append checks pk when keyed elsewhere", pk: "id", table: "t", body: `{"operations":[{"op":"upsert","record":{"n":"zz","id":2},"key":"n"}]}`,
			errType: "DuplicateKey", errMsg: `operations[0]: table "t" already holds a record with id=2`},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, Options{})
			req := client.InitRequest{Tables: tablesOf(t, base)}
			if tt.pk != "" {
				req.Schemas = []client.TableSchema{{TableName: "t", PrimaryKey: tt.pk}}
			}
			if _, err := c.Init(ctx, "p", req); err != nil {
				t.Fatal(err)
			}
			before, _ := c.State(ctx, "p", nil)
			code, body := rawDo(t, "PATCH", c.BaseURL()+"/trials/p/state/"+tt.table, tt.body)
			after, err := c.State(ctx, "p", nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.errType != "" {
				var e struct{ Error, Message string }
				if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error != tt.errType || e.Message != tt.errMsg {
					t.Fatalf("PATCH = %d %s; want %s %q", code, body, tt.errType, tt.errMsg)
				}
				if after.Version != before.Version || dataCanon(t, after.Data) != dataCanon(t, before.Data) || after.FullHash != before.FullHash {
					t.Fatalf("rejected PATCH changed the trial: version %d->%d", before.Version, after.Version)
				}
				return
			}
			want := fmt.Sprintf(`{"status":"ok","version":2,"affected_rows":%d}`, tt.affected)
			if code != 200 || body != want {
				t.Fatalf("PATCH = %d %s; want 200 %s", code, body, want)
			}
			if got := dataCanon(t, after.Data); got != canon(t, []byte(tt.after)) {
				t.Fatalf("after = %s\nwant    %s", got, tt.after)
			}
			if after.Version != 2 {
				t.Fatalf("version = %d", after.Version)
			}
		})
	}
}

func TestPatchGuards(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, Options{})
	if _, err := c.Init(ctx, "g", client.InitRequest{Tables: tablesOf(t, `{"t":[{"id":1}]}`)}); err != nil {
		t.Fatal(err)
	}
	ins := []client.Operation{client.Insert(json.RawMessage(`{"id":2}`))}
	if _, err := c.Patch(ctx, "g", "t", client.PatchRequest{Operations: ins, IfVersion: ptr(int64(7))}); !errors.Is(err, client.ErrVersionMismatch) {
		t.Fatalf("stale if_version: %v", err)
	}
	p, err := c.Patch(ctx, "g", "t", client.PatchRequest{Operations: ins, IfVersion: ptr(int64(1))})
	if err != nil || p.Version != 2 {
		t.Fatalf("matching if_version: %+v, %v", p, err)
	}
	h, _ := c.Hash(ctx, "g")
	if _, err := c.Patch(ctx, "g", "t", client.PatchRequest{Operations: ins, ETag: "0000"}); !errors.Is(err, client.ErrVersionMismatch) {
		t.Fatalf("stale etag: %v", err)
	}
	p, err = c.Patch(ctx, "g", "t", client.PatchRequest{Operations: ins, ETag: h.FullHash})
	if err != nil || p.Version != 3 {
		t.Fatalf("matching etag: %+v, %v", p, err)
	}
	code, body := rawDo(t, "PATCH", c.BaseURL()+"/trials/g/state/t", `{"operations":[{"op":"delete","filter":{}}],"if_version":1}`)
	if code != 409 || body != `{"error":"VersionMismatch","message":"if_version 1 does not match the current version 3","details":{"current_version":3,"expected_version":1,"trial_id":"g"}}` {
		t.Fatalf("raw stale if_version = %d %s", code, body)
	}
}
