package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/dbservice"
	dbclient "tolokaforge.io/operator/dbservice/client"
	"tolokaforge.io/operator/runner"
	"tolokaforge.io/operator/runner/client"
	"tolokaforge.io/operator/runner/grading"
	"tolokaforge.io/operator/runner/proc"
	"tolokaforge.io/operator/test/mcpstandin"
	"tolokaforge.io/operator/test/toollauncher"
)

// selfBin is the MCP stand-in (test/mcpstandin), built once: the runner's
// stand-in for its own executable, serving `mcp shop` and `mcp testkit`.
var selfBin string

// toolLauncher is tolokaforge-toolexec, built once: tools start through it
// as in production, not through a re-executed test binary.
var toolLauncher string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	if len(os.Args) > 1 && os.Args[1] == "runner" {
		// This test binary started as `tolokaforge runner` does
		// (environ_test.go): scrub, then serve until SIGTERM.
		return asRunnerBinary(os.Args[2:])
	}
	// Started as `<this binary> mcp testkit` by an in-process runner's
	// tool, whose runner binary (SelfExecutable) this is.
	mcpstandin.ServeIfAsked()
	if len(os.Args) > 1 && os.Args[1] == "inprocess-runner" {
		// A CLI embedding the runner (trial run, pack validate, regrade):
		// no scrub, the caller's whole environment (python_confine_test.go).
		return asInProcessRunner(os.Args[2:])
	}
	dir, err := os.MkdirTemp("", "runner-selfbin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if selfBin, err = mcpstandin.Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if toolLauncher, err = toollauncher.Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// dbHandle is an in-process DB service on loopback.
type dbHandle struct {
	url  string
	c    *dbclient.Client
	stop func()
}

func startDB(tb testing.TB) *dbHandle {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- dbservice.New(dbservice.Options{}).Serve(ctx, ln) }()
	stop := sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("DB service: %v", err)
		}
	})
	tb.Cleanup(stop)
	url := "http://" + ln.Addr().String()
	return &dbHandle{url: url, c: dbclient.New(url, dbclient.WithRetries(0)), stop: stop}
}

// harness is a runner served on loopback with a real client connection.
type harness struct {
	srv  *runner.Server
	c    *client.Client
	db   *dbHandle
	work string
	addr string // the loopback address it serves on
	// stop cancels Serve and waits for its drain to finish.
	stop     func()
	serveErr error
}

type harnessOpt func(*runner.Config)

func withGrader(g grading.Grader) harnessOpt { return func(c *runner.Config) { c.Grader = g } }

func withMinProtocol(n int32) harnessOpt { return func(c *runner.Config) { c.MinEngineProtocol = n } }

func withDrainTimeout(d time.Duration) harnessOpt {
	return func(c *runner.Config) { c.DrainTimeout = d }
}

func withDBConnectWait(d time.Duration) harnessOpt {
	return func(c *runner.Config) { c.DBConnectWait = d }
}

// withToolRW lets the trials' stdio MCP servers also write dir, outside
// every trial (they run confined to their trial's folders): a fixture's
// pid file that must outlive a trial folder.
func withToolRW(dir string) harnessOpt {
	return func(c *runner.Config) { runner.WithToolReadWriteForTests(c, dir) }
}

func withExtra(b ...builtinTool) harnessOpt {
	return func(c *runner.Config) { c.ExtraBuiltins = append(c.ExtraBuiltins, b...) }
}

func testLogger(tb testing.TB) logr.Logger {
	if t, ok := tb.(*testing.T); ok && os.Getenv("RUNNER_TEST_LOG") != "" {
		return testr.NewWithOptions(t, testr.Options{Verbosity: 1})
	}
	return logr.Discard()
}

