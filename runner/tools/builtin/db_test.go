package builtin_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"testing"

	"tolokaforge.io/operator/dbservice"
	"tolokaforge.io/operator/dbservice/client"
	"tolokaforge.io/operator/runner/tools"
	"tolokaforge.io/operator/runner/tools/builtin"
)

// dbStore is builtin.Store over the real DB service client, as the runner's is.
type dbStore struct {
	c  *client.Client
	id string
}

func (s dbStore) Table(ctx context.Context, name string) (json.RawMessage, error) {
	st, err := s.c.State(ctx, s.id, []string{name})
	if err != nil {
		return nil, err
	}
	return st.Data[name], nil
}

func (s dbStore) Patch(ctx context.Context, table string, ops []client.Operation) (int, error) {
	r, err := s.c.Patch(ctx, s.id, table, client.PatchRequest{Operations: ops})
	if err != nil {
		return 0, err
	}
	return r.AffectedRows, nil
}

func startDB(t *testing.T) *client.Client {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		_ = dbservice.New(dbservice.Options{}).Serve(ctx, ln)
		close(done)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return client.New("http://"+ln.Addr().String(), client.WithRetries(0))
}

func TestDBTools(t *testing.T) {
	c := startDB(t)
	_, err := c.Init(context.Background(), "t", client.InitRequest{
		Tables:  map[string]json.RawMessage{"users": json.RawMessage(`[{"id":"U1","name":"Mia","age":30},{"id":"U2","name":"Li","age":30.0},{"id":3,"name":"Bo"}]`)},
		Schemas: []client.TableSchema{{TableName: "users", PrimaryKey: "id"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	env := builtin.Env{Store: dbStore{c, "t"}}
	steps := []struct {
		tool, args, want, err string
	}{
		{"db_get", `{"table":"users","key":"U1"}`, `{"age":30,"id":"U1","name":"Mia"}`, ""},
		{"db_get", `{"table":"users","key":3}`, `{"id":3,"name":"Bo"}`, ""},
		{"db_get", `{"table":"users","key":"Mia","key_field":"name"}`, `{"age":30,"id":"U1","name":"Mia"}`, ""},
		{"db_get", `{"table":"users","key":"U9"}`, "", `no record with id="U9" in table "users"`},
		{"db_get", `{"table":"nope","key":"U1"}`, "", `table "nope" not found`},
		// 30 == 30.0, as the DB service's filters compare.
		{"db_find", `{"table":"users","filter":{"age":30}}`, `[{"age":30,"id":"U1","name":"Mia"},{"age":30.0,"id":"U2","name":"Li"}]`, ""},
		{"db_find", `{"table":"users","filter":{"age":null}}`, `[{"id":3,"name":"Bo"}]`, ""},
		{"db_find", `{"table":"users","limit":1}`, `[{"age":30,"id":"U1","name":"Mia"}]`, ""},
		{"db_find", `{"table":"users","limit":0}`, "", "arguments.limit: 0 must be >= 1"},
		{"db_insert", `{"table":"users","record":{"id":"U4","name":"Ann"}}`, `{"id":"U4","name":"Ann"}`, ""},
		{"db_insert", `{"table":"users","record":{"id":"U4","name":"Dup"}}`, "", `insert on table "users": table "users" already holds a record with id="U4"`},
		{"db_insert", `{"table":"users","record":[1]}`, "", "arguments.record: want an object, got array"},
		{"db_update", `{"table":"users","filter":{"age":30},"set":{"age":31}}`, `{"updated":2}`, ""},
		{"db_update", `{"table":"users","filter":{},"set":{"age":1}}`, "", "arguments.filter: must name at least one field"},
		{"db_delete", `{"table":"users","filter":{"id":3}}`, `{"deleted":1}`, ""},
		{"db_delete", `{"table":"users","filter":{"id":"nobody"}}`, `{"deleted":0}`, ""},
		{"db_find", `{"table":"users"}`, `[{"age":31,"id":"U1","name":"Mia"},{"age":31,"id":"U2","name":"Li"},{"id":"U4","name":"Ann"}]`, ""},
		{"db_find", `{"table":"users","filter":"x"}`, "", "arguments.filter: want an object, got string"},
	}
	for i, s := range steps {
		out, err := call(t, env, s.tool, s.args)
		switch {
		case s.err == "" && (err != nil || out != s.want):
			t.Errorf("step %d %s %s = %q, %v; want %q", i, s.tool, s.args, out, err, s.want)
		case s.err != "" && (err == nil || err.Error() != s.err):
			t.Errorf("step %d %s %s = %q, %v; want error %q", i, s.tool, s.args, out, err, s.err)
		}
	}
	var ae *tools.ArgumentError
	if _, err := call(t, env, "db_get", `{"table":"users"}`); !errors.As(err, &ae) || ae.Error() != "arguments.key: required" {
		t.Errorf("missing key: %v", err)
	}
	if _, err := call(t, builtin.Env{}, "db_find", `{"table":"users"}`); err == nil || err.Error() != "no DB service is configured for this trial" {
		t.Errorf("no store: %v", err)
	}
}
