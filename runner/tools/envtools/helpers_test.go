package envtools_test

// These tests drive the real exec agent (runner/execagent, in process on
// loopback) through a real runner (gRPC on loopback, a real DB service).
// They live in this package's test binary rather than the runner's because
// the exec agent's KillAll, run outside PID 1, kills every descendant of
// the test process: here the agent's commands are the only ones.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"tolokaforge.io/operator/api/authn"
	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/dbservice"
	"tolokaforge.io/operator/runner"
	rclient "tolokaforge.io/operator/runner/client"
	"tolokaforge.io/operator/runner/execagent"
	"tolokaforge.io/operator/runner/grading"
)

func TestMain(m *testing.M) {
	// Orphans of the agent's commands (a background loop) come back to
	// this process, as they do to the exec agent as PID 1, so KillAll finds
	// them.
	if err := execagent.SetSubreaper(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

type obj = map[string]any

// world is one terminal trial's stack: an exec agent standing in for the
// task's container (its paths under root), a DB service and a runner.
type world struct {
	root    string // the "container": work/, tests/, logs/verifier/
	work    string // environment.workdir
	tests   string
	logs    string // the verifier directory
	agent   *execagent.Server
	agentAt string
	stopAgt func()
	runner  *rclient.Client
	runWork string // the runner's own work directory
}

func newWorld(t *testing.T) *world {
	t.Helper()
	root := t.TempDir()
	w := &world{root: root, work: filepath.Join(root, "work"), tests: filepath.Join(root, "tests"), logs: filepath.Join(root, "logs", "verifier")}
	if err := os.MkdirAll(w.work, 0o755); err != nil {
		t.Fatal(err)
	}
	token, err := authn.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := execagent.New(execagent.Options{Token: token, StateDir: filepath.Join(t.TempDir(), "state"), Version: "test-1"})
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis) //nolint:errcheck // Stop ends it
	w.agent, w.agentAt = srv, lis.Addr().String()
	w.stopAgt = sync.OnceFunc(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Stop(ctx)
	})
	t.Cleanup(func() { w.stopAgt(); srv.Close() })

	dbLis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dctx, dcancel := context.WithCancel(context.Background())
	ddone := make(chan struct{})
	go func() { _ = dbservice.New(dbservice.Options{}).Serve(dctx, dbLis); close(ddone) }()
	t.Cleanup(func() { dcancel(); <-ddone })

	w.runWork = t.TempDir()
	rsrv, err := runner.New(runner.Config{
		DBServiceURL:     "http://" + dbLis.Addr().String(),
		WorkDir:          w.runWork,
		Version:          "test-1",
		DrainTimeout:     5 * time.Second,
		Grader:           grading.New(),
		EnvironmentToken: token,
		EnvironmentPaths: grading.EnvironmentPaths{Tests: w.tests, Verifier: w.logs, Solution: filepath.Join(root, "solution")},
	})
	if err != nil {
		t.Fatal(err)
	}
	rlis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithCancel(context.Background())
	rdone := make(chan struct{})
	go func() { _ = rsrv.Serve(rctx, rlis); close(rdone) }()
	c, err := rclient.Dial(context.Background(), rlis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); rcancel(); <-rdone })
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if err := c.WaitReady(wctx); err != nil {
		t.Fatal(err)
	}
	w.runner = c
	return w
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// taskOpts shape a terminal task.
type taskOpts struct {
	testSh    string            // tests/test.sh (the verifier's command runs it)
	files     map[string]string // more tool_artifacts (path -> text)
	tests     []string          // environment.verifier.tests (default ["tests"])
	parser    string
	keep      bool
	timeoutS  float64 // test_execution.timeout_s (default 30)
	agentUser string
}

