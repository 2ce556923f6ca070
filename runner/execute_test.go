package runner_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner"
)

const (
	stSuccess  = runnerpb.ExecutionStatus_EXECUTION_STATUS_SUCCESS
	stError    = runnerpb.ExecutionStatus_EXECUTION_STATUS_ERROR
	stTimeout  = runnerpb.ExecutionStatus_EXECUTION_STATUS_TIMEOUT
	stNotFound = runnerpb.ExecutionStatus_EXECUTION_STATUS_TOOL_NOT_FOUND
	stInvalid  = runnerpb.ExecutionStatus_EXECUTION_STATUS_INVALID_ARGUMENTS
	stNoTrial  = runnerpb.ExecutionStatus_EXECUTION_STATUS_TRIAL_NOT_FOUND
)

func TestExecuteEmptyCallIDIsInvalidArgument(t *testing.T) {
	pg := &probeGrader{}
	h := startRunner(t, nil, withGrader(pg))
	h.mustRegister(t, "cid", baseTask([]any{tool("calculator")}, nil, nil))
	_, err := h.c.ExecuteTool(ctxT(t), &runnerpb.ExecuteToolRequest{TrialId: "cid", ToolName: "calculator", ArgumentsJson: `{"expression":"1"}`})
	if status.Code(err) != codes.InvalidArgument ||
		status.Convert(err).Message() != "call_id is required: it is the trial's episode-unique tool-call id that joins a call to its result" {
		t.Fatalf("err = %v", err)
	}
	// Raised before anything else: even an unknown trial gets the same answer.
	_, err = h.c.ExecuteTool(ctxT(t), &runnerpb.ExecuteToolRequest{TrialId: "ghost", ToolName: "calculator"})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("unknown trial, empty call_id: %v", err)
	}
	if recs := recordsOf(t, h, pg, "cid"); len(recs) != 0 {
		t.Fatalf("records = %+v, want none", recs)
	}
}

func TestExecuteUnknownTrialIsNotRecorded(t *testing.T) {
	pg := &probeGrader{}
	h := startRunner(t, nil, withGrader(pg))
	resp := h.exec(t, "ghost", call{tool: "calculator", args: `{"expression":"1"}`, callID: "c1"})
	if resp.GetStatus() != stNoTrial || resp.GetErrorMessage() != "Trial 'ghost' not found" || resp.GetOutput() != "" {
		t.Fatalf("got %s %q %q", resp.GetStatus(), resp.GetErrorMessage(), resp.GetOutput())
	}
	// Registering the id afterwards starts from an empty record, and the call
	// id the lost call used is free.
	h.mustRegister(t, "ghost", baseTask([]any{tool("calculator")}, nil, nil))
	if got := h.mustExec(t, "ghost", call{tool: "calculator", args: `{"expression":"2*3"}`, callID: "c1"}); got != "6" {
		t.Fatalf("c1 = %q", got)
	}
	recs := recordsOf(t, h, pg, "ghost")
	if len(recs) != 1 || recs[0].Sequence != 0 || recs[0].Output != "6" {
		t.Fatalf("records = %+v", recs)
	}
}

