package host_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/host"
	"tolokaforge.io/operator/runner/client"
)

// The fault-injection suite: a real DB service and a real runner, each its
// own OS process (this test binary re-executed, see TestMain), talking over
// loopback through a TCP relay that fires the fault the moment the runner's
// request to the DB service is on the wire, i.e. mid-tool. Each trial is
// driven as the Trial controller drives it: an attempt that ends InfraFailed
// is followed by a new attempt on new processes (new pods), up to the
// default attempt budget of 3.

// proc is one service process.
type proc struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startProc(t *testing.T, role string, args ...string) *proc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: exec.Command(exe, append([]string{role}, args...)...), out: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", role, err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		// A stopped process must be continued to die of anything but KILL;
		// KILL works either way.
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// kill is kill -9, waited for: the process is gone when it returns.
func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// stop is SIGSTOP, waited for: the process is stopped when it returns, so
// the request the relay forwards next is never answered.
func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGSTOP)
	stat := fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		b, err := os.ReadFile(stat)
		// Field 3, after the parenthesised command name, is the state.
		if i := bytes.LastIndexByte(b, ')'); err == nil && i >= 0 && i+2 < len(b) && b[i+2] == 'T' {
			return
		}
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// relay forwards TCP to target. Once armed, the first bytes a client sends
// fire inject before they are forwarded.
type relay struct {
	ln     net.Listener
	target string
	armed  atomic.Bool
	fired  atomic.Int32
	inject func()
}

func startRelay(t *testing.T, target string, inject func()) *relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{ln: ln, target: target, inject: inject}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go r.serve(c)
		}
	}()
	return r
}

func (r *relay) url() string { return "http://" + r.ln.Addr().String() }

