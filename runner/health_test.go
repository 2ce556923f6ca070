package runner_test

import (
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner"
	"tolokaforge.io/operator/runner/client"
	"tolokaforge.io/operator/runner/tools"
	"tolokaforge.io/operator/runner/tools/builtin"
)

func TestGRPCHealthNotServingBeforeServe(t *testing.T) {
	srv, err := runner.New(runner.Config{SelfExecutable: selfBin, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// The gRPC server answers, but the runner has not been started: not ready.
	go srv.GRPCServer().Serve(ln)
	defer srv.GRPCServer().Stop()
	c, err := client.Dial(context.Background(), ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, svc := range []string{"", "tolokaforge.runner.RunnerService"} {
		resp, err := c.Health().Check(ctxT(t), &healthpb.HealthCheckRequest{Service: svc})
		if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
			t.Errorf("health(%q) = %v %v, want NOT_SERVING", svc, resp.GetStatus(), err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := c.WaitReady(ctx); err == nil || !errorsIs(err, client.ErrNotServing) {
		t.Errorf("WaitReady on a runner not serving: %v", err)
	}
}

func TestHealthCheckRPC(t *testing.T) {
	db := startDB(t)
	h := startRunner(t, db)
	check := func() *runnerpb.HealthCheckResponse {
		resp, err := h.c.HealthCheck(ctxT(t), &runnerpb.HealthCheckRequest{})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	got := check()
	if got.GetStatus() != "healthy" || got.GetVersion() != "test-1" || got.GetNumActiveTrials() != 0 ||
		!got.GetDbServiceConnected() || !slices.Equal(got.GetAvailableAdapters(), []string{"builtin", "mcp_server"}) {
		t.Fatalf("health = %+v", got)
	}
	h.mustRegister(t, "h:0", baseTask([]any{tool("think")}, nil, nil))
	h.mustRegister(t, "h:1", baseTask([]any{tool("think")}, nil, nil))
	if got := check(); got.GetNumActiveTrials() != 2 {
		t.Fatalf("num_active_trials = %d, want 2", got.GetNumActiveTrials())
	}
	h.cleanup(t, "h:0")
	if got := check(); got.GetNumActiveTrials() != 1 {
		t.Fatalf("num_active_trials after cleanup = %d, want 1", got.GetNumActiveTrials())
	}

	db.stop()
	got = check()
	if got.GetStatus() != "degraded" || got.GetDbServiceConnected() {
		t.Fatalf("with the DB down: %+v", got)
	}
	// The gRPC health service reflects readiness to serve, not the DB.
	if resp, err := h.c.Health().Check(ctxT(t), &healthpb.HealthCheckRequest{}); err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("grpc health with the DB down: %v %v", resp, err)
	}
}

func TestHealthCheckWithoutAnyDB(t *testing.T) {
	db := startDB(t)
	h := startRunner(t, db, func(c *runner.Config) { c.DBServiceURL = "" })
	got, err := h.c.HealthCheck(ctxT(t), &runnerpb.HealthCheckRequest{})
	if err != nil || got.GetStatus() != "degraded" || got.GetDbServiceConnected() {
		t.Fatalf("no DB configured: %+v %v", got, err)
	}
	resp := h.register(t, "nodb", baseTask([]any{tool("think")}, nil, nil))
	if resp.GetSuccess() || resp.GetError() != "no DB service: the trial spec's env_endpoints.db_service_url is empty and the runner was started without --db-service-url" {
		t.Fatalf("register without DB: %+v", resp)
	}
	// A trial naming its DB service makes the runner healthy again.
	doc := baseTask([]any{tool("think")}, nil, nil)
	spec := obj{"trial_id": "withdb", "task": doc, "agent": obj{"provider": "oracle"}, "env_endpoints": obj{"db_service_url": db.url}}
	b, _ := json.Marshal(spec)
	if r := h.registerRaw(t, &runnerpb.RegisterTrialRequest{TrialId: "withdb", TrialSpecJson: string(b), EngineProtocolVersion: task.EngineProtocolVersion}); !r.GetSuccess() {
		t.Fatal(r.GetError())
	}
	if got, _ := h.c.HealthCheck(ctxT(t), &runnerpb.HealthCheckRequest{}); got.GetStatus() != "healthy" {
		t.Fatalf("with a trial's DB: %+v", got)
	}
}

// gate is a builtin that signals when it is entered and returns when released
// (or when its context ends).
func gate(entered chan<- struct{}, release <-chan struct{}) builtin.Builtin {
	return builtin.Builtin{
		Name: "gate", Description: "waits for the test", Category: task.CategoryCompute,
		Parameters: json.RawMessage(`{"type":"object"}`),
		New: func(builtin.Env) tools.Tool {
			return fnTool(func(ctx context.Context, _ json.RawMessage) (string, error) {
				entered <- struct{}{}
				select {
				case <-release:
					return "released", nil
				case <-ctx.Done():
					return "", ctx.Err()
				}
			})
		},
	}
}

func TestDrainFinishesInFlightCallsThenCleansUp(t *testing.T) {
	entered, release := make(chan struct{}, 1), make(chan struct{})
	scratch := t.TempDir()
	h := startRunner(t, nil, withExtra(gate(entered, release)), withDrainTimeout(30*time.Second), withToolRW(scratch))
	pidfile := filepath.Join(scratch, "pids")
	h.mustRegister(t, "drain", baseTask([]any{tool("gate"), testkitTool("echo", obj{"TESTKIT_PIDFILE": pidfile})}, nil, nil))
	h.mustExec(t, "drain", call{tool: "echo", args: `{"text":"x"}`, callID: "0"})
	pids := readPids(t, pidfile)

	watchCtx, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	watch, err := h.c.Health().Watch(watchCtx, &healthpb.HealthCheckRequest{Service: "tolokaforge.runner.RunnerService"})
	if err != nil {
		t.Fatal(err)
	}
	if first, err := watch.Recv(); err != nil || first.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("watch: %v %v", first, err)
	}

	result := make(chan *runnerpb.ExecuteToolResponse, 1)
	go func() {
		resp, err := h.c.ExecuteTool(context.Background(), &runnerpb.ExecuteToolRequest{TrialId: "drain", ToolName: "gate", ArgumentsJson: "{}", CallId: "1"})
		if err != nil {
			t.Errorf("in-flight call: %v", err)
		}
		result <- resp
	}()
	<-entered
	stopped := make(chan struct{})
	go func() {
		h.stop() // SIGTERM
		close(stopped)
	}()
	if next, err := watch.Recv(); err != nil || next.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("watch during drain: %v %v", next, err)
	}
	stopWatch() // let GracefulStop finish once the call does
	// While draining the runner reports itself unhealthy... (the open channel
	// may already be refused by GracefulStop; either answer is a refusal)
	if hc, err := h.c.HealthCheck(ctxT(t), &runnerpb.HealthCheckRequest{}); err == nil && hc.GetStatus() != "unhealthy" {
		t.Errorf("HealthCheck while draining = %q", hc.GetStatus())
	} else if err != nil && status.Code(err) != codes.Unavailable {
		t.Errorf("HealthCheck while draining: %v", err)
	}
	close(release)
	if resp := <-result; resp.GetStatus() != stSuccess || resp.GetOutput() != "released" {
		t.Fatalf("in-flight call: %+v", resp)
	}
	<-stopped
	if h.serveErr != nil {
		t.Fatalf("Serve: %v", h.serveErr)
	}
	// Every trial cleaned up.
	waitDead(t, pids[0][0], pids[0][1])
	if h.dbHasTrial(t, "drain") {
		t.Error("DB trial left after shutdown")
	}
	if e := h.workEntries(t); len(e) != 0 {
		t.Errorf("trial directories left: %v", e)
	}
}

func TestDrainTimeoutCutsInFlightCalls(t *testing.T) {
	entered, release := make(chan struct{}, 1), make(chan struct{})
	defer close(release)
	h := startRunner(t, nil, withExtra(gate(entered, release)), withDrainTimeout(100*time.Millisecond))
	h.mustRegister(t, "cut", baseTask([]any{tool("gate", "timeout_s", 600)}, nil, nil))
	type outcome struct {
		resp *runnerpb.ExecuteToolResponse
		err  error
	}
	done := make(chan outcome, 1)
	go func() {
		resp, err := h.c.ExecuteTool(context.Background(), &runnerpb.ExecuteToolRequest{TrialId: "cut", ToolName: "gate", ArgumentsJson: "{}", CallId: "1"})
		done <- outcome{resp, err}
	}()
	<-entered
	h.stop() // returns although the call would run for 600 s
	// The tool is cancelled first, so its answer may still make it out before
	// the connection is cut; either way the call ended.
	switch o := <-done; {
	case o.err != nil:
		if c := status.Code(o.err); c != codes.Unavailable && c != codes.Canceled {
			t.Fatalf("cut call: %v", o.err)
		}
	case o.resp.GetStatus() != stError || o.resp.GetErrorMessage() != "Tool execution cancelled: context canceled":
		t.Fatalf("cut call answered %+v", o.resp)
	}
	if h.serveErr != nil {
		t.Fatalf("Serve: %v", h.serveErr)
	}
	if h.dbHasTrial(t, "cut") || len(h.workEntries(t)) != 0 {
		t.Error("trial not cleaned up after a forced stop")
	}
}