func TestExecuteStatusesAndRecord(t *testing.T) {
	pg := &probeGrader{}
	h := startRunner(t, nil, withGrader(pg), withExtra(boomTool, napTool))
	h.mustRegister(t, "st", baseTask(
		[]any{tool("db_insert"), tool("db_get"), tool("calculator"), tool("boom"), tool("nap")},
		[]any{tool("calculator")},
		obj{"items": []any{obj{"id": "a", "n": 1}}},
	))
	cases := []struct {
		c        call
		status   runnerpb.ExecutionStatus
		output   string
		errMsg   string
		recArgs  string
		executor string
	}{
		{call{tool: "calculator", args: `{"expression": "2+3*4"}`}, stSuccess, "14", "", `{"expression":"2+3*4"}`, "agent"},
		{call{tool: "calculator", args: `{"expression":"2**10"}`, executor: "user"}, stSuccess, "1024", "", `{"expression":"2**10"}`, "user"},
		{call{tool: "db_get", args: `{"table":"items","key":"a"}`, executor: "agent"}, stSuccess, `{"id":"a","n":1}`, "", `{"table":"items","key":"a"}`, "agent"},
		{call{tool: "db_get", args: `{"table":"items","key":"a"}`, executor: "admin"}, stInvalid, "",
			`Invalid executor "admin": want "agent" or "user"`, `{}`, "admin"},
		{call{tool: "teleport", args: `{"x": 1}`}, stNotFound, "", "Tool 'teleport' not found in agent tools", `{"x":1}`, "agent"},
		{call{tool: "db_insert", args: `{"table":"items"}`, executor: "user"}, stNotFound, "", "Tool 'db_insert' not found in user tools", `{"table":"items"}`, "user"},
		{call{tool: "db_insert", args: `{"table":"items","record":"x"}`}, stInvalid, "",
			`Invalid arguments for tool 'db_insert': arguments.record: type: x has type "string", want "object"`, `{}`, "agent"},
		{call{tool: "db_insert", args: `{"table":"","record":{}}`}, stInvalid, "",
			`Invalid arguments for tool 'db_insert': arguments.table: minLength: "" contains 0 Unicode code points, fewer than 1`, `{}`, "agent"},
		{call{tool: "db_insert", args: `{"table":"items","record":{},"extra":1}`}, stInvalid, "",
			`Invalid arguments for tool 'db_insert': arguments: unexpected additional properties ["extra"]`, `{}`, "agent"},
		{call{tool: "db_insert", args: ``}, stInvalid, "",
			`Invalid arguments for tool 'db_insert': arguments: required: missing properties: ["table" "record"]`, `{}`, "agent"},
		{call{tool: "db_insert", args: `[1,2]`}, stInvalid, "",
			`Invalid arguments for tool 'db_insert': arguments: want a JSON object, got array`, `{}`, "agent"},
		{call{tool: "db_insert", args: `{"table":`}, stInvalid, "",
			`Invalid arguments for tool 'db_insert': arguments: not valid JSON: unexpected EOF`, `{}`, "agent"},
		{call{tool: "db_get", args: `{"table":"items","key":"missing"}`}, stError, "", `no record with id="missing" in table "items"`, `{"table":"items","key":"missing"}`, "agent"},
		{call{tool: "calculator", args: `{"expression":"1/0"}`}, stError, "", "division by zero", `{"expression":"1/0"}`, "agent"},
		{call{tool: "boom", args: `{}`}, stError, "", `tool "boom" panicked: kaboom`, `{}`, "agent"},
		{call{tool: "nap", args: `{}`, timeout: 0.05}, stTimeout, "", "Tool execution timed out after 0.05s", `{}`, "agent"},
		// The runner survived the panic and the timeout.
		{call{tool: "calculator", args: `{"expression":"(1+2)*-3"}`}, stSuccess, "-9", "", `{"expression":"(1+2)*-3"}`, "agent"},
	}
	for i, tc := range cases {
		tc.c.callID = "call-" + string(rune('A'+i))
		resp := h.exec(t, "st", tc.c)
		if resp.GetStatus() != tc.status || resp.GetOutput() != tc.output || resp.GetErrorMessage() != tc.errMsg {
			t.Errorf("case %d %s %s: got %s %q %q\n want %s %q %q", i, tc.c.tool, tc.c.args,
				resp.GetStatus(), resp.GetOutput(), resp.GetErrorMessage(), tc.status, tc.output, tc.errMsg)
		}
		wantExit := int32(1)
		if tc.status == stSuccess {
			wantExit = 0
		}
		if m := resp.GetMetrics(); m.GetExitCode() != wantExit || m.GetLatencySeconds() <= 0 {
			t.Errorf("case %d metrics = %+v", i, m)
		}
	}
	recs := recordsOf(t, h, pg, "st")
	if len(recs) != len(cases) {
		t.Fatalf("%d records, want %d", len(recs), len(cases))
	}
	for i, tc := range cases {
		r := recs[i]
		wantOut := tc.output
		if tc.status != stSuccess {
			wantOut = tc.errMsg
		}
		wantStatus := map[runnerpb.ExecutionStatus]task.ToolCallStatus{
			stSuccess: task.ToolCallSuccess, stError: task.ToolCallError, stTimeout: task.ToolCallTimeout,
			stNotFound: task.ToolCallToolNotFound, stInvalid: task.ToolCallInvalidArguments,
		}[tc.status]
		if r.CallID != "call-"+string(rune('A'+i)) || r.Sequence != i || r.ToolName != tc.c.tool || string(r.Arguments) != tc.recArgs ||
			r.Executor != tc.executor || r.Status != wantStatus || r.Output != wantOut || r.Timestamp.IsZero() {
			t.Errorf("record %d = %+v (args %s)", i, r, r.Arguments)
		}
	}
}

