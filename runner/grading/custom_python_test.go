package grading

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner/grading/timeline"
)

const debianPython = "/usr/bin/python3"

// pythonTrial is the shop trial graded by block (custom_checks, JSON) with suite as
// its checks.py, shipped in tool_artifacts and unpacked where the runner unpacks
// them. customers is a dict table in the pack (extra.dict_tables on a Python tool).
func pythonTrial(t *testing.T, block, suite string) *testEnv {
	t.Helper()
	if _, err := os.Stat(debianPython); err != nil {
		t.Fatalf("needs Debian's %s (make python-deps): %v", debianPython, err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "checks.py"), []byte(suite), 0o644); err != nil {
		t.Fatal(err)
	}
	db := newTestDB(t)
	env := newTrial(t, db, loadShopTask(t, func(td *task.TaskDescription) {
		customOnly(t, block)(td)
		td.ToolArtifacts = map[string]string{"checks.py": base64.StdEncoding.EncodeToString([]byte(suite))}
		td.AgentTools[0].Source = &task.ToolSource{Toolset: "shop", ModulePath: "shop_tools.list_products", ClassName: "ListProducts",
			Extra: map[string]json.RawMessage{"dict_tables": json.RawMessage(`{"customers":"id"}`)}}
	}))
	env.python = PythonSite{Python: debianPython, ArtifactsDir: dir, ScratchDir: filepath.Join(t.TempDir(), "verifier")}
	return env
}

const suiteHeader = "from tolokaforge.core.grading.checks_interface import CheckContext, CheckPassed, CheckFailed, CheckSkipped, check, init\n"

const shopSuite = suiteHeader + `
C = None

@init(interface_version="1.0")
def setup(ctx: CheckContext):
    global C
    C = ctx

@check
def order_paid():
    orders = C.effects["orders"]
    if orders and orders[0]["status"] == "paid":
        return CheckPassed(f"order {orders[0]['id']} is paid")
    return CheckFailed("no paid order")

@check
def balance_debited():
    before = C.initial_state.get("customers.C-101.balance")
    after = C.final_state.data["customers"]["C-101"]["balance"]
    if after < before:
        return CheckPassed(f"balance {before} -> {after}")
    return CheckFailed(f"balance unchanged at {after}")

@check
def followed_policy():
    names = [c.name for c in C.tool_calls]
    results = [m.content for m in C.transcript.messages if m.role == "tool"]
    return CheckFailed(f"{C.transcript.messages[0].role} policy, calls {names}, {len(results)} results", score=0.5)

@check
def crashes():
    return CheckPassed(C.effects["refunds"])
`

// The Python suite and the CEL checks score together: a Python check's own score
// (partial credit) enters the mean, one that raises is an error scored 0, and the
// results carry every check.
func TestPythonChecksGrade(t *testing.T) {
	env := pythonTrial(t, `{"enabled":true,"file":"checks.py","timeout_seconds":20,"checks":[{"name":"one-order","expr":"db.orders.size() == 1"}]}`, shopSuite)
	g := mustGrade(t, env, agentRun(t, env, goldenPlaceOrderArgs, "O-001", goldenFinal))
	want := []*runnerpb.CustomCheckResult{
		{CheckName: "one-order", Status: "passed", Score: 1},
		{CheckName: "order_paid", Status: "passed", Score: 1, Message: "order O-001 is paid", DetailsJson: "{}"},
		{CheckName: "balance_debited", Status: "passed", Score: 1, Message: "balance 300.0 -> 141.01", DetailsJson: "{}"},
		{CheckName: "followed_policy", Status: "failed", Score: 0.5, DetailsJson: "{}",
			Message: "system policy, calls ['list_products', 'get_customer', 'place_order', 'confirm_payment'], 4 results"},
	}
	if len(g.CustomChecks) != 5 {
		t.Fatalf("custom_checks = %v, want 5 results", g.CustomChecks)
	}
	crash := g.CustomChecks[4]
	g.CustomChecks = g.CustomChecks[:4]
	assertCustom(t, g.CustomChecks, want)
	if crash.CheckName != "crashes" || crash.Status != "error" || crash.Score != 0 || crash.Message != "raised KeyError: 'refunds'" {
		t.Errorf("the raising check = %v", crash)
	}
	reasons := "Custom checks: score=0.7 (3 passed, 1 failed, 0 skipped, 1 errored and scored 0); " +
		"followed_policy: failed: system policy, calls ['list_products', 'get_customer', 'place_order', 'confirm_payment'], 4 results; " +
		"crashes: error: raised KeyError: 'refunds'"
	if g.Components.CustomChecks != 0.7 || g.Score != 0.7 || g.Reasons != reasons {
		t.Errorf("grade = %v\nwant reasons %s", g, reasons)
	}
}