func startRunner(tb testing.TB, db *dbHandle, opts ...harnessOpt) *harness {
	tb.Helper()
	if db == nil {
		db = startDB(tb)
	}
	work := tb.TempDir()
	cfg := runner.Config{
		DBServiceURL:   db.url,
		SelfExecutable: selfBin,
		ToolLauncher:   toolLauncher,
		WorkDir:        work,
		Version:        "test-1",
		DrainTimeout:   5 * time.Second,
		Logger:         testLogger(tb),
	}
	for _, o := range opts {
		o(&cfg)
	}
	srv, err := runner.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{srv: srv, db: db, work: work, addr: ln.Addr().String()}
	done := make(chan struct{})
	go func() {
		h.serveErr = srv.Serve(ctx, ln)
		close(done)
	}()
	h.stop = sync.OnceFunc(func() {
		cancel()
		<-done
	})
	c, err := client.Dial(context.Background(), ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	h.c = c
	tb.Cleanup(func() {
		c.Close()
		h.stop()
	})
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if err := c.WaitReady(wctx); err != nil {
		tb.Fatal(err)
	}
	return h
}

func ctxT(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	tb.Cleanup(cancel)
	return ctx
}

// ---- trial specs -----------------------------------------------------------

type obj = map[string]any

// baseTask is a valid TaskDescription with the given tools and tables.
func baseTask(agentTools, userTools []any, tables obj) obj {
	if agentTools == nil {
		agentTools = []any{}
	}
	if userTools == nil {
		userTools = []any{}
	}
	t := obj{
		"task_id": "t1", "name": "test task", "category": "test", "description": "a task for tests",
		"adapter_type": "native", "system_prompt": "be helpful",
		"agent_tools": agentTools, "user_tools": userTools,
	}
	if tables != nil {
		t["initial_state"] = obj{"tables": tables}
	}
	return t
}

func tool(name string, extra ...any) obj {
	t := obj{"name": name, "description": name + " tool"}
	for i := 0; i+1 < len(extra); i += 2 {
		t[extra[i].(string)] = extra[i+1]
	}
	return t
}

// testkitTool is an mcp_server tool served by `mcpstandin mcp testkit`.
func testkitTool(name string, env obj, extra ...any) obj {
	ex := obj{"command": []any{"tolokaforge", "mcp", "testkit"}}
	if env != nil {
		ex["env"] = env
	}
	t := tool(name, extra...)
	t["source"] = obj{"toolset": "testkit", "module_path": "", "class_name": name, "invocation_style": "mcp_server", "extra": ex}
	return t
}

func specJSON(tb testing.TB, id string, taskDoc obj) string {
	tb.Helper()
	b, err := json.Marshal(obj{"trial_id": id, "run_id": "run-1", "attempt_id": "att-1", "task": taskDoc, "agent": obj{"provider": "oracle"}})
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

func (h *harness) register(tb testing.TB, id string, taskDoc obj) *runnerpb.RegisterTrialResponse {
	tb.Helper()
	return h.registerRaw(tb, &runnerpb.RegisterTrialRequest{TrialId: id, TrialSpecJson: specJSON(tb, id, taskDoc), EngineProtocolVersion: task.EngineProtocolVersion})
}

func (h *harness) registerRaw(tb testing.TB, req *runnerpb.RegisterTrialRequest) *runnerpb.RegisterTrialResponse {
	tb.Helper()
	resp, err := h.c.RegisterTrial(ctxT(tb), req)
	if err != nil {
		tb.Fatalf("RegisterTrial: %v", err)
	}
	return resp
}

func (h *harness) mustRegister(tb testing.TB, id string, taskDoc obj) *runnerpb.RegisterTrialResponse {
	tb.Helper()
	resp := h.register(tb, id, taskDoc)
	if !resp.GetSuccess() {
		tb.Fatalf("RegisterTrial(%s): %s", id, resp.GetError())
	}
	return resp
}

type call struct {
	tool, args, callID, executor string
	timeout                      float64
}

func (h *harness) exec(tb testing.TB, trialID string, c call) *runnerpb.ExecuteToolResponse {
	tb.Helper()
	resp, err := h.c.ExecuteTool(ctxT(tb), &runnerpb.ExecuteToolRequest{
		TrialId: trialID, ToolName: c.tool, ArgumentsJson: c.args, CallId: c.callID, Executor: c.executor, TimeoutSeconds: c.timeout,
	})
	if err != nil {
		tb.Fatalf("ExecuteTool(%s %s): %v", c.tool, c.args, err)
	}
	return resp
}

func (h *harness) mustExec(tb testing.TB, trialID string, c call) string {
	tb.Helper()
	resp := h.exec(tb, trialID, c)
	if resp.GetStatus() != runnerpb.ExecutionStatus_EXECUTION_STATUS_SUCCESS {
		tb.Fatalf("ExecuteTool(%s %s): %s: %s", c.tool, c.args, resp.GetStatus(), resp.GetErrorMessage())
	}
	return resp.GetOutput()
}

func (h *harness) state(tb testing.TB, trialID string, includeUnstable bool, tables ...string) *runnerpb.GetStateResponse {
	tb.Helper()
	resp, err := h.c.GetState(ctxT(tb), &runnerpb.GetStateRequest{TrialId: trialID, IncludeUnstable: includeUnstable, Tables: tables})
	if err != nil {
		tb.Fatal(err)
	}
	return resp
}

func (h *harness) cleanup(tb testing.TB, id string) *runnerpb.CleanupTrialResponse {
	tb.Helper()
	resp, err := h.c.CleanupTrial(ctxT(tb), &runnerpb.CleanupTrialRequest{TrialId: id})
	if err != nil {
		tb.Fatal(err)
	}
	return resp
}

// dbHasTrial reports whether the DB service holds the trial.
func (h *harness) dbHasTrial(tb testing.TB, id string) bool {
	tb.Helper()
	_, err := h.db.c.Hash(ctxT(tb), id)
	if err == nil {
		return true
	}
	if !errors.Is(err, dbclient.ErrTrialNotFound) {
		tb.Fatalf("DB hash %s: %v", id, err)
	}
	return false
}

// workEntries lists the runner's work dir (one directory per live trial).
func (h *harness) workEntries(tb testing.TB) []string {
	tb.Helper()
	entries, err := os.ReadDir(h.work)
	if err != nil {
		tb.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// ---- processes ----------------------------------------------------------------

// readPids reads the testkit pid file: "server helper" per started server.
func readPids(tb testing.TB, path string) [][2]int {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var out [][2]int
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			tb.Fatalf("pid file line %q", line)
		}
		a, _ := strconv.Atoi(f[0])
		b, _ := strconv.Atoi(f[1])
		out = append(out, [2]int{a, b})
	}
	return out
}

// alive reports whether pid is a live (non-zombie) process.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// waitDead waits (bounded) for every pid to be gone; the kill is asynchronous
// for a helper reparented away from us.
func waitDead(tb testing.TB, pids ...int) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for alive(pid) {
			if time.Now().After(deadline) {
				tb.Fatalf("process %d still alive", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// ---- probe grader ------------------------------------------------------------

// probeGrader is a grading.Grader that runs a test's function against the
// runner's grading.Env, so tests can observe the tool-call record and the Env
// operations through the real GradeTrial RPC.
type probeGrader struct {
	mu sync.Mutex // fn is set by the test and read on a server goroutine
	fn func(ctx context.Context, env grading.Env, req grading.Request) (*runnerpb.Grade, error)
}

func (p *probeGrader) set(fn func(ctx context.Context, env grading.Env, req grading.Request) (*runnerpb.Grade, error)) {
	p.mu.Lock()
	p.fn = fn
	p.mu.Unlock()
}

func (p *probeGrader) Grade(ctx context.Context, env grading.Env, req grading.Request) (*runnerpb.Grade, error) {
	p.mu.Lock()
	fn := p.fn
	p.mu.Unlock()
	return fn(ctx, env, req)
}

// recordsOf reads a trial's tool-call record through GradeTrial.
func recordsOf(tb testing.TB, h *harness, pg *probeGrader, id string) []task.RecordedToolCall {
	tb.Helper()
	// The grader runs on a server goroutine: hand the record over on a
	// channel rather than through a shared variable.
	got := make(chan []task.RecordedToolCall, 1)
	pg.set(func(_ context.Context, env grading.Env, _ grading.Request) (*runnerpb.Grade, error) {
		got <- env.Records()
		return &runnerpb.Grade{}, nil
	})
	resp, err := h.c.GradeTrial(ctxT(tb), &runnerpb.GradeTrialRequest{TrialId: id})
	if err != nil || !resp.GetSuccess() {
		tb.Fatalf("GradeTrial: %v %s", err, resp.GetError())
	}
	return <-got
}

func dbInit(tables obj) dbclient.InitRequest {
	req := dbclient.InitRequest{Tables: map[string]json.RawMessage{}}
	for k, v := range tables {
		b, _ := json.Marshal(v)
		req.Tables[k] = b
	}
	return req
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }

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

// startRunnerProcess starts argv (this test binary re-executed as a runner
// listening on addr) with env added to the test's environment, stops it at
// cleanup, and returns a client once the runner answers its health check,
// and the runner's pid.
func startRunnerProcess(t *testing.T, addr string, argv []string, env ...string) (*client.Client, int) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	c, err := client.Dial(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	wctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.WaitReady(wctx); err != nil {
		t.Fatalf("runner subprocess %s: %v", argv[1], err)
	}
	return c, cmd.Process.Pid
}

func withToolLimits(l proc.Limits) harnessOpt { return func(c *runner.Config) { c.ToolLimits = l } }