func TestExecuteTimeoutBudgetResolution(t *testing.T) {
	h := startRunner(t, nil, withExtra(napTool))
	nap := func(extra ...any) obj { return tool("nap", extra...) }
	h.mustRegister(t, "tool-budget", baseTask([]any{nap("timeout_s", 0.1)}, nil, nil))
	resp := h.registerRaw(t, &runnerpb.RegisterTrialRequest{
		TrialId: "trial-budget", TrialSpecJson: specJSON(t, "trial-budget", baseTask([]any{nap()}, nil, nil)),
		EngineProtocolVersion: task.EngineProtocolVersion, DefaultToolTimeoutS: 0.15,
	})
	if !resp.GetSuccess() {
		t.Fatal(resp.GetError())
	}
	cases := []struct {
		trial   string
		timeout float64
		want    string
	}{
		{"tool-budget", 0, "Tool execution timed out after 0.1s"},     // the tool's timeout_s
		{"tool-budget", 0.05, "Tool execution timed out after 0.05s"}, // a positive override wins
		{"trial-budget", 0, "Tool execution timed out after 0.15s"},   // the trial's default
		{"trial-budget", -1, "Tool execution timed out after 0.15s"},  // non-positive: no override
	}
	for i, tc := range cases {
		r := h.exec(t, tc.trial, call{tool: "nap", args: "{}", callID: "n" + string(rune('0'+i)), timeout: tc.timeout})
		if r.GetStatus() != stTimeout || r.GetErrorMessage() != tc.want {
			t.Errorf("case %d: %s %q, want TIMEOUT %q", i, r.GetStatus(), r.GetErrorMessage(), tc.want)
		}
	}
}

// A pack asking for a day (or 1e9 s) per tool call gets the runner's cap, so
// one trial cannot hold a runner's slot indefinitely.
func TestExecuteToolBudgetIsCapped(t *testing.T) {
	h := startRunner(t, nil, withExtra(napTool), func(c *runner.Config) { c.MaxToolTimeout = 120 * time.Millisecond })
	h.mustRegister(t, "capped", baseTask([]any{tool("nap", "timeout_s", 1e9)}, nil, nil))
	for i, override := range []float64{0, 86400} { // the tool's timeout_s, then a call override
		r := h.exec(t, "capped", call{tool: "nap", args: "{}", callID: "c" + string(rune('0'+i)), timeout: override})
		if r.GetStatus() != stTimeout || r.GetErrorMessage() != "Tool execution timed out after 0.12s" {
			t.Errorf("override %g: %s %q, want TIMEOUT after the 0.12s cap", override, r.GetStatus(), r.GetErrorMessage())
		}
	}
}

