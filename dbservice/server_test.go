package dbservice

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"tolokaforge.io/operator/dbservice/client"
)

const shopInitialHash = "fb5cce61f84a018b3860412ad354f6efc0e8c1887b869918f6f03de158cc0977"

func TestInitAndReadShopState(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, Options{})
	init, err := c.Init(ctx, "shop-1", client.InitRequest{Tables: tablesOf(t, string(shopState(t)))})
	if err != nil {
		t.Fatal(err)
	}
	want := client.InitResponse{
		Status: "ok", TrialID: "shop-1", Version: 1,
		StableHash: shopInitialHash, FullHash: shopInitialHash, InitialHash: shopInitialHash,
		TablesInitialized: []string{"customers", "orders", "products"},
	}
	if !reflect.DeepEqual(*init, want) {
		t.Fatalf("init = %+v\nwant %+v", *init, want)
	}
	h, err := c.Hash(ctx, "shop-1")
	if err != nil {
		t.Fatal(err)
	}
	if *h != (client.HashResponse{StableHash: shopInitialHash, FullHash: shopInitialHash, Version: 1}) {
		t.Fatalf("hash = %+v", *h)
	}
	st, err := c.State(ctx, "shop-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	// Number literals keep their form: 34.50 -> 34.5, 300.00 -> 300.0, ints stay ints.
	if got := string(st.Data["customers"]); got != `[{"balance":300.0,"email":"alex@example.com","id":"C-101","name":"Alex Torres"}]` {
		t.Errorf("customers = %s", got)
	}
	if got := string(st.Data["orders"]); got != `[]` {
		t.Errorf("orders = %s", got)
	}
	if !strings.Contains(string(st.Data["products"]), `"price":34.5,"stock":15`) {
		t.Errorf("products = %s", st.Data["products"])
	}
	if st.Version != 1 || st.FullHash != shopInitialHash || st.StableHash != shopInitialHash {
		t.Errorf("state meta = %d %s %s", st.Version, st.FullHash, st.StableHash)
	}
	if _, err := c.Init(ctx, "shop-1", client.InitRequest{Tables: tablesOf(t, `{"x":[]}`)}); !errors.Is(err, client.ErrTrialAlreadyExists) {
		t.Fatalf("second init: %v, want ErrTrialAlreadyExists", err)
	}
	var apiErr *client.APIError
	_, err = c.Init(ctx, "shop-1", client.InitRequest{Tables: tablesOf(t, `{"x":[]}`)})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 409 || apiErr.Type != "TrialAlreadyExists" ||
		apiErr.Message != `trial "shop-1" already exists; delete it before initializing it again` {
		t.Fatalf("second init error = %#v", apiErr)
	}
	// The failed init left the trial alone.
	if h2, _ := c.Hash(ctx, "shop-1"); *h2 != *h {
		t.Fatalf("hash after rejected init = %+v", *h2)
	}
}

// The golden path of shop_orders_02 (spec: shop-domain.md) lands on the documented digest.
func TestShopGoldenPathDigest(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, Options{})
	if _, err := c.Init(ctx, "g", client.InitRequest{Tables: tablesOf(t, string(shopState(t)))}); err != nil {
		t.Fatal(err)
	}
	patch := func(table string, ops ...client.Operation) {
		t.Helper()
		if _, err := c.Patch(ctx, "g", table, client.PatchRequest{Operations: ops}); err != nil {
			t.Fatal(err)
		}
	}
	patch("orders", client.Insert(json.RawMessage(`{"id":"O-001","customer_id":"C-101","status":"pending","items":[{"product_id":"P-001","quantity":1,"unit_price":89.99},{"product_id":"P-002","quantity":2,"unit_price":34.5}],"total":158.99}`)))
	patch("products",
		client.Update(json.RawMessage(`{"id":"P-001"}`), json.RawMessage(`{"stock":41}`)),
		client.Update(json.RawMessage(`{"id":"P-002"}`), json.RawMessage(`{"stock":13}`)))
	patch("customers", client.Update(json.RawMessage(`{"id":"C-101"}`), json.RawMessage(`{"balance":141.01}`)))
	patch("orders", client.Update(json.RawMessage(`{"id":"O-001"}`), json.RawMessage(`{"status":"paid"}`)))
	h, err := c.Hash(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	const golden = "4c8b535f7c229f6c10058392e478c0ea0196a644ce9410f58375842be6681c2b"
	if h.StableHash != golden || h.Version != 5 {
		t.Fatalf("golden hash = %s at version %d, want %s at 5", h.StableHash, h.Version, golden)
	}
}

