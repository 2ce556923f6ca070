package runner_test

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/dbservice"
	dbclient "tolokaforge.io/operator/dbservice/client"
)

// holdProxy forwards TCP to a DB service. While held, the service's answers are kept
// from the runner (the request still reaches the service and lands); release closes
// the held connections, as a service that died after writing would.
type holdProxy struct {
	ln       net.Listener
	target   string
	mu       sync.Mutex
	held     bool
	released chan struct{}
}

func startHoldProxy(t *testing.T, target string) *holdProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &holdProxy{ln: ln, target: target, released: make(chan struct{})}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *holdProxy) url() string { return "http://" + p.ln.Addr().String() }

func (p *holdProxy) hold() {
	p.mu.Lock()
	p.held = true
	p.mu.Unlock()
}

func (p *holdProxy) release() {
	p.mu.Lock()
	p.held = false
	close(p.released)
	p.mu.Unlock()
}

func (p *holdProxy) serve(c net.Conn) {
	defer c.Close()
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer s.Close()
	go func() { _, _ = io.Copy(s, c) }()
	buf := make([]byte, 32<<10)
	for {
		n, err := s.Read(buf)
		if n > 0 {
			p.mu.Lock()
			held, released := p.held, p.released
			p.mu.Unlock()
			if held {
				<-released
				return
			}
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// wantUnavailable checks for UNAVAILABLE naming tool and one of details.
func wantUnavailable(t *testing.T, err error, tool string, details ...string) {
	t.Helper()
	st, ok := status.FromError(err)
	named := false
	for _, d := range details {
		named = named || ok && strings.Contains(st.Message(), d)
	}
	if !ok || st.Code() != codes.Unavailable || !named ||
		!strings.HasPrefix(st.Message(), "DB service unavailable during tool '"+tool+"': ") {
		t.Fatalf("want UNAVAILABLE for %s mentioning one of %q, got %v", tool, details, err)
	}
}

// The DB service's listener is gone mid-trial: a tool call that needs it is an
// infrastructure fault (gRPC UNAVAILABLE), never a tool result for the agent, and it
// is not recorded, so a retry under the same call_id runs it again.
func TestDBUnreachableIsInfraFault(t *testing.T) {
	db := startDB(t)
	h := startRunner(t, db)
	h.mustRegister(t, "tr", baseTask([]any{tool("db_insert"), tool("db_get")}, nil, obj{"items": []any{obj{"id": "a", "n": 1}}}))
	if r := h.exec(t, "tr", call{tool: "db_get", args: `{"table":"items","key":"a"}`, callID: "c0"}); r.GetStatus() != runnerpb.ExecutionStatus_EXECUTION_STATUS_SUCCESS {
		t.Fatalf("db_get before the fault: %v", r)
	}
	db.stop()
	for _, c := range []call{
		{tool: "db_insert", args: `{"table":"items","record":{"id":"b"}}`, callID: "c1"},
		{tool: "db_insert", args: `{"table":"items","record":{"id":"b"}}`, callID: "c1"},
		{tool: "db_get", args: `{"table":"items","key":"zz"}`, callID: "c2"},
	} {
		_, err := h.c.ExecuteTool(ctxT(t), &runnerpb.ExecuteToolRequest{TrialId: "tr", ToolName: c.tool, ArgumentsJson: c.args, CallId: c.callID})
		// A pooled connection to the dead listener reads EOF or a reset; a new one is
		// refused.
		wantUnavailable(t, err, c.tool, "connection refused", ": EOF", "connection reset")
	}
}

// A write whose answer never comes (the service hangs after applying it) ends the
// call as an infrastructure fault once its budget runs out, and the write, which did
// land, is seen by the next read: the read cache was invalidated.
func TestTimedOutWriteInvalidatesReadCache(t *testing.T) {
	db := startDB(t)
	proxy := startHoldProxy(t, strings.TrimPrefix(db.url, "http://"))
	h := startRunner(t, &dbHandle{url: proxy.url(), c: dbclient.New(proxy.url()), stop: db.stop})
	h.mustRegister(t, "tw", baseTask([]any{tool("db_update"), tool("db_get")}, nil, obj{"items": []any{obj{"id": "a", "n": 1}}}))
	get := call{tool: "db_get", args: `{"table":"items","key":"a"}`}
	for i, want := range []string{`{"id":"a","n":1}`, `{"id":"a","n":1}`} {
		get.callID = "g" + string(rune('0'+i))
		if r := h.exec(t, "tw", get); r.GetOutput() != want {
			t.Fatalf("read %d: %v", i, r)
		}
	}
	proxy.hold()
	_, err := h.c.ExecuteTool(ctxT(t), &runnerpb.ExecuteToolRequest{TrialId: "tw", ToolName: "db_update",
		ArgumentsJson: `{"table":"items","filter":{"id":"a"},"set":{"n":2}}`, CallId: "u1", TimeoutSeconds: 0.5})
	wantUnavailable(t, err, "db_update", "no answer within 0.5s")
	proxy.release()
	// The write landed behind the runner's back.
	st, err := db.c.State(ctxT(t), "tw", []string{"items"})
	if err != nil || string(st.Data["items"]) != `[{"id":"a","n":2}]` {
		t.Fatalf("DB after the held write: %v %s", err, st.Data["items"])
	}
	get.callID = "g9"
	if r := h.exec(t, "tw", get); r.GetOutput() != `{"id":"a","n":2}` {
		t.Fatalf("read after a timed-out write that landed returned the cached row: %v", r)
	}
}

// The MCP server's copy of the tables is stale after a write that timed out but
// landed: the next MCP call reloads it from the DB first, so its write-back builds on
// the landed write instead of undoing it.
func TestTimedOutWriteMarksMCPMirrorStale(t *testing.T) {
	db := startDB(t)
	proxy := startHoldProxy(t, strings.TrimPrefix(db.url, "http://"))
	h := startRunner(t, &dbHandle{url: proxy.url(), c: dbclient.New(proxy.url()), stop: db.stop})
	h.mustRegister(t, "tm", baseTask([]any{tool("db_update"), testkitTool("incr", nil)}, nil, obj{"counters": []any{obj{"id": "x", "n": 1}}}))
	if r := h.exec(t, "tm", call{tool: "incr", args: `{"key":"x"}`, callID: "i1"}); r.GetStatus() != runnerpb.ExecutionStatus_EXECUTION_STATUS_SUCCESS {
		t.Fatalf("first incr: %v", r)
	}
	proxy.hold()
	_, err := h.c.ExecuteTool(ctxT(t), &runnerpb.ExecuteToolRequest{TrialId: "tm", ToolName: "db_update",
		ArgumentsJson: `{"table":"counters","filter":{"id":"x"},"set":{"n":10}}`, CallId: "u1", TimeoutSeconds: 0.5})
	wantUnavailable(t, err, "db_update", "no answer within 0.5s")
	proxy.release()
	if r := h.exec(t, "tm", call{tool: "incr", args: `{"key":"x"}`, callID: "i2"}); r.GetStatus() != runnerpb.ExecutionStatus_EXECUTION_STATUS_SUCCESS {
		t.Fatalf("incr after the held write: %v", r)
	}
	st, err := db.c.State(ctxT(t), "tm", []string{"counters"})
	if err != nil || string(st.Data["counters"]) != `[{"id":"x","n":11}]` {
		t.Fatalf("counters after incr over a landed write: %v %s (the MCP write-back undid the write)", err, st.Data["counters"])
	}
}

// A DB service that cannot be reached at registration is an infrastructure
// fault told as UNAVAILABLE, like a tool call's; the host retries the attempt
// instead of ending the trial Invalid. A DB service that answers and refuses
// the state stays the spec's in-band refusal, and neither leaves the trial
// registered.
func TestRegistrationWithTheDBServiceDown(t *testing.T) {
	db := startDB(t)
	h := startRunner(t, db, withDBConnectWait(300*time.Millisecond))
	db.stop()
	_, err := h.c.RegisterTrial(ctxT(t), &runnerpb.RegisterTrialRequest{TrialId: "down",
		TrialSpecJson: specJSON(t, "down", baseTask([]any{tool("db_get")}, nil, obj{"items": []any{obj{"id": "a"}}})), EngineProtocolVersion: task.EngineProtocolVersion})
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.Unavailable || !strings.HasPrefix(st.Message(), `DB Service initialization failed: init trial "down": `) {
		t.Fatalf("RegisterTrial with the DB service down: %v, want UNAVAILABLE naming the init", err)
	}
	if n := h.srv.ActiveTrials(); n != 0 {
		t.Fatalf("%d trials registered after a failed registration", n)
	}
}

// A DB service the runner cannot connect to yet at registration (Ready, but
// a NetworkPolicy implementation not yet admitting the runner) is waited for:
// the registration goes through once it accepts connections.
func TestRegistrationWaitsToConnectToTheDBService(t *testing.T) {
	addr := freeAddr(t)
	db := &dbHandle{url: "http://" + addr, c: dbclient.New("http://"+addr, dbclient.WithRetries(0))}
	h := startRunner(t, db, withDBConnectWait(10*time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		time.Sleep(500 * time.Millisecond)
		l, err := net.Listen("tcp", addr)
		if err != nil {
			done <- err
			return
		}
		done <- dbservice.New(dbservice.Options{}).Serve(ctx, l)
	}()
	t.Cleanup(func() { cancel(); <-done })
	if _, err := h.c.RegisterTrial(ctxT(t), &runnerpb.RegisterTrialRequest{TrialId: "late",
		TrialSpecJson: specJSON(t, "late", baseTask([]any{tool("db_get")}, nil, obj{"items": []any{obj{"id": "a"}}})), EngineProtocolVersion: task.EngineProtocolVersion}); err != nil {
		t.Fatalf("RegisterTrial while the DB service starts listening: %v", err)
	}
	if n := h.srv.ActiveTrials(); n != 1 {
		t.Fatalf("%d trials registered, want 1", n)
	}
}

// A DB service that restarted empty no longer holds the trial: the tool call
// that meets it is an infrastructure fault (UNAVAILABLE), never a "trial not
// found" tool error for the agent to read, and it is not recorded.
func TestDBServiceRestartedEmptyIsInfraFault(t *testing.T) {
	db := startDB(t)
	h := startRunner(t, db)
	h.mustRegister(t, "re", baseTask([]any{tool("db_insert"), tool("db_get")}, nil, obj{"items": []any{obj{"id": "a", "n": 1}}}))
	if err := db.c.Delete(ctxT(t), "re"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []call{
		{tool: "db_insert", args: `{"table":"items","record":{"id":"b"}}`, callID: "c1"},
		{tool: "db_get", args: `{"table":"items","key":"zz"}`, callID: "c2"},
	} {
		_, err := h.c.ExecuteTool(ctxT(t), &runnerpb.ExecuteToolRequest{TrialId: "re", ToolName: c.tool, ArgumentsJson: c.args, CallId: c.callID})
		wantUnavailable(t, err, c.tool, `"re" not found`)
	}
}