// terminalTask is a terminal_bench task whose environment paths are w's.
// The verifier's environment names them: LOGS (the verifier directory) and
// TESTS.
func (w *world) terminalTask(o taskOpts) obj {
	arts := map[string]string{"tests/test.sh": base64.StdEncoding.EncodeToString([]byte(o.testSh))}
	for k, v := range o.files {
		arts[k] = base64.StdEncoding.EncodeToString([]byte(v))
	}
	tests := o.tests
	if tests == nil {
		tests = []string{"tests"}
	}
	timeout := o.timeoutS
	if timeout == 0 {
		timeout = 30
	}
	var toolsJSON []any
	for _, s := range task.EnvironmentTools() {
		b, _ := json.Marshal(s)
		var m obj
		_ = json.Unmarshal(b, &m)
		toolsJSON = append(toolsJSON, m)
	}
	verifier := obj{"tests": tests, "env": obj{"LOGS": w.logs, "TESTS": w.tests}}
	if o.parser != "" {
		verifier["parser"] = o.parser
	}
	if o.keep {
		verifier["keep_agent_processes"] = true
	}
	return obj{
		"task_id": "term-1", "name": "terminal task", "category": "terminal", "description": "do the thing",
		"adapter_type": "terminal_bench", "system_prompt": "you are in a terminal",
		"agent_tools": toolsJSON, "user_tools": []any{},
		"tool_artifacts": arts,
		"environment": obj{
			"image":    "registry.example/term@sha256:" + fmt.Sprintf("%064d", 0),
			"workdir":  w.work,
			"env":      obj{"TASK_MARK": "from-env"},
			"agent":    obj{"user": o.agentUser},
			"verifier": verifier,
		},
		"grading": obj{"grading_method": "test_execution", "test_execution": obj{
			"command": []any{"bash", filepath.Join(w.tests, "test.sh")}, "timeout_s": timeout,
		}},
	}
}

func (w *world) spec(t *testing.T, id string, td obj, withURL bool) string {
	t.Helper()
	s := obj{"trial_id": id, "run_id": "run-1", "attempt_id": "att-1", "task": td, "agent": obj{"provider": "oracle"}}
	if withURL {
		s["env_endpoints"] = obj{"environment_url": w.agentAt}
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func (w *world) register(t *testing.T, id string, o taskOpts) {
	t.Helper()
	resp, err := w.runner.RegisterTrial(ctxT(t), &runnerpb.RegisterTrialRequest{TrialId: id, TrialSpecJson: w.spec(t, id, w.terminalTask(o), true), EngineProtocolVersion: task.EngineProtocolVersion})
	if err != nil {
		t.Fatal(err)
	}
	if !resp.GetSuccess() {
		t.Fatalf("RegisterTrial: %s", resp.GetError())
	}
	t.Cleanup(func() {
		_, _ = w.runner.CleanupTrial(context.Background(), &runnerpb.CleanupTrialRequest{TrialId: id})
	})
}

var callSeq int

func (w *world) call(t *testing.T, id, tool string, args obj) *runnerpb.ExecuteToolResponse {
	t.Helper()
	b, _ := json.Marshal(args)
	callSeq++
	resp, err := w.runner.ExecuteTool(ctxT(t), &runnerpb.ExecuteToolRequest{TrialId: id, ToolName: tool, ArgumentsJson: string(b), CallId: fmt.Sprintf("c%d", callSeq)})
	if err != nil {
		t.Fatalf("ExecuteTool %s: %v", tool, err)
	}
	return resp
}

func (w *world) mustCall(t *testing.T, id, tool string, args obj) string {
	t.Helper()
	resp := w.call(t, id, tool, args)
	if resp.GetStatus() != runnerpb.ExecutionStatus_EXECUTION_STATUS_SUCCESS {
		t.Fatalf("%s %v: %s: %s", tool, args, resp.GetStatus(), resp.GetErrorMessage())
	}
	return resp.GetOutput()
}

func (w *world) grade(t *testing.T, id string) *runnerpb.GradeTrialResponse {
	t.Helper()
	resp, err := w.runner.GradeTrial(ctxT(t), &runnerpb.GradeTrialRequest{TrialId: id})
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func (w *world) mustGrade(t *testing.T, id string) *runnerpb.Grade {
	t.Helper()
	resp := w.grade(t, id)
	if !resp.GetSuccess() {
		t.Fatalf("GradeTrial: %s", resp.GetError())
	}
	return resp.GetGrade()
}