func TestStateTableFilter(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, Options{})
	if _, err := c.Init(ctx, "f", client.InitRequest{Tables: tablesOf(t, string(shopState(t)))}); err != nil {
		t.Fatal(err)
	}
	st, err := c.State(ctx, "f", []string{"orders", "customers", "orders"})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Data) != 2 || st.Data["orders"] == nil || st.Data["customers"] == nil {
		t.Fatalf("filtered data has tables %v", reflect.ValueOf(st.Data).MapKeys())
	}
	if st.FullHash != shopInitialHash || st.StableHash != shopInitialHash {
		t.Errorf("hashes of a filtered read must cover every table: %s %s", st.FullHash, st.StableHash)
	}
	_, err = c.State(ctx, "f", []string{"orders", "nope"})
	var apiErr *client.APIError
	if !errors.Is(err, client.ErrTableNotFound) || !errors.As(err, &apiErr) ||
		apiErr.Message != `table "nope" not found in trial "f"` || apiErr.Details["table"] != "nope" {
		t.Fatalf("unknown table in filter: %v", err)
	}
	if _, err := c.State(ctx, "missing", nil); !errors.Is(err, client.ErrTrialNotFound) {
		t.Fatalf("unknown trial: %v", err)
	}
}

func TestStableStateFiltersExactTableNames(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, Options{})
	_, err := c.Init(ctx, "s", client.InitRequest{
		Tables: tablesOf(t, `{"orders":[{"id":"O-1","created_at":"t1","n":1},{"id":"O-2","n":2.0}],"order":[{"id":"x","created_at":"t2"}],"sessions":[{"id":"s","created_at":"t3"}]}`),
		UnstableFields: []client.UnstableField{
			{TableName: "orders", FieldName: "created_at", Reason: "timestamp"},
			{TableName: "missing_table", FieldName: "x"},
			{TableName: "orders", FieldName: "created_at", Reason: "repeated"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.StableState(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	// Only "orders" is filtered: no plural/singular or suffix matching of "order" or "sessions".
	want := map[string]string{
		"orders":   `[{"id":"O-1","n":1},{"id":"O-2","n":2.0}]`,
		"order":    `[{"created_at":"t2","id":"x"}]`,
		"sessions": `[{"created_at":"t3","id":"s"}]`,
	}
	for k, v := range want {
		if got := string(st.Data[k]); got != v {
			t.Errorf("stable %s = %s, want %s", k, got, v)
		}
	}
	if !reflect.DeepEqual(st.FilteredFields, []client.FilteredField{{Table: "orders", Field: "created_at"}}) {
		t.Errorf("filtered_fields = %+v", st.FilteredFields)
	}
	h, err := c.Hash(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if h.StableHash != st.StableHash || h.StableHash == h.FullHash {
		t.Errorf("stable %s (state/stable %s) must differ from full %s", h.StableHash, st.StableHash, h.FullHash)
	}
	// Changing only an unstable field leaves the stable hash alone and moves the full one.
	if _, err := c.Patch(ctx, "s", "orders", client.PatchRequest{Operations: []client.Operation{
		client.Update(json.RawMessage(`{"id":"O-1"}`), json.RawMessage(`{"created_at":"later"}`)),
	}}); err != nil {
		t.Fatal(err)
	}
	h2, _ := c.Hash(ctx, "s")
	if h2.StableHash != h.StableHash || h2.FullHash == h.FullHash || h2.Version != 2 {
		t.Errorf("after unstable-only change: %+v, before %+v", *h2, *h)
	}
	sch, err := c.Schema(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	wantUF := []client.UnstableField{{TableName: "orders", FieldName: "created_at", Reason: "timestamp"}, {TableName: "missing_table", FieldName: "x"}}
	if !reflect.DeepEqual(sch.UnstableFields, wantUF) || len(sch.Schemas) != 0 {
		t.Errorf("schema = %+v", *sch)
	}
}

func TestSchemaEndpoint(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, Options{})
	_, err := c.Init(ctx, "sc", client.InitRequest{
		Tables: tablesOf(t, `{"users":[{"uid":1}]}`),
		Schemas: []client.TableSchema{
			{TableName: "users", Fields: json.RawMessage(`{"uid":"int","score":1.50}`), PrimaryKey: "uid"},
			{TableName: "logs"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	sch, err := c.Schema(ctx, "sc")
	if err != nil {
		t.Fatal(err)
	}
	if got := string(sch.Schemas["users"].Fields); got != `{"score":1.5,"uid":"int"}` || sch.Schemas["users"].PrimaryKey != "uid" {
		t.Errorf("users schema = %s %q", got, sch.Schemas["users"].PrimaryKey)
	}
	if got := string(sch.Schemas["logs"].Fields); got != `{}` || sch.Schemas["logs"].PrimaryKey != "" {
		t.Errorf("logs schema = %s %q", got, sch.Schemas["logs"].PrimaryKey)
	}
}

func TestSnapshotsRestoreResetDelete(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, Options{})
	if _, err := c.Init(ctx, "snap", client.InitRequest{Tables: tablesOf(t, string(shopState(t)))}); err != nil {
		t.Fatal(err)
	}
	s1, err := c.Snapshot(ctx, "snap", "before")
	if err != nil {
		t.Fatal(err)
	}
	if *s1 != (client.SnapshotResponse{Status: "ok", SnapshotName: "before", Version: 1, StableHash: shopInitialHash}) {
		t.Fatalf("snapshot = %+v", *s1)
	}
	p, err := c.Patch(ctx, "snap", "customers", client.PatchRequest{Operations: []client.Operation{
		client.Update(json.RawMessage(`{}`), json.RawMessage(`{"balance":0.0}`)),
	}})
	if err != nil || p.Version != 2 || p.AffectedRows != 1 {
		t.Fatalf("patch = %+v, %v", p, err)
	}
	after, _ := c.Hash(ctx, "snap")
	s2, err := c.Snapshot(ctx, "snap", "after")
	if err != nil || s2.StableHash != after.StableHash || s2.Version != 2 || s2.Replaced {
		t.Fatalf("snapshot after = %+v, %v", s2, err)
	}
	r, err := c.Restore(ctx, "snap", "before")
	if err != nil {
		t.Fatal(err)
	}
	if *r != (client.RestoreResponse{Status: "ok", RestoredFrom: "before", Version: 3, SnapshotVersion: 1, StableHash: shopInitialHash}) {
		t.Fatalf("restore = %+v", *r)
	}
	st, _ := c.State(ctx, "snap", []string{"customers"})
	if !strings.Contains(string(st.Data["customers"]), `"balance":300.0`) {
		t.Fatalf("restored customers = %s", st.Data["customers"])
	}
	// Re-creating a name replaces it (re-grading), answered with 200 and replaced=true.
	s3, err := c.Snapshot(ctx, "snap", "after")
	if err != nil || !s3.Replaced || s3.StableHash != shopInitialHash || s3.Version != 3 {
		t.Fatalf("replace snapshot = %+v, %v", s3, err)
	}
	code, body := rawDo(t, "POST", c2url(c, "/trials/snap/snapshots/after"), "")
	if code != 200 || !strings.Contains(body, `"replaced":true`) {
		t.Fatalf("raw replace = %d %s", code, body)
	}
	if _, err := c.Restore(ctx, "snap", "nope"); !errors.Is(err, client.ErrSnapshotNotFound) {
		t.Fatalf("restore unknown: %v", err)
	}
	// Reset returns to the initial state and keeps snapshots.
	if _, err := c.Patch(ctx, "snap", "orders", client.PatchRequest{Operations: []client.Operation{client.Insert(json.RawMessage(`{"id":"O-9"}`))}}); err != nil {
		t.Fatal(err)
	}
	rs, err := c.Reset(ctx, "snap")
	if err != nil || *rs != (client.ResetResponse{Status: "ok", Version: 5, StableHash: shopInitialHash}) {
		t.Fatalf("reset = %+v, %v", rs, err)
	}
	if _, err := c.Restore(ctx, "snap", "before"); err != nil {
		t.Fatalf("snapshot lost by reset: %v", err)
	}
	if err := c.DeleteSnapshot(ctx, "snap", "before"); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteSnapshot(ctx, "snap", "before"); !errors.Is(err, client.ErrSnapshotNotFound) {
		t.Fatalf("second delete snapshot: %v", err)
	}
	if _, err := c.Restore(ctx, "snap", "before"); !errors.Is(err, client.ErrSnapshotNotFound) {
		t.Fatalf("restore deleted snapshot: %v", err)
	}
	// Delete removes the trial; the client treats an unknown trial as already deleted.
	if err := c.Delete(ctx, "snap"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Hash(ctx, "snap"); !errors.Is(err, client.ErrTrialNotFound) {
		t.Fatalf("hash after delete: %v", err)
	}
	if err := c.Delete(ctx, "snap"); err != nil {
		t.Fatalf("client delete of unknown trial: %v", err)
	}
	code, body = rawDo(t, "DELETE", c2url(c, "/trials/snap"), "")
	if code != 404 || !strings.Contains(body, `"error":"TrialNotFound"`) {
		t.Fatalf("raw delete of unknown trial = %d %s", code, body)
	}
	// Re-initialising after delete works (the host re-registers with the same id).
	if _, err := c.Init(ctx, "snap", client.InitRequest{Tables: tablesOf(t, `{"a":[]}`)}); err != nil {
		t.Fatalf("init after delete: %v", err)
	}
}

func TestQuery(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, Options{})
	if _, err := c.Init(ctx, "q", client.InitRequest{
		Tables:         tablesOf(t, `{"orders":[{"id":"O-1","status":"paid","total":158.990,"ts":"a"},{"id":"O-2","status":"pending","total":10}]}`),
		UnstableFields: []client.UnstableField{{TableName: "orders", FieldName: "ts"}},
	}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path    string
		results []string
	}{
		{"$.db.orders[?@.status == 'paid']", []string{`{"id":"O-1","status":"paid","total":158.99,"ts":"a"}`}},
		{"$.db.orders[*].total", []string{"158.99", "10"}},
		{"$.db.orders[?@.total > 100].id", []string{`"O-1"`}},
		{"$.db.orders[?@.total == 10.0].id", []string{`"O-2"`}},
		{"$.db.nothing", []string{}},
		{"$.db.orders.length", []string{}},
	}
	for _, tt := range tests {
		q, err := c.Query(ctx, "q", tt.path)
		if err != nil {
			t.Errorf("query %s: %v", tt.path, err)
			continue
		}
		got := []string{}
		for _, r := range q.Results {
			got = append(got, string(r))
		}
		if !reflect.DeepEqual(got, tt.results) || q.Count != len(tt.results) {
			t.Errorf("query %s = %v (count %d), want %v", tt.path, got, q.Count, tt.results)
		}
	}
	_, err := c.Query(ctx, "q", "$.db[?")
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Type != "ValidationError" ||
		!strings.HasPrefix(apiErr.Message, `$.jsonpath: invalid JSONPath "$.db[?": `) {
		t.Fatalf("bad jsonpath: %v", err)
	}
	code, body := rawDo(t, "POST", c2url(c, "/trials/q/query"), `{"jsonpath":"$.db.orders[0]","stable":true}`)
	if code != 200 || body != `{"results":[{"id":"O-1","status":"paid","total":158.99}],"count":1}` {
		t.Fatalf("stable query = %d %s", code, body)
	}
	qs, err := c.QueryStable(ctx, "q", "$.db.orders[*].ts")
	if err != nil || qs.Count != 0 || len(qs.Results) != 0 {
		t.Fatalf("QueryStable of an unstable field = %+v, %v", qs, err)
	}
	if q, err := c.Query(ctx, "q", "$.db.orders[*].ts"); err != nil || q.Count != 1 || string(q.Results[0]) != `"a"` {
		t.Fatalf("Query of an unstable field = %+v, %v", q, err)
	}
}

func TestHealthAndMetrics(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, Options{})
	h, err := c.Health(ctx)
	if err != nil || *h != (client.HealthResponse{Status: "healthy", Version: serviceVersion, ActiveTrials: 0}) {
		t.Fatalf("health = %+v, %v", h, err)
	}
	if _, err := c.Init(ctx, "m", client.InitRequest{Tables: tablesOf(t, `{"a":[{"id":1}]}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Patch(ctx, "m", "a", client.PatchRequest{Operations: []client.Operation{client.Delete(json.RawMessage(`{}`))}}); err != nil {
		t.Fatal(err)
	}
	h, _ = c.Health(ctx)
	if h.ActiveTrials != 1 {
		t.Fatalf("active_trials = %d", h.ActiveTrials)
	}
	code, body := rawDo(t, "GET", c2url(c, "/metrics"), "")
	for _, want := range []string{
		"dbservice_active_trials 1",
		`dbservice_http_requests_total{code="201",route="POST /trials/{id}/init"} 1`,
		`dbservice_patch_operations_total{op="delete"} 1`,
		"dbservice_state_hash_duration_seconds_count",
	} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("metrics lack %q (status %d)", want, code)
		}
	}
}

func TestUnknownRoute(t *testing.T) {
	c := newClient(t, Options{})
	code, body := rawDo(t, "PUT", c2url(c, "/trials/x/state"), "")
	if code != 404 || body != `{"error":"NotFound","message":"no endpoint PUT /trials/x/state","details":{"method":"PUT","path":"/trials/x/state"}}` {
		t.Fatalf("unknown route = %d %s", code, body)
	}
}

// Table names travel escaped in the PATCH path and come back intact; a name that could
// act as a path step ("a/b", "..") is refused, even escaped (names_test.go has the rest).
func TestOddTableNamesInPath(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, Options{})
	if _, err := c.Init(ctx, "odd", client.InitRequest{}); err != nil {
		t.Fatal(err)
	}
	insert := client.PatchRequest{Operations: []client.Operation{client.Insert(json.RawMessage(`{"id":1}`))}}
	for _, name := range []string{"stable", "hash", "100%", "é 字 😀", "q?x=1#f", "..."} {
		if _, err := c.Patch(ctx, "odd", name, insert); err != nil {
			t.Errorf("patch table %q: %v", name, err)
		}
	}
	for _, name := range []string{"a/b", ".."} {
		if _, err := c.Patch(ctx, "odd", name, insert); !errors.Is(err, client.ErrInvalidRequest) {
			t.Errorf("patch table %q: %v, want a refusal", name, err)
		}
	}
	st, err := c.State(ctx, "odd", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Data) != 6 || string(st.Data["q?x=1#f"]) != `[{"id":1}]` || string(st.Data["é 字 😀"]) != `[{"id":1}]` || st.Data["..."] == nil {
		t.Fatalf("tables = %v", st.Data)
	}
}

func c2url(c *client.Client, path string) string { return c.BaseURL() + path }

func TestTrialIDBoundaries(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, Options{})
	for _, id := range []string{strings.Repeat("a", 253), "A-z_0.9:x", "1"} {
		if _, err := c.Init(ctx, id, client.InitRequest{}); err != nil {
			t.Errorf("init %q: %v", id, err)
		}
		// sha256("{}"): a trial without tables hashes as the empty object.
		const emptyHash = "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
		if h, err := c.Hash(ctx, id); err != nil || h.Version != 1 || h.StableHash != emptyHash || h.FullHash != emptyHash {
			t.Errorf("hash %q: %+v, %v", id, h, err)
		}
	}
	for _, id := range []string{strings.Repeat("a", 254), "a b", "a/b", "é", "a%b"} {
		if _, err := c.Init(ctx, id, client.InitRequest{}); !errors.Is(err, client.ErrInvalidRequest) {
			t.Errorf("init %q: %v, want ErrInvalidRequest", id, err)
		}
	}
}