// A suite that cannot run fails the RPC under fail_on_error (the default), naming
// why; under fail_on_error: false it is named in the segment, the checks that ran
// still score, and with none the component is unscored.
func TestPythonSuiteFailure(t *testing.T) {
	missing := suiteHeader + "from check_helpers import get_order\n"
	hangs := suiteHeader + `
import time

@check
def quick():
    return CheckPassed("quick")

@check
def slow():
    time.sleep(60)
`
	initHangs := suiteHeader + `
import time

@init(interface_version="1.0")
def setup(ctx):
    time.sleep(60)

@check
def quick():
    return CheckPassed("quick")
`
	for _, tc := range []struct {
		name, block, suite string
		wantErr            string
		reasons            string
		score              float64
	}{
		{name: "a missing module under fail_on_error", block: `{"enabled":true,"file":"checks.py"}`, suite: missing,
			wantErr: `Grading error: custom_checks failed to run (fail_on_error is true): Python checks checks.py: module "check_helpers" not found (ModuleNotFoundError: No module named 'check_helpers'); relative_imports: []`},
		{name: "a missing module, fail_on_error false, nothing else", block: `{"enabled":true,"fail_on_error":false,"file":"checks.py"}`, suite: missing, score: notEvaluated,
			reasons: `Custom checks: the suite failed to run — Python checks checks.py: module "check_helpers" not found (ModuleNotFoundError: No module named 'check_helpers'); relative_imports: []` +
				" | no component was scored, yet the task asked for custom_checks (configured and weighted): nothing it asked for was counted"},
		{name: "a missing module, fail_on_error false, beside a CEL check", block: `{"enabled":true,"fail_on_error":false,"file":"checks.py","checks":[{"name":"c","expr":"true"}]}`, suite: missing, score: 1,
			reasons: `Custom checks: score=1 (1 passed, 0 failed, 0 skipped); Python checks checks.py: module "check_helpers" not found (ModuleNotFoundError: No module named 'check_helpers'); relative_imports: []`},
		// A hang scores 0 like a crash, whatever fail_on_error says (issue 40,
		// finding 6): before, fail_on_error: false left it out of the mean
		// (score 1) and fail_on_error failed the RPC.
		{name: "a hang under fail_on_error", block: `{"enabled":true,"file":"checks.py","timeout_seconds":1}`, suite: hangs, score: 0.5,
			reasons: "Custom checks: score=0.5 (1 passed, 0 failed, 0 skipped, 1 errored and scored 0); " +
				"slow: error: did not finish within the suite's timeout_seconds (1s); " +
				"Python checks checks.py: did not finish within its timeout_seconds (1s); its process group was killed; checks that did not finish: slow"},
		{name: "a hang, fail_on_error false", block: `{"enabled":true,"fail_on_error":false,"file":"checks.py","timeout_seconds":1}`, suite: hangs, score: 0.5,
			reasons: "Custom checks: score=0.5 (1 passed, 0 failed, 0 skipped, 1 errored and scored 0); " +
				"slow: error: did not finish within the suite's timeout_seconds (1s); " +
				"Python checks checks.py: did not finish within its timeout_seconds (1s); its process group was killed; checks that did not finish: slow"},
		{name: "an @init that hangs, fail_on_error false", block: `{"enabled":true,"fail_on_error":false,"file":"checks.py","timeout_seconds":1}`, suite: initHangs, score: 0,
			reasons: "Custom checks: score=0 (0 passed, 0 failed, 0 skipped, 1 errored and scored 0); " +
				"quick: error: did not finish within the suite's timeout_seconds (1s); " +
				"Python checks checks.py: did not finish within its timeout_seconds (1s); its process group was killed; checks that did not finish: quick"},
		{name: "an import that hangs", block: `{"enabled":true,"file":"checks.py","timeout_seconds":1}`, suite: "import time\ntime.sleep(60)\n", score: 0,
			reasons: "Custom checks: score=0 (0 passed, 0 failed, 0 skipped, 1 errored and scored 0); " +
				"checks.py: error: did not finish within the suite's timeout_seconds (1s) before its checks loaded; " +
				"Python checks checks.py: did not finish within its timeout_seconds (1s); its process group was killed; it had not loaded its checks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := pythonTrial(t, tc.block, tc.suite)
			start := time.Now()
			g, err := grade(t, env, agentRun(t, env, goldenPlaceOrderArgs, "O-001", goldenFinal))
			if time.Since(start) > 15*time.Second {
				t.Errorf("grading took %s", time.Since(start))
			}
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v\nwant %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if g.Components.CustomChecks != tc.score || g.Reasons != tc.reasons {
				t.Errorf("custom_checks = %v, reasons\n %s\nwant %v,\n %s", g.Components.CustomChecks, g.Reasons, tc.score, tc.reasons)
			}
		})
	}
}

