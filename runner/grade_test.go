package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner/grading"
)

func grade(tb testing.TB, h *harness, req *runnerpb.GradeTrialRequest) *runnerpb.GradeTrialResponse {
	tb.Helper()
	resp, err := h.c.GradeTrial(ctxT(tb), req)
	if err != nil {
		tb.Fatal(err)
	}
	return resp
}

func TestGradeTrialDelegatesToGrader(t *testing.T) {
	pg := &probeGrader{}
	h := startRunner(t, nil, withGrader(pg))
	h.mustRegister(t, "g", baseTask([]any{tool("calculator")}, nil, nil))

	if r := grade(t, h, &runnerpb.GradeTrialRequest{TrialId: "ghost"}); r.GetSuccess() || r.GetError() != "Trial 'ghost' not found" {
		t.Errorf("unknown trial: %+v", r)
	}

	want := &runnerpb.Grade{BinaryPass: true, Score: 0.75, Reasons: "State: hash match"}
	gotReq := make(chan grading.Request, 1)
	pg.set(func(_ context.Context, env grading.Env, req grading.Request) (*runnerpb.Grade, error) {
		gotReq <- req
		return want, nil
	})
	r := grade(t, h, &runnerpb.GradeTrialRequest{TrialId: "g", LlmMessagesJson: `[{"role":"user","content":"hi"}]`, TerminationReason: "agent_done", GradingComponents: []string{"state_checks"}})
	if !r.GetSuccess() || !proto.Equal(r.GetGrade(), want) {
		t.Fatalf("grade: %+v", r)
	}
	got := <-gotReq
	if string(got.Transcript) != `[{"role":"user","content":"hi"}]` || got.TerminationReason != "agent_done" || !slices.Equal(got.Components, []string{"state_checks"}) {
		t.Errorf("request passed to the grader: %+v", got)
	}

	for _, tc := range []struct {
		fn   func() (*runnerpb.Grade, error)
		want string
	}{
		{func() (*runnerpb.Grade, error) {
			return nil, errors.New("Hash grading failed: UnresolvableGoldenAction: x")
		}, "Hash grading failed: UnresolvableGoldenAction: x"},
		{func() (*runnerpb.Grade, error) { panic("oops") }, "Grading error: grader panicked: oops"},
		{func() (*runnerpb.Grade, error) { return nil, nil }, "Grading error: grader returned no grade"},
	} {
		pg.set(func(context.Context, grading.Env, grading.Request) (*runnerpb.Grade, error) { return tc.fn() })
		if r := grade(t, h, &runnerpb.GradeTrialRequest{TrialId: "g"}); r.GetSuccess() || r.GetError() != tc.want || r.GetGrade() != nil {
			t.Errorf("got %+v, want error %q", r, tc.want)
		}
	}

	h2 := startRunner(t, h.db)
	h2.mustRegister(t, "g2", baseTask([]any{tool("calculator")}, nil, nil))
	if r := grade(t, h2, &runnerpb.GradeTrialRequest{TrialId: "g2"}); r.GetSuccess() || r.GetError() != "Grading error: no grader configured" {
		t.Errorf("no grader: %+v", r)
	}
}

func TestGradingEnvOfATrial(t *testing.T) {
	pg := &probeGrader{}
	h := startRunner(t, nil, withGrader(pg))
	h.mustRegister(t, "env", baseTask(
		[]any{tool("db_insert", "category", "write"), tool("write_file"), tool("calculator", "category", "read")},
		[]any{tool("read_file")},
		obj{"items": []any{}},
	))
	h.mustExec(t, "env", call{tool: "write_file", args: `{"path":"out/report.txt","content":"done"}`, callID: "w"})
	pg.set(func(ctx context.Context, env grading.Env, _ grading.Request) (*runnerpb.Grade, error) {
		if env.TrialID() != "env" || env.Spec().Task.TaskID != "t1" {
			t.Errorf("identity: %s %s", env.TrialID(), env.Spec().Task.TaskID)
		}
		if !slices.Equal(env.AgentTools(), []string{"db_insert", "write_file", "calculator"}) || !slices.Equal(env.UserTools(), []string{"read_file"}) {
			t.Errorf("tools: %v / %v", env.AgentTools(), env.UserTools())
		}
		// The judge is offered agent tools by these schemas: registered names, and the
		// category the task declared (a builtin's own without one), which decides what
		// it may call.
		var schemas []string
		for _, s := range env.AgentToolSchemas() {
			schemas = append(schemas, s.GetName()+":"+s.GetCategory())
		}
		if want := []string{"db_insert:write", "write_file:write", "calculator:read"}; !slices.Equal(schemas, want) {
			t.Errorf("AgentToolSchemas: %v, want %v", schemas, want)
		}
		if b, err := os.ReadFile(filepath.Join(env.WorkDir(), "out", "report.txt")); err != nil || string(b) != "done" {
			t.Errorf("WorkDir %s: %q %v", env.WorkDir(), b, err)
		}
		cases := []struct {
			tool, args string
			status     task.ToolCallStatus
			out        string
		}{
			{"calculator", `{"expression":"6*7"}`, task.ToolCallSuccess, "42"},
			{"db_insert", `{"table":"items","record":{"id":"golden"}}`, task.ToolCallSuccess, `{"id":"golden"}`},
			{"read_file", `{"path":"out/report.txt"}`, task.ToolCallToolNotFound, "Tool 'read_file' not found in agent tools"},
			{"calculator", `{}`, task.ToolCallInvalidArguments, `Invalid arguments for tool 'calculator': arguments: required: missing properties: ["expression"]`},
			{"calculator", `{"expression":"1/0"}`, task.ToolCallError, "division by zero"},
		}
		for _, c := range cases {
			st, out, err := env.Replay(ctx, c.tool, json.RawMessage(c.args))
			if err != nil || st != c.status || out != c.out {
				t.Errorf("Replay(%s %s) = %s %q %v, want %s %q", c.tool, c.args, st, out, err, c.status, c.out)
			}
		}
		if recs := env.Records(); len(recs) != 1 || recs[0].CallID != "w" {
			t.Errorf("replays were recorded: %+v", recs)
		}
		if _, err := env.DB().Hash(ctx, "env"); err != nil {
			t.Errorf("DB(): %v", err)
		}
		return &runnerpb.Grade{}, nil
	})
	if r := grade(t, h, &runnerpb.GradeTrialRequest{TrialId: "env"}); !r.GetSuccess() {
		t.Fatal(r.GetError())
	}
}

