package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tolokaforge.io/operator/dbservice"
	"tolokaforge.io/operator/dbservice/client"
)

// faults wraps the real DB service handler and fails the first n requests of a method,
// either with a 503 or by dropping the connection, to exercise retries.
type faults struct {
	next   http.Handler
	mu     sync.Mutex
	fail   map[string]int // method -> failures left
	drop   bool
	counts map[string]int
}

func (f *faults) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.counts[r.Method]++
	failNow := f.fail[r.Method] > 0
	if failNow {
		f.fail[r.Method]--
	}
	drop := f.drop
	f.mu.Unlock()
	if failNow {
		if drop {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				_ = conn.Close()
				return
			}
		}
		http.Error(w, "injected outage", http.StatusServiceUnavailable)
		return
	}
	f.next.ServeHTTP(w, r)
}

func (f *faults) count(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[method]
}

func (f *faults) set(method string, n int, drop bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[method] = n
	f.drop = drop
	f.counts = map[string]int{}
}

func serve(t *testing.T) (string, *faults) {
	t.Helper()
	f := &faults{next: dbservice.New(dbservice.Options{}).Handler(), fail: map[string]int{}, counts: map[string]int{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: f}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return "http://" + ln.Addr().String(), f
}

func newTestClient(base string, retries int) *client.Client {
	return client.New(base, client.WithRetries(retries), client.WithBackoff(time.Millisecond),
		client.WithHTTPClient(&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}))
}

func TestRetriesOnlyIdempotentReads(t *testing.T) {
	ctx := context.Background()
	base, f := serve(t)
	c := newTestClient(base, 2)
	if _, err := c.Init(ctx, "r", client.InitRequest{Tables: map[string]json.RawMessage{"t": json.RawMessage(`[{"id":1}]`)}}); err != nil {
		t.Fatal(err)
	}
	for _, drop := range []bool{false, true} {
		// Two failures then success: a GET with 2 retries gets through on the 3rd try.
		f.set("GET", 2, drop)
		h, err := c.Hash(ctx, "r")
		if err != nil || h.Version != 1 {
			t.Fatalf("drop=%v: GET after 2 failures: %+v, %v", drop, h, err)
		}
		if n := f.count("GET"); n != 3 {
			t.Fatalf("drop=%v: GET attempts = %d, want 3", drop, n)
		}
		// Three failures exhaust the retries.
		f.set("GET", 3, drop)
		if _, err := c.Hash(ctx, "r"); err == nil {
			t.Fatalf("drop=%v: GET succeeded through 3 failures", drop)
		}
		if n := f.count("GET"); n != 3 {
			t.Fatalf("drop=%v: GET attempts = %d, want 3", drop, n)
		}
		// Writes are never retried, not even after a 503 or a dropped connection.
		for _, method := range []string{"PATCH", "POST", "DELETE"} {
			f.set(method, 1, drop)
			var err error
			switch method {
			case "PATCH":
				_, err = c.Patch(ctx, "r", "t", client.PatchRequest{Operations: []client.Operation{client.Insert(json.RawMessage(`{"id":2}`))}})
			case "POST":
				_, err = c.Snapshot(ctx, "r", "s")
			case "DELETE":
				err = c.DeleteSnapshot(ctx, "r", "s")
			}
			if err == nil {
				t.Fatalf("drop=%v: %s succeeded through an injected failure", drop, method)
			}
			if n := f.count(method); n != 1 {
				t.Fatalf("drop=%v: %s attempts = %d, want 1", drop, method, n)
			}
		}
	}
	var apiErr *client.APIError
	f.set("GET", 1, false)
	_, err := newTestClient(base, 0).Hash(ctx, "r")
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 || apiErr.Type != "Service Unavailable" || apiErr.Message != "injected outage" {
		t.Fatalf("non-JSON 503 = %#v", err)
	}
	h, _ := c.Hash(ctx, "r")
	if h.Version != 1 {
		t.Fatalf("a failed write changed the trial: version %d", h.Version)
	}
}