func (r *relay) serve(c net.Conn) {
	defer c.Close()
	s, err := net.Dial("tcp", r.target)
	if err != nil {
		return
	}
	defer s.Close()
	go func() { _, _ = io.Copy(c, s); _ = c.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if r.armed.CompareAndSwap(true, false) {
				r.fired.Add(1)
				r.inject()
			}
			if _, werr := s.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// procStack is one attempt's pods: a DB service and a runner process, the
// runner reaching the DB service through the relay.
type procStack struct {
	db, runner *proc
	relay      *relay
	client     *client.Client
}

func startProcStack(t *testing.T, fault func(*procStack)) *procStack {
	t.Helper()
	ps := &procStack{}
	dbAddr := freeAddr(t)
	ps.db = startProc(t, "dbservice", "--listen="+dbAddr, "--log-level=error")
	waitHTTP(t, "http://"+dbAddr+"/health")
	ps.relay = startRelay(t, dbAddr, func() { fault(ps) })
	rAddr := freeAddr(t)
	ps.runner = startProc(t, "runner", "--listen="+rAddr, "--db-service-url="+ps.relay.url(),
		"--work-dir="+t.TempDir(), "--drain-timeout=1s", "--log-level=error")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, rAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.WaitReady(ctx); err != nil {
		t.Fatalf("runner not ready: %v\n%s", err, ps.runner.out)
	}
	ps.client = c
	return ps
}

func waitHTTP(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready: %v", url, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// dbTask has one agent tool that writes to the DB service on every call.
func dbTask(t *testing.T) *task.TaskDescription {
	t.Helper()
	td, err := task.DecodeTaskDescription([]byte(`{
		"task_id": "faults", "name": "faults", "category": "test", "description": "write a record",
		"adapter_type": "native", "system_prompt": "Write.",
		"agent_tools": [{"name": "db_insert", "description": "insert a record", "timeout_s": 1}],
		"initial_state": {"tables": {"items": [{"id": "a"}]}},
		"grading": {"weights": {"state_checks": 1}, "state_checks": {
			"db_probes": [{"id": "b-written", "query": "$.db.items[?@.id=='b']", "expect": {"count": 1}}]}}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	return td
}

func TestFaultInjectionMidTool(t *testing.T) {
	if testing.Short() {
		t.Skip("starts service processes")
	}
	cases := []struct {
		name   string
		fault  func(*procStack)
		reason string
		prefix string
		// atGrade fires the fault after the tool, as the agent stops: the
		// episode is whole, but the state it is graded on is out of reach.
		atGrade bool
	}{
		{"kill -9 of the DB service", func(ps *procStack) { ps.db.kill() },
			evalv1.ReasonDBServiceUnavailable, `execute tool "db_insert" (call w) of trial "faults:0": DB service unavailable (Unavailable): `, false},
		{"SIGSTOP of the DB service", func(ps *procStack) { ps.db.stop() },
			evalv1.ReasonDBServiceUnavailable, `execute tool "db_insert" (call w) of trial "faults:0": DB service unavailable (Unavailable): DB service unavailable during tool 'db_insert': no answer within 1s`, false},
		{"kill -9 of the runner", func(ps *procStack) { ps.runner.kill() },
			evalv1.ReasonRunnerUnavailable, `execute tool "db_insert" (call w) of trial "faults:0": runner unreachable (Unavailable): `, false},
		{"kill -9 of the DB service before grading", func(ps *procStack) { ps.db.kill() },
			evalv1.ReasonDBServiceUnavailable, `grade trial "faults:0": the runner answered "`, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			td := dbTask(t)
			var (
				results []host.AttemptResult
				grades  int
				toolMsg []string
			)
			for n := 1; n <= 3; n++ {
				ps := startProcStack(t, tc.fault)
				agent := funcActor(func(_ context.Context, conv []task.Message, _ []*runnerpb.ToolSchema) (host.Turn, error) {
					last := conv[len(conv)-1]
					if last.Role == task.RoleTool {
						toolMsg = append(toolMsg, last.Content)
						if tc.atGrade && n == 1 {
							ps.relay.fired.Add(1)
							tc.fault(ps)
						}
						return host.Turn{Content: "done " + host.StopMarker}, nil
					}
					// Only the first attempt meets the fault.
					ps.relay.armed.Store(n == 1 && !tc.atGrade)
					return host.Turn{ToolCalls: []task.ToolCall{{ID: "w", Function: task.FunctionCall{
						Name: "db_insert", Arguments: `{"table":"items","record":{"id":"b"}}`}}}}, nil
				})
				spec := &task.TrialSpec{TrialID: "faults:0", RunID: "faults", AttemptID: fmt.Sprintf("faults-%d", n), Task: td,
					Agent: &task.ModelConfig{Provider: task.ProviderOracle}, EnvEndpoints: &task.EnvEndpoints{DBServiceURL: ps.relay.url()}}
				ac := host.AttemptConfig{Runner: ps.client, Spec: spec, InitialUserMessage: "write b", MaxTurns: 5,
					TrialTimeout: 30 * time.Second, DefaultToolTimeout: time.Second, GradingTimeout: 10 * time.Second,
					CleanupTimeout: time.Second, Agent: agent, AttemptNumber: n, Log: logr.Discard()}
				start := time.Now()
				res := host.RunAttempt(ctxT(t), ac)
				if took := time.Since(start); took > 15*time.Second {
					t.Errorf("attempt %d took %s: a fault must end the call, not hang it", n, took)
				}
				if n == 1 && ps.relay.fired.Load() != 1 {
					t.Fatalf("the fault did not fire mid-tool (fired %d times): %s: %q", ps.relay.fired.Load(), res, res.Message)
				}
				results = append(results, res)
				t.Logf("attempt %d: %s %q tool messages %q", n, res, res.Message, toolMsg)
				if res.Grade != nil {
					grades++
				}
				if res.Outcome != evalv1.OutcomeInfraFailed {
					break
				}
			}
			if len(results) != 2 {
				t.Fatalf("want the faulted attempt and one retry, got %d attempts: %v", len(results), results)
			}
			first, retry := results[0], results[1]
			wantTermination, wantCalls := task.TerminationTrialLost, 0
			if tc.atGrade {
				wantTermination, wantCalls = task.TerminationAgentDone, 1
			}
			if first.Outcome != evalv1.OutcomeInfraFailed || first.Reason != tc.reason || !strings.HasPrefix(first.Message, tc.prefix) ||
				first.Grade != nil || first.GradedBy != "" || first.TerminationReason != wantTermination || len(first.ToolCalls) != wantCalls {
				t.Fatalf("faulted attempt: %s reason %s graded by %q: %q", first, first.Reason, first.GradedBy, first.Message)
			}
			if retry.Outcome != evalv1.OutcomePassed || retry.GradedBy != host.GradedByRunner || retry.Grade.GetScore() != 1 {
				t.Fatalf("retry: %s: %q", retry, retry.Message)
			}
			if grades != 1 {
				t.Fatalf("%d grades for one trial, want exactly 1", grades)
			}
			// The agent read the tool results of whole calls only; never an error.
			if len(toolMsg) != 1+wantCalls {
				t.Fatalf("tool results shown to the agent: %q", toolMsg)
			}
			for _, m := range toolMsg {
				if m != `{"id":"b"}` {
					t.Fatalf("tool results shown to the agent: %q", toolMsg)
				}
			}
		})
	}
}

// A tool that times out while the DB service is stopped: the runner, whose
// call never reached the DB service, answers TIMEOUT; the host's probe finds
// the DB service unreachable, so the timeout is not shown to the agent and the
// attempt ends as an infrastructure fault.
func TestToolTimeoutWhileTheDBServiceIsStoppedIsAnInfraFault(t *testing.T) {
	if testing.Short() {
		t.Skip("starts service processes")
	}
	td, err := task.DecodeTaskDescription([]byte(`{
		"task_id": "faults", "name": "faults", "category": "test", "description": "sleep",
		"adapter_type": "native", "system_prompt": "Sleep.",
		"agent_tools": [{"name": "sleep", "description": "sleep", "timeout_s": 1,
			"source": {"toolset": "testkit", "module_path": "", "class_name": "sleep", "invocation_style": "mcp_server",
				"extra": {"command": ["tolokaforge", "mcp", "testkit"]}}}],
		"initial_state": {"tables": {"items": [{"id": "a"}]}}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	ps := startProcStack(t, func(*procStack) {})
	var toolMsg []string
	agent := funcActor(func(_ context.Context, conv []task.Message, _ []*runnerpb.ToolSchema) (host.Turn, error) {
		id, secs := "s0", "0"
		if last := conv[len(conv)-1]; last.Role == task.RoleTool {
			toolMsg = append(toolMsg, last.Content)
			// The MCP session is up and synced: the next call needs no DB.
			ps.db.stop()
			id, secs = "s1", "5"
		}
		return host.Turn{ToolCalls: []task.ToolCall{{ID: id, Function: task.FunctionCall{Name: "sleep", Arguments: `{"seconds":` + secs + `}`}}}}, nil
	})
	spec := &task.TrialSpec{TrialID: "faults:0", RunID: "faults", AttemptID: "faults-1", Task: td,
		Agent: &task.ModelConfig{Provider: task.ProviderOracle}, EnvEndpoints: &task.EnvEndpoints{DBServiceURL: ps.relay.url()}}
	res := host.RunAttempt(ctxT(t), host.AttemptConfig{Runner: ps.client, Spec: spec, InitialUserMessage: "sleep", MaxTurns: 5,
		TrialTimeout: 30 * time.Second, GradingTimeout: 10 * time.Second, CleanupTimeout: time.Second, Agent: agent, AttemptNumber: 1, Log: logr.Discard()})
	want := `execute tool "sleep" (call s1) of trial "faults:0": the runner answered "timeout" while its DB service was unreachable`
	if res.Outcome != evalv1.OutcomeInfraFailed || res.Reason != evalv1.ReasonDBServiceUnavailable || res.Message != want || res.Grade != nil {
		t.Fatalf("%s: %q", res, res.Message)
	}
	if len(toolMsg) != 1 || toolMsg[0] != "slept" {
		t.Fatalf("tool results shown to the agent: %q", toolMsg)
	}
}

// A DB service down when the attempt starts: the runner refuses the
// registration (it cannot initialize the trial's state), and the host tells
// that from an invalid task by the runner's health: InfraFailed, retried,
// never Invalid.
func TestRegistrationWithTheDBServiceDownIsAnInfraFault(t *testing.T) {
	if testing.Short() {
		t.Skip("starts service processes")
	}
	ps := startProcStack(t, func(*procStack) {})
	ps.db.kill()
	calls := 0
	agent := funcActor(func(context.Context, []task.Message, []*runnerpb.ToolSchema) (host.Turn, error) {
		calls++
		return host.Turn{Content: host.StopMarker}, nil
	})
	spec := &task.TrialSpec{TrialID: "faults:0", RunID: "faults", AttemptID: "faults-1", Task: dbTask(t),
		Agent: &task.ModelConfig{Provider: task.ProviderOracle}, EnvEndpoints: &task.EnvEndpoints{DBServiceURL: ps.relay.url()}}
	res := host.RunAttempt(ctxT(t), host.AttemptConfig{Runner: ps.client, Spec: spec, InitialUserMessage: "x",
		CleanupTimeout: time.Second, Agent: agent, AttemptNumber: 1, Log: logr.Discard()})
	if res.Outcome != evalv1.OutcomeInfraFailed || res.Reason != evalv1.ReasonDBServiceUnavailable || res.Grade != nil || calls != 0 ||
		!strings.HasPrefix(res.Message, `register trial "faults:0": DB service unavailable (Unavailable): DB Service initialization failed: `) {
		t.Fatalf("%s: %q (agent called %d times)", res, res.Message, calls)
	}
}