func TestPythonMessages(t *testing.T) {
	for _, tc := range []struct {
		name string
		tl   timeline.Timeline
		want string
	}{
		{"a conversation", timeline.Timeline{Policy: "be nice", Events: []timeline.Event{
			{Kind: task.EventMessage, Role: "user", Content: "hi"},
			{Kind: task.EventMessage, Role: "assistant", Content: "looking"},
			{Kind: task.EventToolCall, Role: "assistant", CallID: "c1", Tool: "get", Args: json.RawMessage(`{"id":1}`), Status: task.ToolCallSuccess, Output: "found"},
			{Kind: task.EventToolCall, Role: "assistant", CallID: "c2", Tool: "put", Args: json.RawMessage(`"bad"`), Status: task.ToolCallError, Output: "Tool error"},
			{Kind: task.EventToolCall, Role: "assistant", CallID: "c3", Tool: "undone", Args: json.RawMessage(`{}`)},
			{Kind: task.EventMessage, Role: "assistant", Content: "done"},
		}}, `[{"role":"system","content":"be nice","tool_calls":null},` +
			`{"role":"user","content":"hi","tool_calls":[]},` +
			`{"role":"assistant","content":"looking","tool_calls":[{"name":"get","arguments":{"id":1},"result":"found","status":"success"},` +
			`{"name":"put","arguments":{},"result":"Tool error","status":"error"},{"name":"undone","arguments":{},"result":null,"status":"success"}]},` +
			`{"role":"tool","content":"found","tool_calls":[],"name":"get","tool_call_id":"c1"},` +
			`{"role":"tool","content":"Tool error","tool_calls":[],"name":"put","tool_call_id":"c2"},` +
			`{"role":"assistant","content":"done","tool_calls":[]}]`},
		{"the runner's record alone", timeline.Timeline{Events: []timeline.Event{
			{Kind: task.EventToolCall, Role: "assistant", CallID: "c1", Tool: "get", Args: json.RawMessage(`{}`), Status: task.ToolCallSuccess, Output: "a"},
			{Kind: task.EventToolCall, Role: "user", CallID: "c2", Tool: "ask", Args: json.RawMessage(`{}`), Status: task.ToolCallSuccess, Output: "b"},
		}}, `[{"role":"assistant","content":"","tool_calls":[{"name":"get","arguments":{},"result":"a","status":"success"}]},` +
			`{"role":"tool","content":"a","tool_calls":[],"name":"get","tool_call_id":"c1"},` +
			`{"role":"user","content":"","tool_calls":[{"name":"ask","arguments":{},"result":"b","status":"success"}]},` +
			`{"role":"tool","content":"b","tool_calls":[],"name":"ask","tool_call_id":"c2"}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(pythonMessages(&tc.tl))
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Errorf("messages =\n %s\nwant\n %s", b, tc.want)
			}
		})
	}
}

func TestDictTableKeys(t *testing.T) {
	src := func(extra string) *task.ToolSource {
		return &task.ToolSource{Extra: map[string]json.RawMessage{"dict_tables": json.RawMessage(extra)}}
	}
	td := &task.TaskDescription{
		AgentTools:   []task.ToolSchema{{Name: "a"}, {Name: "b", Source: src(`{"orders":"order_id","requests":""}`)}},
		UserTools:    []task.ToolSchema{{Name: "c", Source: src(`{"users":"user_id","requests":""}`)}, {Name: "d", Source: src(`[1]`)}},
		InitialState: &task.InitialState{Schemas: []task.TableSchema{{TableName: "requests", PrimaryKey: "request_id"}, {TableName: "log", PrimaryKey: "n"}}},
	}
	got, _ := json.Marshal(dictTableKeys(td))
	if want := `{"orders":"order_id","requests":"request_id","users":"user_id"}`; string(got) != want {
		t.Errorf("dictTableKeys = %s, want %s", got, want)
	}
}