func TestContextDeadline(t *testing.T) {
	blocked := make(chan struct{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-blocked:
		case <-r.Context().Done():
		}
	})}
	go func() { _ = hs.Serve(ln) }()
	defer func() { close(blocked); _ = hs.Close() }()
	c := client.New("http://"+ln.Addr().String(), client.WithRetries(5), client.WithBackoff(time.Hour))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = c.Hash(ctx, "x")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Hash past its deadline = %v, want DeadlineExceeded", err)
	}
}

func TestErrorMapping(t *testing.T) {
	ctx := context.Background()
	base, _ := serve(t)
	c := newTestClient(base, 0)
	if _, err := c.Init(ctx, "e", client.InitRequest{
		Tables:  map[string]json.RawMessage{"t": json.RawMessage(`[{"id":1}]`)},
		Schemas: []client.TableSchema{{TableName: "t", PrimaryKey: "id"}},
	}); err != nil {
		t.Fatal(err)
	}
	one := []client.Operation{client.Insert(json.RawMessage(`{"id":1}`))}
	tests := []struct {
		name string
		call func() error
		want error
	}{
		{"trial", func() error { _, err := c.Hash(ctx, "nope"); return err }, client.ErrTrialNotFound},
		{"table", func() error { _, err := c.State(ctx, "e", []string{"zz"}); return err }, client.ErrTableNotFound},
		{"snapshot", func() error { _, err := c.Restore(ctx, "e", "zz"); return err }, client.ErrSnapshotNotFound},
		{"exists", func() error {
			_, err := c.Init(ctx, "e", client.InitRequest{Tables: map[string]json.RawMessage{}})
			return err
		}, client.ErrTrialAlreadyExists},
		{"version", func() error {
			v := int64(9)
			_, err := c.Patch(ctx, "e", "t", client.PatchRequest{Operations: one, IfVersion: &v})
			return err
		}, client.ErrVersionMismatch},
		{"duplicate", func() error { _, err := c.Patch(ctx, "e", "t", client.PatchRequest{Operations: one}); return err }, client.ErrDuplicateKey},
		{"invalid op", func() error {
			_, err := c.Patch(ctx, "e", "t", client.PatchRequest{Operations: []client.Operation{{Op: "merge"}}})
			return err
		}, client.ErrInvalidRequest},
		{"invalid id", func() error { _, err := c.Hash(ctx, "bad id"); return err }, client.ErrInvalidRequest},
		{"empty id", func() error { _, err := c.Hash(ctx, ""); return err }, client.ErrInvalidRequest},
		{"bad jsonpath", func() error { _, err := c.Query(ctx, "e", "$["); return err }, client.ErrInvalidRequest},
	}
	sentinels := []error{client.ErrTrialNotFound, client.ErrTableNotFound, client.ErrSnapshotNotFound, client.ErrTrialAlreadyExists,
		client.ErrVersionMismatch, client.ErrDuplicateKey, client.ErrInvalidRequest}
	for _, tt := range tests {
		err := tt.call()
		for _, s := range sentinels {
			if errors.Is(err, s) != (s == tt.want) {
				t.Errorf("%s: errors.Is(%v, %v) = %v", tt.name, err, s, errors.Is(err, s))
			}
		}
	}
	_, err := c.Hash(ctx, "nope")
	if got := err.Error(); got != `get hash of trial "nope": dbservice: 404 TrialNotFound: trial "nope" not found` {
		t.Errorf("error text = %q", got)
	}
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.Details["trial_id"] != "nope" {
		t.Errorf("details = %#v", apiErr)
	}
	if err := c.Delete(ctx, "nope"); err != nil {
		t.Errorf("Delete of an unknown trial = %v, want nil", err)
	}
}