func TestExecuteMCPTimeoutRebuildsServer(t *testing.T) {
	scratch := t.TempDir()
	h := startRunner(t, nil, withToolRW(scratch))
	pidfile := filepath.Join(scratch, "pids")
	env := obj{"TESTKIT_PIDFILE": pidfile}
	h.mustRegister(t, "mcp-timeout", baseTask([]any{testkitTool("incr", env), testkitTool("pid", env), testkitTool("sleep", env)}, nil, obj{"counters": []any{}}))

	if got := h.mustExec(t, "mcp-timeout", call{tool: "incr", args: `{"key":"a"}`, callID: "1"}); got != "1" {
		t.Fatalf("incr = %s", got)
	}
	first := h.mustExec(t, "mcp-timeout", call{tool: "pid", args: `{}`, callID: "2"})
	r := h.exec(t, "mcp-timeout", call{tool: "sleep", args: `{"seconds":30}`, callID: "3", timeout: 0.3})
	if r.GetStatus() != stTimeout || r.GetErrorMessage() != "Tool execution timed out after 0.3s" {
		t.Fatalf("sleep: %s %q", r.GetStatus(), r.GetErrorMessage())
	}
	second := h.mustExec(t, "mcp-timeout", call{tool: "pid", args: `{}`, callID: "4"})
	if second == first {
		t.Fatalf("server not rebuilt: pid %s before and after the timeout", first)
	}
	// The rebuilt server was reloaded from the DB: the count survives.
	if got := h.mustExec(t, "mcp-timeout", call{tool: "incr", args: `{"key":"a"}`, callID: "5"}); got != "2" {
		t.Fatalf("incr after rebuild = %s, want 2", got)
	}
	pids := readPids(t, pidfile)
	if len(pids) != 2 {
		t.Fatalf("servers started: %v", pids)
	}
	waitDead(t, pids[0][0], pids[0][1]) // the old group is gone
	if !alive(pids[1][0]) {
		t.Fatal("new server not running")
	}
}

func TestExecuteMCPToolErrorAndEnvironment(t *testing.T) {
	t.Setenv("RUNNER_SECRET_TOKEN", "s3cr3t")
	h := startRunner(t, nil)
	env := obj{"TASK_SETTING": "on"}
	h.mustRegister(t, "mcp-env", baseTask([]any{testkitTool("fail", env), testkitTool("getenv", env), testkitTool("cwd", env)}, nil, nil))
	r := h.exec(t, "mcp-env", call{tool: "fail", args: `{"message":"card declined"}`, callID: "1"})
	if r.GetStatus() != stError || r.GetErrorMessage() != "card declined" {
		t.Fatalf("fail: %s %q", r.GetStatus(), r.GetErrorMessage())
	}
	r = h.exec(t, "mcp-env", call{tool: "fail", args: `{}`, callID: "2"})
	if r.GetStatus() != stInvalid || !strings.Contains(r.GetErrorMessage(), `missing properties: ["message"]`) {
		t.Fatalf("fail without message (server schema): %s %q", r.GetStatus(), r.GetErrorMessage())
	}
	if got := h.mustExec(t, "mcp-env", call{tool: "getenv", args: `{"name":"RUNNER_SECRET_TOKEN"}`, callID: "3"}); got != "" {
		t.Errorf("the runner's environment leaked into the MCP server: %q", got)
	}
	if got := h.mustExec(t, "mcp-env", call{tool: "getenv", args: `{"name":"TASK_SETTING"}`, callID: "4"}); got != "on" {
		t.Errorf("source env: %q", got)
	}
	cwd := h.mustExec(t, "mcp-env", call{tool: "cwd", args: `{}`, callID: "5"})
	if filepath.Dir(cwd) != h.work {
		t.Errorf("cwd %q is not the trial's directory under %q", cwd, h.work)
	}
}

