package dbservice

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tolokaforge.io/operator/api/canonical"
	"tolokaforge.io/operator/dbservice/client"
)

// startServer serves a new Server on a loopback port for the test's lifetime.
func startServer(t testing.TB, opts Options) (*Server, string) {
	t.Helper()
	srv := New(opts)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return srv, "http://" + ln.Addr().String()
}

func newClient(t testing.TB, opts Options) *client.Client {
	t.Helper()
	_, base := startServer(t, opts)
	return client.New(base)
}

func shopState(t testing.TB) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "api", "canonical", "testdata", "shop_orders_02_initial_state.json"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// tablesOf splits a {"table": [...]} document into InitRequest.Tables.
func tablesOf(t testing.TB, doc string) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatalf("tables %s: %v", doc, err)
	}
	return m
}

// rawDo sends a raw request and returns status and body.
func rawDo(t testing.TB, method, url, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// canon re-encodes a JSON document canonically, for order-insensitive comparisons that
// still see number forms.
func canon(t testing.TB, raw []byte) string {
	t.Helper()
	b, err := canonical.Canonicalize(raw)
	if err != nil {
		t.Fatalf("canonicalize %s: %v", raw, err)
	}
	return string(b)
}

// dataCanon renders a response's data map as one canonical document.
func dataCanon(t testing.TB, data map[string]json.RawMessage) string {
	t.Helper()
	b, err := json.Marshal(data)
	if err != nil {
		t.Fatal(err)
	}
	return canon(t, b)
}

func ptr[T any](v T) *T { return &v }

// testLimits are the defaults, for tests that call the decoders and trials directly.
var testLimits = defaultLimits
