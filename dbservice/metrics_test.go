package dbservice

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"tolokaforge.io/operator/dbservice/client"
)

// TestStateBytesGauge: dbservice_state_bytes, scraped over HTTP, follows
// the canonical bytes the trials hold through init, a refused init, patch,
// snapshot and delete; requests are counted by route and code.
func TestStateBytesGauge(t *testing.T) {
	ctx := context.Background()
	_, base := startServer(t, Options{Limits: Limits{MaxTrials: 4, MaxTotalBytes: 1000}})
	c := client.New(base)
	scrape := func() string {
		t.Helper()
		code, body := rawDo(t, "GET", base+"/metrics", "")
		if code != 200 {
			t.Fatalf("scrape answered %d", code)
		}
		return body
	}
	gauge := func(step string, want int) {
		t.Helper()
		line := fmt.Sprintf("dbservice_state_bytes %d\n", want)
		if body := scrape(); !strings.Contains(body, line) {
			i := strings.Index(body, "dbservice_state_bytes ")
			t.Errorf("after %s: want %q, scrape has %q", step, strings.TrimSpace(line), body[i:i+min(40, len(body)-i)])
		}
	}
	init := func(id, tables string) error {
		_, err := c.Init(ctx, id, client.InitRequest{Tables: tablesOf(t, tables)})
		return err
	}
	gauge("nothing", 0)
	if err := init("a", `{"t":`+rows(4, "aaaaaaaaaa")+`}`); err != nil { // 4 x 25 bytes
		t.Fatal(err)
	}
	gauge("init a", 100)
	if err := init("big", `{"t":`+rows(40, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbb")+`}`); err == nil {
		t.Fatal("an init over max_total_bytes was accepted")
	}
	gauge("a refused init", 100)
	if _, err := c.Patch(ctx, "a", "t", client.PatchRequest{Operations: []client.Operation{
		client.Insert(json.RawMessage(`{"id":9,"p":"aaaaaaaaaa"}`))}}); err != nil {
		t.Fatal(err)
	}
	// The initial state stays pinned beside the new current one: 100 + 125.
	gauge("an insert", 225)
	if _, err := c.Snapshot(ctx, "a", "s"); err != nil {
		t.Fatal(err)
	}
	gauge("a snapshot of the current state", 225)
	if err := c.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	gauge("delete", 0)

	body := scrape()
	for _, want := range []string{
		`dbservice_http_requests_total{code="201",route="POST /trials/{id}/init"} 1`,
		`dbservice_http_requests_total{code="507",route="POST /trials/{id}/init"} 1`,
		`dbservice_http_requests_total{code="200",route="PATCH /trials/{id}/state/{table}"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}