func TestExecuteRepeatedCallIDIsIdempotent(t *testing.T) {
	pg := &probeGrader{}
	h := startRunner(t, nil, withGrader(pg))
	h.mustRegister(t, "idem", baseTask([]any{tool("db_insert"), tool("db_find"), testkitTool("incr", nil)}, nil, obj{"items": []any{}, "counters": []any{}}))
	first := h.exec(t, "idem", call{tool: "db_insert", args: `{"table":"items","record":{"id":1}}`, callID: "c1"})
	again := h.exec(t, "idem", call{tool: "db_insert", args: ` { "table": "items", "record": {"id": 1} } `, callID: "c1"})
	if first.GetStatus() != stSuccess || !proto.Equal(first, again) {
		t.Fatalf("retry answered %v, want the recorded %v", again, first)
	}
	if got := h.mustExec(t, "idem", call{tool: "db_find", args: `{"table":"items"}`, callID: "c2"}); got != `[{"id":1}]` {
		t.Fatalf("insert ran twice: %s", got)
	}
	// MCP: the counter moves once.
	h.mustExec(t, "idem", call{tool: "incr", args: `{"key":"k"}`, callID: "c3"})
	if got := h.mustExec(t, "idem", call{tool: "incr", args: `{"key":"k"}`, callID: "c3"}); got != "1" {
		t.Fatalf("repeated incr = %s, want the recorded 1", got)
	}
	if got := h.mustExec(t, "idem", call{tool: "incr", args: `{"key":"k"}`, callID: "c4"}); got != "2" {
		t.Fatalf("fresh incr = %s, want 2", got)
	}
	// A refused call is replayed as refused too.
	bad := h.exec(t, "idem", call{tool: "db_insert", args: `{}`, callID: "c5"})
	if badAgain := h.exec(t, "idem", call{tool: "db_insert", args: `{}`, callID: "c5"}); !proto.Equal(bad, badAgain) || bad.GetStatus() != stInvalid {
		t.Fatalf("refused call retry: %v vs %v", bad, badAgain)
	}

	for _, other := range []call{
		{tool: "db_insert", args: `{"table":"items","record":{"id":2}}`, callID: "c1"},
		{tool: "db_find", args: `{"table":"items","record":{"id":1}}`, callID: "c1"},
		{tool: "db_insert", args: `{"table":"items","record":{"id":1}}`, callID: "c1", executor: "user"},
	} {
		_, err := h.c.ExecuteTool(ctxT(t), &runnerpb.ExecuteToolRequest{TrialId: "idem", ToolName: other.tool, ArgumentsJson: other.args, CallId: other.callID, Executor: other.executor})
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), `call_id "c1" was already used for tool "db_insert"`) {
			t.Errorf("reuse %+v: %v", other, err)
		}
	}
	recs := recordsOf(t, h, pg, "idem")
	var ids []string
	for _, r := range recs {
		ids = append(ids, r.CallID)
	}
	if strings.Join(ids, ",") != "c1,c2,c3,c4,c5" {
		t.Fatalf("recorded call ids %v", ids)
	}
}

