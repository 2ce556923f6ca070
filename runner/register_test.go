package runner_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner/tools/builtin"
)

func compact(tb testing.TB, raw []byte) string {
	tb.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		tb.Fatal(err)
	}
	return buf.String()
}

// assertNothingLeft checks that a refused registration changed no state: no
// registration, no DB trial, no trial directory.
func assertNothingLeft(t *testing.T, h *harness, id string) {
	t.Helper()
	if n := h.srv.ActiveTrials(); n != 0 {
		t.Errorf("active trials = %d, want 0", n)
	}
	if h.dbHasTrial(t, id) {
		t.Errorf("DB still holds trial %q", id)
	}
	if e := h.workEntries(t); len(e) != 0 {
		t.Errorf("work dir not empty: %v", e)
	}
	resp := h.exec(t, id, call{tool: "calculator", args: `{"expression":"1"}`, callID: "probe"})
	if resp.GetStatus() != runnerpb.ExecutionStatus_EXECUTION_STATUS_TRIAL_NOT_FOUND {
		t.Errorf("ExecuteTool on refused trial: %s", resp.GetStatus())
	}
}

func TestRegisterProtocolVersionLock(t *testing.T) {
	h := startRunner(t, nil, withMinProtocol(3))
	calc := baseTask([]any{tool("calculator")}, nil, nil)
	cases := []struct {
		engine int32
		want   string
	}{
		{0, "engine protocol version 0 is below 3, the minimum this runner accepts: rebuild the runner image from the engine you are running, or pin an image tag that matches it"},
		{2, "engine protocol version 2 is below 3, the minimum this runner accepts: rebuild the runner image from the engine you are running, or pin an image tag that matches it"},
		{3, ""},
		{7, ""}, // a newer engine still sends call_id: a lower bound, not equality
	}
	for _, tc := range cases {
		id := "skew:" + string(rune('a'+tc.engine))
		resp := h.registerRaw(t, &runnerpb.RegisterTrialRequest{TrialId: id, TrialSpecJson: specJSON(t, id, calc), EngineProtocolVersion: tc.engine})
		if tc.want == "" {
			if !resp.GetSuccess() {
				t.Errorf("engine %d: refused: %s", tc.engine, resp.GetError())
			}
			continue
		}
		if resp.GetSuccess() || resp.GetError() != tc.want {
			t.Errorf("engine %d: success=%v error=%q, want %q", tc.engine, resp.GetSuccess(), resp.GetError(), tc.want)
		}
		if h.dbHasTrial(t, id) {
			t.Errorf("engine %d: DB trial created for a refused registration", tc.engine)
		}
	}
}

func TestRegisterDefaultMinimumIsEngineProtocolVersion(t *testing.T) {
	h := startRunner(t, nil)
	calc := baseTask([]any{tool("calculator")}, nil, nil)
	resp := h.registerRaw(t, &runnerpb.RegisterTrialRequest{TrialId: "old", TrialSpecJson: specJSON(t, "old", calc), EngineProtocolVersion: task.EngineProtocolVersion - 1})
	want := "engine protocol version 1 is below 2, the minimum this runner accepts"
	if resp.GetSuccess() || !strings.HasPrefix(resp.GetError(), want) {
		t.Fatalf("got success=%v %q, want prefix %q", resp.GetSuccess(), resp.GetError(), want)
	}
}