// Grading resets and restores the DB behind the runner's back; builtin reads
// during replay and after grading must see the DB as grading left it, not a
// cached table.
func TestGradingDirectDBWritesAreSeen(t *testing.T) {
	pg := &probeGrader{}
	h := startRunner(t, nil, withGrader(pg))
	h.mustRegister(t, "gc", baseTask([]any{tool("db_insert"), tool("db_find")}, nil, obj{"items": []any{obj{"id": 1}}}))
	h.mustExec(t, "gc", call{tool: "db_insert", args: `{"table":"items","record":{"id":"agent"}}`, callID: "a"})
	if got := h.mustExec(t, "gc", call{tool: "db_find", args: `{"table":"items"}`, callID: "b"}); got != `[{"id":1},{"id":"agent"}]` {
		t.Fatalf("before grading: %s", got)
	}
	replayedCh := make(chan []string, 1)
	pg.set(func(ctx context.Context, env grading.Env, _ grading.Request) (*runnerpb.Grade, error) {
		db := env.DB()
		if _, err := db.Snapshot(ctx, "gc", "pre_golden"); err != nil {
			return nil, err
		}
		if _, err := db.Reset(ctx, "gc"); err != nil {
			return nil, err
		}
		var replayed []string
		for _, c := range []struct{ tool, args string }{
			{"db_find", `{"table":"items"}`},
			{"db_insert", `{"table":"items","record":{"id":"golden"}}`},
			{"db_find", `{"table":"items"}`},
		} {
			_, out, err := env.Replay(ctx, c.tool, json.RawMessage(c.args))
			if err != nil {
				return nil, err
			}
			replayed = append(replayed, out)
		}
		if _, err := db.Restore(ctx, "gc", "pre_golden"); err != nil {
			return nil, err
		}
		replayedCh <- replayed
		return &runnerpb.Grade{}, nil
	})
	if r := grade(t, h, &runnerpb.GradeTrialRequest{TrialId: "gc"}); !r.GetSuccess() {
		t.Fatal(r.GetError())
	}
	want := []string{`[{"id":1}]`, `{"id":"golden"}`, `[{"id":1},{"id":"golden"}]`}
	if replayed := <-replayedCh; !slices.Equal(replayed, want) {
		t.Fatalf("replay outputs %q, want %q", replayed, want)
	}
	if got := h.mustExec(t, "gc", call{tool: "db_find", args: `{"table":"items"}`, callID: "c"}); got != `[{"id":1},{"id":"agent"}]` {
		t.Fatalf("after grading: %s, want the restored trial state", got)
	}
}

// Grading holds the trial: a call on the same trial waits for the grade, a
// call on another trial does not.
func TestGradingIsSerializedWithTheTrialsCalls(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	seen := make(chan []task.RecordedToolCall, 1)
	pg := &probeGrader{fn: func(_ context.Context, env grading.Env, _ grading.Request) (*runnerpb.Grade, error) {
		close(entered)
		<-release
		seen <- env.Records()
		return &runnerpb.Grade{}, nil
	}}
	h := startRunner(t, nil, withGrader(pg))
	h.mustRegister(t, "busy", baseTask([]any{tool("calculator")}, nil, nil))
	h.mustRegister(t, "free", baseTask([]any{tool("calculator")}, nil, nil))
	graded := make(chan *runnerpb.GradeTrialResponse, 1)
	go func() {
		r, _ := h.c.GradeTrial(context.Background(), &runnerpb.GradeTrialRequest{TrialId: "busy"})
		graded <- r
	}()
	<-entered
	called := make(chan *runnerpb.ExecuteToolResponse, 1)
	go func() {
		r, _ := h.c.ExecuteTool(context.Background(), &runnerpb.ExecuteToolRequest{TrialId: "busy", ToolName: "calculator", ArgumentsJson: `{"expression":"1"}`, CallId: "x"})
		called <- r
	}()
	// Another trial is not held up, and by the time its call returns the
	// busy trial's call has had every chance to run, were it not held.
	h.mustExec(t, "free", call{tool: "calculator", args: `{"expression":"2"}`, callID: "y"})
	close(release)
	if r := <-graded; !r.GetSuccess() {
		t.Fatalf("grade: %+v", r)
	}
	if r := <-called; r.GetStatus() != stSuccess {
		t.Fatalf("held call: %+v", r)
	}
	// The grader read the record after being released: the call had not run.
	if recs := <-seen; len(recs) != 0 {
		t.Fatalf("a call ran while its trial was being graded: %+v", recs)
	}
}