func TestExecuteStateMutationsAndSequence(t *testing.T) {
	pg := &probeGrader{}
	h := startRunner(t, nil, withGrader(pg))
	h.mustRegister(t, "mut", baseTask(
		[]any{tool("db_insert"), tool("db_get"), tool("db_update"), tool("db_delete"), tool("calculator"), testkitTool("incr", nil), testkitTool("echo", nil)},
		nil, obj{"items": []any{obj{"id": 1, "v": "a"}}, "counters": []any{}},
	))
	cases := []struct {
		c    call
		want int32
	}{
		{call{tool: "db_insert", args: `{"table":"items","record":{"id":2,"v":"b"}}`}, 1},
		{call{tool: "db_get", args: `{"table":"items","key":2}`}, 0},
		{call{tool: "db_update", args: `{"table":"items","filter":{"id":1},"set":{"v":"z"}}`}, 1},
		{call{tool: "db_delete", args: `{"table":"items","filter":{"id":2}}`}, 1},
		{call{tool: "calculator", args: `{"expression":"1+1"}`}, 0},
		{call{tool: "incr", args: `{"key":"x"}`}, 1},   // one table written back
		{call{tool: "echo", args: `{"text":"hi"}`}, 0}, // nothing changed on the server
		{call{tool: "db_insert", args: `{"table":"items","record":{"id":3}}`}, 1},
		{call{tool: "incr", args: `{"key":"x"}`}, 1}, // a builtin write in between forces a full write-back
	}
	for i, tc := range cases {
		tc.c.callID = "m" + string(rune('0'+i))
		r := h.exec(t, "mut", tc.c)
		if r.GetStatus() != stSuccess || r.GetMetrics().GetStateMutations() != tc.want {
			t.Errorf("case %d %s: %s %q mutations=%d, want %d", i, tc.c.tool, r.GetStatus(), r.GetErrorMessage(), r.GetMetrics().GetStateMutations(), tc.want)
		}
	}
	st := h.state(t, "mut", true)
	if want := `{"counters":[{"id":"x","n":2}],"items":[{"id":1,"v":"z"},{"id":3}]}`; st.GetStateJson() != want {
		t.Errorf("state = %s\nwant    %s", st.GetStateJson(), want)
	}
	for i, r := range recordsOf(t, h, pg, "mut") {
		if r.Sequence != i {
			t.Errorf("record %d has sequence %d", i, r.Sequence)
		}
	}
}

// A tool declared category "read" skips the write-back round trip, but
// whatever reads the DB next (another tool, GetState) flushes it first, so a
// mis-declared tool's change is never lost.
func TestExecuteReadCallsDeferWriteBack(t *testing.T) {
	h := startRunner(t, nil)
	h.mustRegister(t, "rd", baseTask([]any{testkitTool("incr", nil, "category", "read"), tool("db_find")}, nil, obj{"counters": []any{}}))
	r := h.exec(t, "rd", call{tool: "incr", args: `{"key":"k"}`, callID: "1"})
	if r.GetStatus() != stSuccess || r.GetMetrics().GetStateMutations() != 0 {
		t.Fatalf("read call: %+v", r)
	}
	// A builtin reading the table sees the server's change.
	if got := h.mustExec(t, "rd", call{tool: "db_find", args: `{"table":"counters"}`, callID: "2"}); got != `[{"id":"k","n":1}]` {
		t.Fatalf("db_find after a pending read call = %s", got)
	}
	h.mustExec(t, "rd", call{tool: "incr", args: `{"key":"k"}`, callID: "3"})
	if got := h.state(t, "rd", true).GetStateJson(); got != `{"counters":[{"id":"k","n":2}]}` {
		t.Fatalf("GetState after a pending read call = %s", got)
	}
}

func TestExecuteMCPServerCrashIsAnErrorAndTheServerIsRebuilt(t *testing.T) {
	h := startRunner(t, nil)
	h.mustRegister(t, "crash", baseTask([]any{testkitTool("incr", nil), testkitTool("exit", nil)}, nil, obj{"counters": []any{}}))
	h.mustExec(t, "crash", call{tool: "incr", args: `{"key":"k"}`, callID: "1"})
	r := h.exec(t, "crash", call{tool: "exit", args: `{}`, callID: "2"})
	if r.GetStatus() != stError || !strings.HasPrefix(r.GetErrorMessage(), "MCP server call exit: ") {
		t.Fatalf("crash: %s %q", r.GetStatus(), r.GetErrorMessage())
	}
	if got := h.mustExec(t, "crash", call{tool: "incr", args: `{"key":"k"}`, callID: "3"}); got != "2" {
		t.Fatalf("incr on the rebuilt server = %s, want 2", got)
	}
	// An empty executor and "agent" are the same call for a retry.
	if got := h.mustExec(t, "crash", call{tool: "incr", args: `{"key":"k"}`, callID: "3", executor: "agent"}); got != "2" {
		t.Fatalf("retry with executor agent = %s", got)
	}
}