func TestRegisterStrictSpecDecoding(t *testing.T) {
	h := startRunner(t, nil)
	valid := specJSON(t, "strict", baseTask([]any{tool("calculator")}, nil, nil))
	mutate := func(f func(m obj)) string {
		var m obj
		if err := json.Unmarshal([]byte(valid), &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, _ := json.Marshal(m)
		return string(b)
	}
	cases := []struct {
		name, spec, want string
	}{
		{"unknown top-level key", mutate(func(m obj) { m["bogus"] = 1 }), "Invalid trial_spec_json: bogus: unknown key"},
		{"unknown nested key", mutate(func(m obj) {
			m["task"].(obj)["agent_tools"].([]any)[0].(obj)["sourc"] = obj{}
		}), "Invalid trial_spec_json: task.agent_tools[0].sourc: unknown key"},
		{"closed set", mutate(func(m obj) { m["task"].(obj)["grading"] = obj{"combine_method": "avg"} }),
			`Invalid trial_spec_json: task.grading.combine_method: "avg" is not one of weighted, all, any`},
		{"missing task", mutate(func(m obj) { delete(m, "task") }), "Invalid trial_spec_json: task: required"},
		{"malformed JSON", `{"trial_id":`, "Invalid trial_spec_json: invalid JSON: unexpected end of JSON input"},
		{"trial id mismatch", mutate(func(m obj) { m["trial_id"] = "other" }),
			`Invalid trial_spec_json: trial_id: "other" does not match the request's trial_id "strict"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := h.registerRaw(t, &runnerpb.RegisterTrialRequest{TrialId: "strict", TrialSpecJson: tc.spec, EngineProtocolVersion: task.EngineProtocolVersion})
			if resp.GetSuccess() || resp.GetError() != tc.want {
				t.Fatalf("got success=%v error=%q\nwant %q", resp.GetSuccess(), resp.GetError(), tc.want)
			}
			assertNothingLeft(t, h, "strict")
		})
	}
}

func TestRegisterToolOrderingContract(t *testing.T) {
	h := startRunner(t, nil)
	declared := json.RawMessage(`{"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]}`)
	taskDoc := baseTask(
		[]any{tool("calculator", "parameters", declared, "timeout_s", 5, "category", "compute"), tool("db_get", "category", "read"), tool("think")},
		[]any{tool("read_file"), tool("calculator")},
		obj{"items": []any{}},
	)
	resp := h.registerRaw(t, &runnerpb.RegisterTrialRequest{
		TrialId: "order:0", TrialSpecJson: specJSON(t, "order:0", taskDoc),
		EngineProtocolVersion: task.EngineProtocolVersion, DefaultToolTimeoutS: 12,
	})
	if !resp.GetSuccess() {
		t.Fatal(resp.GetError())
	}
	if resp.GetNumAgentTools() != 3 || resp.GetNumUserTools() != 2 || len(resp.GetToolSchemas()) != 5 {
		t.Fatalf("partition: agent=%d user=%d len=%d", resp.GetNumAgentTools(), resp.GetNumUserTools(), len(resp.GetToolSchemas()))
	}
	schemaOf := func(name string) string {
		b, _ := builtin.Lookup(name)
		return compact(t, b.Parameters)
	}
	want := []struct {
		name, params, category string
		timeout                float64
	}{
		{"calculator", compact(t, declared), "compute", 5}, // declared schema and timeout win
		{"db_get", schemaOf("db_get"), "read", 12},         // absent timeout_s: the request's default
		{"think", schemaOf("think"), "compute", 12},
		{"read_file", schemaOf("read_file"), "read", 12}, // absent category: the builtin's own
		{"calculator", schemaOf("calculator"), "compute", 12},
	}
	for i, w := range want {
		got := resp.GetToolSchemas()[i]
		if got.GetName() != w.name || got.GetParametersJson() != w.params || got.GetCategory() != w.category || got.GetTimeoutS() != w.timeout {
			t.Errorf("tool_schemas[%d] = {%s %s %s %v}, want {%s %s %s %v}", i,
				got.GetName(), got.GetParametersJson(), got.GetCategory(), got.GetTimeoutS(), w.name, w.params, w.category, w.timeout)
		}
		if got.GetDescription() != w.name+" tool" {
			t.Errorf("tool_schemas[%d].description = %q", i, got.GetDescription())
		}
	}

	// Without default_tool_timeout_s an absent timeout_s is 30 s.
	resp = h.mustRegister(t, "order:1", baseTask([]any{tool("think")}, nil, nil))
	if got := resp.GetToolSchemas()[0].GetTimeoutS(); got != 30 {
		t.Errorf("default timeout = %v, want 30", got)
	}

	// The partition routes: a user tool is not offered to the agent.
	r := h.exec(t, "order:0", call{tool: "read_file", args: `{"path":"x"}`, callID: "c1"})
	if r.GetStatus() != runnerpb.ExecutionStatus_EXECUTION_STATUS_TOOL_NOT_FOUND || r.GetErrorMessage() != "Tool 'read_file' not found in agent tools" {
		t.Errorf("agent read_file: %s %q", r.GetStatus(), r.GetErrorMessage())
	}
}

func TestRegisterRefusesUnrunnableTools(t *testing.T) {
	h := startRunner(t, nil)
	py := func(name, style string) obj {
		return tool(name, "source", obj{"toolset": "airline", "module_path": "tau_tools.book", "class_name": "Book", "invocation_style": style})
	}
	styles := "supported styles: builtin (source null or toolset \"builtin\"), tau_sync, mcp_async and mcp_server"
	cases := []struct {
		name  string
		tools []any
		want  string
	}{
		{"docker_compose_exec", []any{py("bash", "docker_compose_exec")},
			`task.agent_tools[0] (bash): source.invocation_style "docker_compose_exec" runs the tool as a command in a docker compose service's container (docker compose exec), and this runner starts no containers; ` + styles},
		{"unknown builtin", []any{tool("teleport")},
			`task.agent_tools[0] (teleport): no builtin tool named "teleport"; builtins: calculator, db_delete, db_find, db_get, db_insert, db_update, list_dir, read_file, think, transfer_to_human_agents, write_file`},
		{"reserved name", []any{testkitTool("_tolokaforge_get_state_", nil)},
			`task.agent_tools[0] (_tolokaforge_get_state_): "_tolokaforge_get_state_" is reserved for the state convention and cannot be offered to an actor`},
		{"bad schema", []any{tool("think", "parameters", obj{"type": 7})},
			`task.agent_tools[0] (think): parameters: invalid JSON Schema: parse JSON Schema: invalid value for "type": "7"`},
		{"bad command", []any{tool("x", "source", obj{"toolset": "k", "module_path": "", "class_name": "", "invocation_style": "mcp_server", "extra": obj{"command": "tolokaforge mcp"}})},
			`task.agent_tools[0] (x): source.extra.command: want a non-empty JSON array of strings, got "tolokaforge mcp"`},
		{"cwd escape", []any{tool("x", "source", obj{"toolset": "k", "module_path": "", "class_name": "", "invocation_style": "mcp_server", "extra": obj{"command": []any{"tolokaforge"}, "cwd": "../.."}})},
			`task.agent_tools[0] (x): source.extra.cwd: "../.." contains '..'; paths may not leave the working directory`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := h.register(t, "refuse", baseTask(tc.tools, nil, nil))
			if resp.GetSuccess() || resp.GetError() != tc.want {
				t.Fatalf("got success=%v\n error %q\n want  %q", resp.GetSuccess(), resp.GetError(), tc.want)
			}
			assertNothingLeft(t, h, "refuse")
		})
	}
}

func TestRegisterMCPToolMissingOnServerCleansUp(t *testing.T) {
	scratch := t.TempDir()
	h := startRunner(t, nil, withToolRW(scratch))
	pidfile := filepath.Join(scratch, "pids")
	resp := h.register(t, "missing", baseTask([]any{
		testkitTool("echo", obj{"TESTKIT_PIDFILE": pidfile}),
		testkitTool("fly", obj{"TESTKIT_PIDFILE": pidfile}),
	}, nil, nil))
	want := `task.agent_tools[1] (fly): the MCP server offers no tool "fly"; it offers: cwd, echo, exit, fail, getenv, incr, pid, sleep`
	if resp.GetSuccess() || resp.GetError() != want {
		t.Fatalf("got %v %q\nwant %q", resp.GetSuccess(), resp.GetError(), want)
	}
	assertNothingLeft(t, h, "missing")
	pids := readPids(t, pidfile)
	if len(pids) != 1 {
		t.Fatalf("servers started: %v, want one shared by both tools", pids)
	}
	waitDead(t, pids[0][0], pids[0][1])
}

func TestRegisterDuplicateRefusedAndReregisterAfterCleanup(t *testing.T) {
	h := startRunner(t, nil)
	taskDoc := baseTask([]any{tool("db_insert"), tool("db_find")}, nil, obj{"items": []any{obj{"id": 1}}})
	h.mustRegister(t, "dup:0", taskDoc)
	h.mustExec(t, "dup:0", call{tool: "db_insert", args: `{"table":"items","record":{"id":2}}`, callID: "c1"})

	resp := h.register(t, "dup:0", taskDoc)
	if resp.GetSuccess() || resp.GetError() != "Trial 'dup:0' is already registered" {
		t.Fatalf("duplicate: %v %q", resp.GetSuccess(), resp.GetError())
	}
	// The refusal left the live trial alone.
	if got := h.mustExec(t, "dup:0", call{tool: "db_find", args: `{"table":"items"}`, callID: "c2"}); got != `[{"id":1},{"id":2}]` {
		t.Fatalf("state after refused duplicate: %s", got)
	}

	if r := h.cleanup(t, "dup:0"); !r.GetSuccess() {
		t.Fatal(r.GetError())
	}
	h.mustRegister(t, "dup:0", taskDoc)
	if got := h.mustExec(t, "dup:0", call{tool: "db_find", args: `{"table":"items"}`, callID: "c1"}); got != `[{"id":1}]` {
		t.Fatalf("re-registered trial state: %s", got)
	}
}

func TestRegisterReplacesOrphanDBTrial(t *testing.T) {
	// A runner that died mid-trial leaves the DB trial behind; the host's retry
	// with the same id must still register.
	h := startRunner(t, nil)
	if _, err := h.db.c.Init(ctxT(t), "orphan", dbInit(obj{"items": []any{obj{"id": 99}}})); err != nil {
		t.Fatal(err)
	}
	h.mustRegister(t, "orphan", baseTask([]any{tool("db_find")}, nil, obj{"items": []any{obj{"id": 1}}}))
	if got := h.mustExec(t, "orphan", call{tool: "db_find", args: `{"table":"items"}`, callID: "c"}); got != `[{"id":1}]` {
		t.Fatalf("state = %s, want the registered initial state", got)
	}
}

func TestRegisterFailureAfterDBInitRemovesEverything(t *testing.T) {
	scratch := t.TempDir()
	h := startRunner(t, nil, withToolRW(scratch))
	pidfile := filepath.Join(scratch, "pids")
	taskDoc := baseTask([]any{tool("db_get"), testkitTool("echo", obj{"TESTKIT_PIDFILE": pidfile})}, nil, obj{"items": []any{}})
	taskDoc["initialization_actions"] = []any{
		obj{"env_type": "assistant", "tool_name": "echo", "arguments": obj{"text": "hi"}},
		obj{"env_type": "assistant", "tool_name": "db_get", "arguments": obj{"table": "items", "key": "nope"}},
	}
	resp := h.register(t, "late-fail", taskDoc)
	want := `task.initialization_actions[1] (db_get) failed: error: no record with id="nope" in table "items"`
	if resp.GetSuccess() || resp.GetError() != want {
		t.Fatalf("got %v %q\nwant %q", resp.GetSuccess(), resp.GetError(), want)
	}
	assertNothingLeft(t, h, "late-fail")
	pids := readPids(t, pidfile)
	waitDead(t, pids[0][0], pids[0][1])
	// And the id is free again.
	delete(taskDoc, "initialization_actions")
	h.mustRegister(t, "late-fail", taskDoc)
}

func TestInitActionsRoutedByEnvType(t *testing.T) {
	h := startRunner(t, nil)
	pg := &probeGrader{}
	h2 := startRunner(t, h.db, withGrader(pg))
	taskDoc := baseTask([]any{tool("db_insert"), tool("db_find")}, []any{tool("write_file"), tool("read_file")}, obj{"items": []any{}})
	taskDoc["initialization_actions"] = []any{
		obj{"env_type": "assistant", "tool_name": "db_insert", "arguments": obj{"table": "items", "record": obj{"id": "seeded"}}},
		obj{"env_type": "user", "tool_name": "write_file", "arguments": obj{"path": "notes/hello.txt", "content": "from init"}},
	}
	h2.mustRegister(t, "init:0", taskDoc)
	if got := h2.mustExec(t, "init:0", call{tool: "db_find", args: `{"table":"items"}`, callID: "a"}); got != `[{"id":"seeded"}]` {
		t.Errorf("agent init action: items = %s", got)
	}
	if got := h2.mustExec(t, "init:0", call{tool: "read_file", args: `{"path":"notes/hello.txt"}`, callID: "b", executor: "user"}); got != "from init" {
		t.Errorf("user init action: file = %q", got)
	}
	// Set-up is not a call either actor made: only the two calls above are recorded.
	recs := recordsOf(t, h2, pg, "init:0")
	if len(recs) != 2 || recs[0].ToolName != "db_find" || recs[1].ToolName != "read_file" {
		t.Errorf("records = %+v", recs)
	}

	// An action naming a tool only the other actor has is refused.
	wrong := baseTask([]any{tool("db_insert")}, []any{tool("write_file")}, nil)
	wrong["initialization_actions"] = []any{obj{"env_type": "assistant", "tool_name": "write_file", "arguments": obj{"path": "x", "content": ""}}}
	resp := h.register(t, "init:1", wrong)
	want := `task.initialization_actions[0]: tool "write_file" not found in agent tools (env_type "assistant" routes there)`
	if resp.GetSuccess() || resp.GetError() != want {
		t.Fatalf("got %v %q", resp.GetSuccess(), resp.GetError())
	}
	if _, err := os.Stat(filepath.Join(h.work, "x")); err == nil {
		t.Error("refused action wrote a file")
	}
}