// The upstream Python service wraps errors in FastAPI's {"detail": {...}}.
func TestUpstreamErrorShape(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(409)
		_, _ = w.Write([]byte(`{"detail":{"error":"ETagMismatch","message":"etag differs","details":{}}}`))
	})}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	c := client.New("http://" + ln.Addr().String())
	_, err = c.Patch(context.Background(), "x", "t", client.PatchRequest{Operations: []client.Operation{client.Delete(json.RawMessage(`{}`))}})
	var apiErr *client.APIError
	if !errors.Is(err, client.ErrVersionMismatch) || !errors.As(err, &apiErr) || apiErr.Message != "etag differs" {
		t.Fatalf("upstream 409 = %v", err)
	}
	if !strings.Contains(err.Error(), "409 ETagMismatch") || calls.Load() != 1 {
		t.Fatalf("error %q after %d calls", err, calls.Load())
	}
}

// Transport failures match ErrUnavailable, answers from the service and the caller's
// own cancellation do not.
func TestUnavailableClassification(t *testing.T) {
	ctx := context.Background()
	// A port nobody listens on: connection refused.
	c := client.New("http://"+freeAddr(t), client.WithRetries(0))
	_, err := c.Patch(ctx, "x", "t", client.PatchRequest{Operations: []client.Operation{client.Delete(json.RawMessage(`{}`))}})
	if !errors.Is(err, client.ErrUnavailable) || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("refused connection: %v", err)
	}
	// A server that accepts and closes mid-request: reset / EOF.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 1024)
			_, _ = conn.Read(buf)
			_, _ = conn.Write([]byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"status\":\"ok\",\"ver"))
			conn.Close()
		}
	}()
	c = client.New("http://"+ln.Addr().String(), client.WithRetries(0))
	_, err = c.Patch(ctx, "x", "t", client.PatchRequest{Operations: []client.Operation{client.Delete(json.RawMessage(`{}`))}})
	if !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("response cut short: %v", err)
	}
	// The caller's deadline is the caller's, not the service's fault.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err = c.Hash(cctx, "x"); err == nil || errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("cancelled call: %v", err)
	}
	// An answer is never unavailable.
	_, base := func() (*dbservice.Server, string) {
		srv := dbservice.New(dbservice.Options{})
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		sctx, scancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- srv.Serve(sctx, l) }()
		t.Cleanup(func() { scancel(); <-done })
		return srv, "http://" + l.Addr().String()
	}()
	if _, err := client.New(base).Hash(ctx, "nope"); !errors.Is(err, client.ErrTrialNotFound) || errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("404: %v", err)
	}
}

// TestDialWaitRetriesWritesNeverSent: a write whose connection was refused
// never reached the service, so WithDialWait retries it until the service
// listens (a DB service a NetworkPolicy implementation admits late); without
// it, or once the wait is over, the refusal is the answer.
func TestDialWaitRetriesWritesNeverSent(t *testing.T) {
	ctx := context.Background()
	addr := freeAddr(t)
	req := client.InitRequest{Tables: map[string]json.RawMessage{"t": json.RawMessage(`[{"id":1}]`)}}
	if _, err := client.New("http://"+addr).Init(ctx, "r", req); !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("Init without a dial wait: %v, want refused", err)
	}
	start := time.Now()
	if _, err := client.New("http://"+addr, client.WithDialWait(200*time.Millisecond)).Init(ctx, "r", req); !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("Init after the dial wait: %v, want refused", err)
	}
	if d := time.Since(start); d < 200*time.Millisecond || d > 2*time.Second {
		t.Errorf("gave up after %s, want about 200ms", d)
	}

	srv := dbservice.New(dbservice.Options{})
	sctx, scancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		l, err := net.Listen("tcp", addr)
		if err != nil {
			done <- err
			return
		}
		done <- srv.Serve(sctx, l)
	}()
	t.Cleanup(func() { scancel(); <-done })
	resp, err := client.New("http://"+addr).WaitingToConnect(10*time.Second).Init(ctx, "r", req)
	if err != nil {
		t.Fatalf("Init once the service listens: %v", err)
	}
	if resp == nil {
		t.Fatal("no init response")
	}
}

// freeAddr is a loopback address nobody listens on (a port the kernel handed
// out and took back): a dial there is refused until someone listens on it.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
