package dbservice

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"tolokaforge.io/operator/dbservice/client"
)

var afterN = regexp.MustCompile(`after \d+ of them`)

type trialView struct {
	version      int64
	full, stable string
	data         string
}

func viewOf(t *testing.T, c *client.Client, id string) trialView {
	t.Helper()
	st, err := c.State(context.Background(), id, nil)
	if err != nil {
		t.Fatal(err)
	}
	return trialView{version: st.Version, full: st.FullHash, stable: st.StableHash, data: dataCanon(t, st.Data)}
}

type wireError struct {
	Error   string         `json:"error"`
	Message string         `json:"message"`
	Details map[string]any `json:"details"`
}

func decodeWireError(t *testing.T, body string) wireError {
	t.Helper()
	var e wireError
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("error body %q: %v", body, err)
	}
	return e
}

func rows(n int, pad string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf(`{"id":%d,"p":"%s"}`, i, pad)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// Every per-request and per-trial limit refuses with its status, its type, a message
// naming the limit and its value, and leaves the trial's state, version and hashes as
// they were.
func TestLimitsRefuseAndChangeNothing(t *testing.T) {
	ctx := context.Background()
	limits := Limits{
		MaxNumberDigits:       20,
		MaxOpsPerPatch:        3,
		MaxQueryResponseBytes: 600,
		MaxTablesPerTrial:     3,
		MaxRecordsPerTrial:    20,
		MaxTrialBytes:         1000,
		MaxSnapshotsPerTrial:  1,
	}
	_, base := startServer(t, Options{Limits: limits})
	c := client.New(base)
	if _, err := c.Init(ctx, "b", client.InitRequest{
		Tables: tablesOf(t, `{"t":`+rows(18, "x")+`,"u":[],"v":[]}`),
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Snapshot(ctx, "b", "s1"); err != nil {
		t.Fatal(err)
	}
	digits21 := strings.Repeat("7", 21)
	tests := []struct {
		name, method, path, body string
		status                   int
		errType, limit, msg      string
	}{
		{"init number digits", "POST", "/trials/new/init", `{"tables":{"t":[{"n":` + digits21 + `}]}}`, 400, "InvalidJSON", "max_number_digits",
			"invalid JSON at offset 21: number literal has 21 digits, more than the limit of 20 (max_number_digits)"},
		{"patch number digits", "PATCH", "/trials/b/state/t", `{"operations":[{"op":"insert","record":{"id":-0.` + digits21 + `}}]}`, 400, "InvalidJSON", "max_number_digits",
			"invalid JSON at offset 45: number literal has 22 digits, more than the limit of 20 (max_number_digits)"},
		{"query number digits", "POST", "/trials/b/query", `{"jsonpath":"$","stable":` + digits21 + `}`, 400, "InvalidJSON", "max_number_digits",
			"invalid JSON at offset 25: number literal has 21 digits, more than the limit of 20 (max_number_digits)"},
		{"patch operations", "PATCH", "/trials/b/state/t", `{"operations":[{"op":"delete","filter":{}},{"op":"delete","filter":{}},{"op":"delete","filter":{}},{"op":"delete","filter":{}}]}`,
			413, "PayloadTooLarge", "max_operations_per_patch",
			"$.operations holds 4 operations, more than allowed; split the PATCH (limit max_operations_per_patch=3)"},
		{"init tables", "POST", "/trials/new/init", `{"tables":{"a":[],"b":[],"c":[],"d":[]}}`, 422, "LimitExceeded", "max_tables_per_trial",
			"the trial would hold 4 tables, more than allowed (limit max_tables_per_trial=3)"},
		{"init records", "POST", "/trials/new/init", `{"tables":{"a":` + rows(21, "") + `}}`, 422, "LimitExceeded", "max_records_per_trial",
			"the trial would hold 21 records, more than allowed (limit max_records_per_trial=20)"},
		{"init bytes", "POST", "/trials/new/init", `{"tables":{"a":[{"p":"` + strings.Repeat("z", 1000) + `"}]}}`, 422, "LimitExceeded", "max_trial_bytes",
			"the trial would hold 1008 bytes of records, more than allowed (limit max_trial_bytes=1000)"},
		{"patch new table over tables", "PATCH", "/trials/b/state/w", `{"operations":[{"op":"insert","record":{"id":1}}]}`, 422, "LimitExceeded", "max_tables_per_trial",
			"the trial would hold 4 tables, more than allowed (limit max_tables_per_trial=3)"},
		{"patch inserts over records", "PATCH", "/trials/b/state/u", `{"operations":[{"op":"insert","record":{"id":1}},{"op":"insert","record":{"id":2}},{"op":"insert","record":{"id":3}}]}`,
			422, "LimitExceeded", "max_records_per_trial",
			"the trial would hold 21 records, more than allowed (limit max_records_per_trial=20)"},
		{"patch update over bytes", "PATCH", "/trials/b/state/t", `{"operations":[{"op":"update","filter":{"id":3},"set":{"p":"` + strings.Repeat("q", 800) + `"}}]}`,
			422, "LimitExceeded", "max_trial_bytes",
			"the trial would hold 1095 bytes of records, more than allowed (limit max_trial_bytes=1000)"},
		{"query response", "POST", "/trials/b/query", `{"jsonpath":"$..*"}`, 422, "LimitExceeded", "max_query_response_bytes",
			`the results of "$..*" (58 nodes) exceed the response size limit after # of them; narrow the JSONPath (limit max_query_response_bytes=600)`},
		{"snapshots", "POST", "/trials/b/snapshots/s2", "", 422, "LimitExceeded", "max_snapshots_per_trial",
			`trial "b" already holds 1 snapshots; delete one or reuse its name (limit max_snapshots_per_trial=1)`},
	}
	before := viewOf(t, c, "b")
	for _, tt := range tests {
		code, body := rawDo(t, tt.method, base+tt.path, tt.body)
		e := decodeWireError(t, body)
		// JSONPath visits object members in no set order, so where $..* crosses the
		// cap varies.
		e.Message = afterN.ReplaceAllString(e.Message, "after # of them")
		if code != tt.status || e.Error != tt.errType || e.Message != tt.msg || e.Details["limit"] != tt.limit || e.Details["limit_value"] == nil {
			t.Errorf("%s: got %d %s\nwant %d %s %q (details.limit %s)", tt.name, code, body, tt.status, tt.errType, tt.msg, tt.limit)
		}
		if got := viewOf(t, c, "b"); got != before {
			t.Fatalf("%s changed the trial: %+v -> %+v", tt.name, before, got)
		}
		if _, err := c.Hash(ctx, "new"); !errors.Is(err, client.ErrTrialNotFound) {
			t.Fatalf("%s created trial \"new\": %v", tt.name, err)
		}
	}
	// At the limits themselves everything is accepted.
	if _, err := c.Query(ctx, "b", "$.db.t[?@.id < 3]"); err != nil {
		t.Fatalf("small query: %v", err)
	}
	if _, err := c.Patch(ctx, "b", "u", client.PatchRequest{Operations: []client.Operation{
		client.Insert(json.RawMessage(`{"id":1}`)), client.Insert(json.RawMessage(`{"n":-0.` + digits21[2:] + `}`)),
	}}); err != nil {
		t.Fatalf("patch at the record and digit limits: %v", err)
	}
	// The client maps the refusals to its sentinels.
	_, err := c.Query(ctx, "b", "$..*")
	if !errors.Is(err, client.ErrLimitExceeded) || !errors.Is(err, client.ErrInvalidRequest) {
		t.Fatalf("query over the limit: %v", err)
	}
}

// The 4-million-digit literal that used to cost 34 s of CPU is refused by the default
// limit as it is scanned, before any conversion.
func TestHugeNumberRefusedByDefault(t *testing.T) {
	_, base := startServer(t, Options{})
	body := `{"tables":{"t":[{"n":` + strings.Repeat("9", 4_000_000) + `}]}}`
	code, resp := rawDo(t, "POST", base+"/trials/h/init", body)
	e := decodeWireError(t, resp)
	if code != 400 || e.Error != "InvalidJSON" || e.Details["limit"] != "max_number_digits" || e.Details["limit_value"] != float64(4300) ||
		e.Message != "invalid JSON at offset 21: number literal has 4000000 digits, more than the limit of 4300 (max_number_digits)" {
		t.Fatalf("4M digits: %d %s", code, resp)
	}
	if code, _ := rawDo(t, "GET", base+"/trials/h/state/hash", ""); code != 404 {
		t.Fatalf("refused init created the trial: %d", code)
	}
}

// The process-wide limits: trials per process and bytes accounted to all trials. A
// refused init or PATCH changes nothing; deleting a trial frees its share.
func TestProcessLimits(t *testing.T) {
	ctx := context.Background()
	_, base := startServer(t, Options{Limits: Limits{MaxTrials: 2, MaxTotalBytes: 400}})
	c := client.New(base)
	init := func(id, tables string) error {
		_, err := c.Init(ctx, id, client.InitRequest{Tables: tablesOf(t, tables)})
		return err
	}
	if err := init("a", `{"t":`+rows(4, "aaaaaaaaaa")+`}`); err != nil { // 4 x 25 bytes
		t.Fatal(err)
	}
	err := init("b", `{"t":`+rows(12, "bbbbbbbbbb")+`}`) // 10 x 25 + 2 x 26 = 302
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 507 || apiErr.Type != "LimitExceeded" ||
		apiErr.Message != "the trials of this service would hold 402 bytes together, more than allowed (limit max_total_bytes=400)" ||
		!errors.Is(err, client.ErrLimitExceeded) || errors.Is(err, client.ErrInvalidRequest) {
		t.Fatalf("init over the process bytes: %v", err)
	}
	if err := init("b", `{"t":[]}`); err != nil {
		t.Fatal(err)
	}
	err = init("c", `{"t":[]}`)
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 507 ||
		apiErr.Message != "the service already holds 2 trials; delete finished trials first (limit max_trials=2)" {
		t.Fatalf("third trial: %v", err)
	}
	// A PATCH of b that would cross the total is refused and b stays as it was.
	beforeB := viewOf(t, c, "b")
	var ops []client.Operation
	for i := range 12 {
		ops = append(ops, client.Insert(json.RawMessage(fmt.Sprintf(`{"id":%d,"p":"bbbbbbbbbb"}`, i))))
	}
	_, err = c.Patch(ctx, "b", "t", client.PatchRequest{Operations: ops})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 507 ||
		apiErr.Message != "the trials of this service would hold 402 bytes together, more than allowed (limit max_total_bytes=400)" {
		t.Fatalf("patch over the process bytes: %v", err)
	}
	if got := viewOf(t, c, "b"); got != beforeB {
		t.Fatalf("refused patch changed b: %+v -> %+v", beforeB, got)
	}
	if _, err := c.Patch(ctx, "b", "t", client.PatchRequest{Operations: ops[:10]}); err != nil { // 350 in all
		t.Fatalf("patch within the process bytes: %v", err)
	}
	// A snapshot pins its state. A delete, which shrinks the current state, is never
	// refused; an insert is, while the snapshot holds the old records too
	// (100 + 250 + 225 + 8 > 400).
	if _, err := c.Snapshot(ctx, "b", "full"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Patch(ctx, "b", "t", client.PatchRequest{Operations: []client.Operation{client.Delete(json.RawMessage(`{"id":0}`))}}); err != nil {
		t.Fatalf("delete with a pinned snapshot: %v", err)
	}
	insert := client.PatchRequest{Operations: []client.Operation{client.Insert(json.RawMessage(`{"id":0}`))}}
	if _, err := c.Patch(ctx, "b", "t", insert); !errors.Is(err, client.ErrLimitExceeded) {
		t.Fatalf("insert with a pinned snapshot: %v", err)
	}
	if err := c.DeleteSnapshot(ctx, "b", "full"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Patch(ctx, "b", "t", insert); err != nil { // 100 + 233
		t.Fatalf("insert after dropping the snapshot: %v", err)
	}
	if err := init("c", `{"t":[]}`); !errors.Is(err, client.ErrLimitExceeded) {
		t.Fatalf("third trial: %v", err)
	}
	if err := c.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := init("c", `{"t":`+rows(6, "cccccccccc")+`}`); err != nil { // 233 + 150
		t.Fatalf("init after a delete freed room: %v", err)
	}
}

// A client that sends headers and part of its body, then stalls, gets 408 naming the
// timeout once it has passed, over real loopback, and the connection is closed; the
// trial is unchanged.
func TestStalledBodyTimesOut(t *testing.T) {
	const timeout = 300 * time.Millisecond
	_, base := startServer(t, Options{Limits: Limits{BodyReadTimeout: timeout}})
	c := client.New(base)
	ctx := context.Background()
	if _, err := c.Init(ctx, "s", client.InitRequest{Tables: tablesOf(t, `{"t":[{"id":1}]}`)}); err != nil {
		t.Fatal(err)
	}
	before := viewOf(t, c, "s")
	for _, tc := range []struct{ name, head, part string }{
		{"content-length", "PATCH /trials/s/state/t HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n", `{"operations":[{"op":"ins`},
		{"chunked", "PATCH /trials/s/state/t HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", "10\r\n{\"operations\":[{\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			start := time.Now()
			if _, err := io.WriteString(conn, tc.head+tc.part); err != nil {
				t.Fatal(err)
			}
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no response to a stalled body: %v", err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if elapsed := time.Since(start); elapsed < timeout {
				t.Fatalf("answered after %s, before the %s timeout", elapsed, timeout)
			}
			e := decodeWireError(t, string(b))
			if resp.StatusCode != 408 || e.Error != "RequestTimeout" || e.Details["limit"] != "body_read_timeout_ms" ||
				!strings.HasPrefix(e.Message, "the request body did not arrive within 300ms (") ||
				!strings.HasSuffix(e.Message, "(limit body_read_timeout_ms=300)") {
				t.Fatalf("stalled body: %d %s", resp.StatusCode, b)
			}
			// The server gave the connection up.
			if _, err := conn.Read(make([]byte, 1)); err == nil {
				t.Fatal("connection still open after the timeout")
			}
		})
	}
	if got := viewOf(t, c, "s"); got != before {
		t.Fatalf("stalled bodies changed the trial: %+v -> %+v", before, got)
	}
}

// $..* over a ~2 MiB state used to serialize ~400 MiB and allocate ~1.7 GB before
// answering; now serialization stops at the response limit.
func TestQueryResponseLimitStopsEarly(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, Options{Limits: Limits{MaxQueryResponseBytes: 4 << 20}})
	var sb strings.Builder
	sb.WriteString(`{"t":[`)
	for i := range 8000 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"id":%d,"a":{"b":{"c":{"d":[1,2,{"e":"%s"}]}}}}`, i, strings.Repeat("v", 200))
	}
	sb.WriteString(`]}`)
	if _, err := c.Init(ctx, "q", client.InitRequest{Tables: tablesOf(t, sb.String())}); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := c.Query(ctx, "q", "$..*")
	runtime.ReadMemStats(&after)
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 422 || apiErr.Details["limit"] != "max_query_response_bytes" {
		t.Fatalf("$..* over 2 MiB: %v", err)
	}
	// The any-tree of the state and the node list are a few tens of MiB; the old path
	// allocated well over a GiB here.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 256<<20 {
		t.Fatalf("refusing $..* allocated %d MiB", alloc>>20)
	}
}
