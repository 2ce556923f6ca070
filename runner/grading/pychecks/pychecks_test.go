package pychecks

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"tolokaforge.io/operator/api/runnerpb"
)

// debianPython is the interpreter CI has: Debian's, standard library only for the
// runner (make python-deps installs it).
const debianPython = "/usr/bin/python3"

func needPython(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(debianPython); err != nil {
		t.Fatalf("these tests run Debian's %s (make python-deps installs it): %v", debianPython, err)
	}
}

// artifacts lays files out as RegisterTrial unpacks tool_artifacts.
func artifacts(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// upstreamPacks is the one copy of upstream's packs, kept beside the importer's
// tests (see its NOTICE).
var upstreamPacks = filepath.Join("..", "..", "..", "api", "task", "pack", "testdata", "tolokaforge")

func fixture(t testing.TB, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(upstreamPacks, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func siteFor(t testing.TB, dir string) Site {
	return Site{Python: debianPython, ArtifactsDir: dir, ScratchDir: filepath.Join(t.TempDir(), "scratch")}
}

func str(s string) *string { return &s }

// res is a CustomCheckResult as the tests spell it.
type res struct {
	name, status string
	score        float64
	message      string
}

func flatten(rs []*runnerpb.CustomCheckResult) []res {
	out := make([]res, len(rs))
	for i, r := range rs {
		out[i] = res{r.CheckName, r.Status, r.Score, r.Message}
	}
	return out
}

func sameResults(t *testing.T, got []*runnerpb.CustomCheckResult, want []res) {
	t.Helper()
	g := flatten(got)
	if len(g) != len(want) {
		t.Fatalf("got %d results %+v, want %d %+v", len(g), g, len(want), want)
	}
	for i := range want {
		if g[i] != want[i] {
			t.Errorf("result %d:\n got  %+v\n want %+v", i, g[i], want[i])
		}
	}
}

func calcContext(counter int, calls bool) *Context {
	c := &Context{
		InitialState: json.RawMessage(`{"counter":0,"operations":[]}`),
		FinalState:   json.RawMessage(`{"counter":` + strconv.Itoa(counter) + `,"operations":[]}`),
		Transcript:   Transcript{Messages: []Message{{Role: "user", Content: "Please increment the counter by 5."}}},
		Task:         Task{TaskID: "calc_custom_checks"},
	}
	if calls {
		c.Transcript.Messages = append(c.Transcript.Messages,
			Message{Role: "assistant", ToolCalls: []ToolCall{{Name: "update_counter", Arguments: json.RawMessage(`{"amount":5}`), Result: str(`{"counter":5}`), Status: "success"}}},
			Message{Role: "tool", Content: `{"counter":5}`, Name: "update_counter"},
			Message{Role: "assistant", Content: "Done: the counter is 5."})
	}
	return c
}

// The calc_custom_checks pack's checks.py, unmodified, over a recorded trial.
func TestCalcCustomChecksFixture(t *testing.T) {
	needPython(t)
	dir := artifacts(t, map[string]string{"checks.py": fixture(t, "calc_custom_checks/checks.py")})
	for _, tc := range []struct {
		name    string
		ctx     *Context
		want    []res
		details string // the first result's details_json
	}{
		{"the agent reached the target", calcContext(5, true), []res{
			{"counter_was_incremented", "passed", 1, "Counter increased from 0 to 5"},
			{"counter_reached_target", "passed", 1, "Counter is 5 (>= 5)"},
			{"update_counter_tool_was_called", "passed", 1, "update_counter was called 1 time(s)"},
			{"operations_were_logged", "skipped", 0, "No operations logged (logging not required)"},
		}, `{"initial": 0, "final": 5}`},
		{"partial credit, no tool call", calcContext(3, false), []res{
			{"counter_was_incremented", "passed", 1, "Counter increased from 0 to 3"},
			{"counter_reached_target", "failed", 0.6, "Counter is only 3, should be >= 5"},
			{"update_counter_tool_was_called", "skipped", 0, "No tool calls to check - test data may not include transcript"},
			{"operations_were_logged", "skipped", 0, "No operations logged (logging not required)"},
		}, `{"initial": 0, "final": 3}`},
		{"nothing happened", calcContext(0, false), []res{
			{"counter_was_incremented", "failed", 0, "Counter was not incremented (still 0)"},
			{"counter_reached_target", "failed", 0, "Counter is only 0, should be >= 5"},
			{"update_counter_tool_was_called", "skipped", 0, "No tool calls to check - test data may not include transcript"},
			{"operations_were_logged", "skipped", 0, "No operations logged (logging not required)"},
		}, `{"initial": 0, "final": 0}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Run(context.Background(), siteFor(t, dir), Suite{File: "checks.py", Timeout: 10 * time.Second}, tc.ctx)
			if err != nil {
				t.Fatal(err)
			}
			sameResults(t, rep.Results, tc.want)
			if got := rep.Results[0].DetailsJson; got != tc.details {
				t.Errorf("details_json = %s, want %s", got, tc.details)
			}
			if want := []string{"counter_was_incremented", "counter_reached_target", "update_counter_tool_was_called", "operations_were_logged"}; strings.Join(rep.Checks, ",") != strings.Join(want, ",") {
				t.Errorf("checks = %v, want %v", rep.Checks, want)
			}
		})
	}
}

// recordedState is the food_delivery_2 trial recorded in testdata: the tables as
// the DB service holds them (lists), before and after the golden actions.
func recordedState(t *testing.T) (initial, final json.RawMessage) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "food_delivery_2_order_modify_state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec struct{ Initial, Final map[string]json.RawMessage }
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{"orders": "order_id", "users": "user_id"}
	return Tables(rec.Initial, keys), Tables(rec.Final, keys)
}

func call(name, args, result string) ToolCall {
	return ToolCall{Name: name, Arguments: json.RawMessage(args), Result: str(result), Status: "success"}
}

func agentTurn(calls ...ToolCall) []Message {
	msgs := []Message{{Role: "assistant", ToolCalls: calls}}
	for _, c := range calls {
		msgs = append(msgs, Message{Role: "tool", Content: *c.Result, Name: c.Name})
	}
	return msgs
}

// food_delivery_2's checks.py and its project-level check_helpers.py (reached
// through relative_imports "../..") run unmodified over a recorded trial.
func TestFoodDelivery2Fixture(t *testing.T) {
	needPython(t)
	dir := artifacts(t, map[string]string{
		"check_helpers.py":                         fixture(t, "projects/food_delivery_2/check_helpers.py"),
		"tasks/order_modify_with_checks/checks.py": fixture(t, "projects/food_delivery_2/tasks/order_modify_with_checks/checks.py"),
	})
	suite := Suite{File: "tasks/order_modify_with_checks/checks.py", RelativeImports: []string{"../.."}, Timeout: 30 * time.Second}
	initial, final := recordedState(t)
	golden := []Message{{Role: "system", Content: "You are a food delivery agent."}, {Role: "user", Content: "Please change order_53."}}
	golden = append(golden, agentTurn(call("get_user_details", `{"user_id":"user_5247"}`, `{"user_id":"user_5247"}`))...)
	golden = append(golden, agentTurn(call("get_order_details", `{"order_id":"order_53"}`, `{"order_id":"order_53"}`))...)
	golden = append(golden, agentTurn(call("modify_order", `{"order_id":"order_53","menu_items":[{"id":"restaurant_41005549_item_1","quantity":3},{"id":"restaurant_41005549_item_0","quantity":3},{"id":"restaurant_41005549_item_7","quantity":1}]}`, `{"order_id":"order_53"}`))...)
	golden = append(golden, Message{Role: "assistant", Content: "Your order now has three Branzino."})

	lazy := []Message{{Role: "user", Content: "Please change order_53."}}
	lazy = append(lazy, agentTurn(call("transfer_to_human_agents", `{}`, `"Transfer successful"`))...)

	for _, tc := range []struct {
		name string
		ctx  *Context
		want []res
	}{
		{"the golden path", &Context{InitialState: initial, FinalState: final, Transcript: Transcript{Messages: golden}, Task: Task{TaskID: "order_modify_with_checks"}}, []res{
			{"user_identity_verified", "passed", 1, "User user_5247 identity verified via get_user_details"},
			{"order_details_retrieved", "passed", 1, "Order order_53 details retrieved"},
			{"branzino_quantity_increased", "passed", 1, "Branzino quantity correctly increased: 2 -> 3"},
			{"oysters_quantity_unchanged", "passed", 1, "Oysters quantity correctly maintained at 1"},
			{"order_was_actually_modified", "passed", 1, "Order order_53 was successfully modified"},
			{"modify_order_tool_called", "passed", 1, "modify_order called for order_53"},
			{"proper_workflow_sequence", "passed", 1, "Proper order modification sequence followed"},
			{"no_transfer_to_human", "passed", 1, "Agent handled request without transferring to human"},
			{"total_price_updated", "passed", 1, "Total price updated: 9464 -> 10735"},
		}},
		{"a transfer and no change", &Context{InitialState: initial, FinalState: initial, Transcript: Transcript{Messages: lazy}, Task: Task{TaskID: "order_modify_with_checks"}}, []res{
			{"user_identity_verified", "failed", 0, "Agent did not verify user identity before order modification"},
			{"order_details_retrieved", "failed", 0, "Agent did not retrieve order order_53 details"},
			{"branzino_quantity_increased", "failed", 0, "Branzino quantity not increased: 2 -> 2"},
			{"oysters_quantity_unchanged", "passed", 1, "Oysters quantity correctly maintained at 1"},
			{"order_was_actually_modified", "failed", 0, "Order order_53 was not modified"},
			{"modify_order_tool_called", "failed", 0, "modify_order tool was not called"},
			{"proper_workflow_sequence", "failed", 0.5, "get_user_details was not called"},
			{"no_transfer_to_human", "failed", 0, "Agent transferred to human operator (user explicitly refused this)"},
			{"total_price_updated", "skipped", 0, "Order not modified, cannot check total price"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Run(context.Background(), siteFor(t, dir), suite, tc.ctx)
			if err != nil {
				t.Fatal(err)
			}
			sameResults(t, rep.Results, tc.want)
		})
	}
}

const header = "from tolokaforge.core.grading.checks_interface import CheckContext, CheckPassed, CheckFailed, CheckSkipped, check, init\n"

// Every way a suite or one of its checks can end, with the exact result and message.
func TestStatusShapes(t *testing.T) {
	needPython(t)
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	for _, tc := range []struct {
		name    string
		suite   string
		files   map[string]string
		relImp  []string
		timeout time.Duration
		want    []res
		wantErr string // exact SuiteError text; "" = none
		kind    string
	}{
		{name: "a check that raises, one that returns garbage, and the rest", suite: header + `
@check
def first():
    return CheckPassed("fine")

@check
def divides():
    return CheckPassed(str(1 / 0))

@check
def answers():
    return 42

@check
def out_of_range():
    return CheckFailed("too generous", score=1.5)

@check
def last():
    print("noise on stdout", flush=True)
    print('{"event": "done"}')
    return CheckFailed("not quite", score=0.25, details={"why": "half a reason"})
`, want: []res{
			{"first", "passed", 1, "fine"},
			{"divides", "error", 0, "raised ZeroDivisionError: division by zero"},
			{"answers", "error", 0, "returned int, not CheckPassed, CheckFailed or CheckSkipped"},
			{"out_of_range", "error", 0, "raised ValueError: score must be in [0, 1], got 1.5"},
			{"last", "failed", 0.25, "not quite"},
		}},
		{name: "skipped", suite: header + `
@check
def not_applicable():
    return CheckSkipped("no orders to look at")
`, want: []res{{"not_applicable", "skipped", 0, "no orders to look at"}}},
		{name: "a check that hangs", timeout: 2 * time.Second, suite: header + `
import subprocess, time

@check
def quick():
    return CheckPassed()

@check
def hangs():
    child = subprocess.Popen(["sleep", "300"])
    open(` + strconv.Quote(pidFile) + `, "w").write(str(child.pid))
    while True:
        time.sleep(0.05)

@check
def never_reached():
    return CheckPassed()
`, want: []res{
			{"quick", "passed", 1, "Check passed"},
			{"hangs", "error", 0, "did not finish within the suite's timeout_seconds (2s)"},
			{"never_reached", "error", 0, "did not finish within the suite's timeout_seconds (2s)"},
		}, kind: "timeout",
			wantErr: "Python checks checks.py: did not finish within its timeout_seconds (2s); its process group was killed; checks that did not finish: hangs, never_reached"},
		{name: "an import that hangs", timeout: time.Second, suite: "import time\nwhile True:\n    time.sleep(0.05)\n", kind: "timeout",
			wantErr: "Python checks checks.py: did not finish within its timeout_seconds (1s); its process group was killed; it had not loaded its checks"},
		{name: "a syntax error", suite: header + "\n@check\ndef broken(:\n    pass\n", kind: "syntax",
			wantErr: "Python checks checks.py: SyntaxError at checks.py:4: invalid syntax"},
		{name: "a syntax error in a helper", suite: header + "import shared\n", files: map[string]string{"lib/shared.py": "x = (\n"}, relImp: []string{"lib"}, kind: "syntax",
			wantErr: "Python checks checks.py: SyntaxError at lib/shared.py:1: '(' was never closed"},
		{name: "a missing module", suite: header + "from check_helpers import get_order\n", kind: "module",
			wantErr: `Python checks checks.py: module "check_helpers" not found (ModuleNotFoundError: No module named 'check_helpers'); relative_imports: []`},
		{name: "a missing module beyond the relative imports", suite: header + "import shared\n", files: map[string]string{"lib/shared.py": "import pandas_not_here.sub\n"}, relImp: []string{"lib"}, kind: "module",
			wantErr: `Python checks checks.py: module "pandas_not_here" not found (ModuleNotFoundError: No module named 'pandas_not_here'); relative_imports: ["lib"]`},
		{name: "an import that raises", suite: header + "raise RuntimeError('no config')\n", kind: "import",
			wantErr: "Python checks checks.py: importing it raised RuntimeError: no config"},
		{name: "a wrong interface_version", suite: header + `
@init(interface_version="2.0")
def setup(ctx):
    pass

@check
def a():
    return CheckPassed()
`, kind: "interface", wantErr: `Python checks checks.py: @init declares interface_version "2.0"; supported: "1.0"`},
		{name: "no checks", suite: header + "X = 1\n", kind: "no_checks", wantErr: "Python checks checks.py: defines no @check function"},
		{name: "an init that raises", suite: header + `
@init(interface_version="1.0")
def setup(ctx):
    ctx.effects["missing"]

@check
def a():
    return CheckPassed()
`, kind: "init", wantErr: "Python checks checks.py: the @init function setup raised KeyError: 'missing'"},
		{name: "a runner that dies mid-suite", suite: header + `
import os, sys

@check
def a():
    return CheckPassed()

@check
def b():
    sys.stderr.write("about to exit\n")
    sys.stderr.flush()
    os._exit(3)
`, want: []res{{"a", "passed", 1, "Check passed"}, {"b", "error", 0, "did not finish: the check runner exited before reporting it"}}, kind: "exited",
			wantErr: `Python checks checks.py: the check runner exited (exit status 3) before reporting every check; checks that did not finish: b; stderr tail: "about to exit"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"checks.py": tc.suite}
			for k, v := range tc.files {
				files[k] = v
			}
			dir := artifacts(t, files)
			start := time.Now()
			rep, err := Run(context.Background(), siteFor(t, dir), Suite{File: "checks.py", RelativeImports: tc.relImp, Timeout: tc.timeout}, calcContext(5, true))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
			} else {
				var se *SuiteError
				if !errors.As(err, &se) {
					t.Fatalf("error = %v, want a *SuiteError %q", err, tc.wantErr)
				}
				if se.Error() != tc.wantErr || se.Kind != tc.kind {
					t.Fatalf("error =\n %s (%s)\nwant\n %s (%s)", se.Error(), se.Kind, tc.wantErr, tc.kind)
				}
			}
			if rep == nil {
				t.Fatal("no report beside the error")
			}
			sameResults(t, rep.Results, tc.want)
			if tc.timeout > 0 && time.Since(start) > tc.timeout+5*time.Second {
				t.Errorf("Run took %s with a %s timeout", time.Since(start), tc.timeout)
			}
		})
	}
	// The hanging check's own child went with its process group.
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the hanging check did not record its child: %v", err)
	}
	pid, _ := strconv.Atoi(string(b))
	if alive(pid) {
		t.Errorf("the hanging check's child %d still runs after the suite timed out", pid)
	}
}

// alive reports whether pid runs (a zombie awaiting its reaper does not).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// A raising check's traceback is in details_json, with the suite's paths as the
// pack names them.
func TestRaisingCheckDetails(t *testing.T) {
	needPython(t)
	dir := artifacts(t, map[string]string{"tasks/t1/checks.py": header + "\n@check\ndef boom():\n    raise KeyError('order_53')\n"})
	rep, err := Run(context.Background(), siteFor(t, dir), Suite{File: "tasks/t1/checks.py"}, calcContext(5, true))
	if err != nil {
		t.Fatal(err)
	}
	sameResults(t, rep.Results, []res{{"boom", "error", 0, "raised KeyError: 'order_53'"}})
	var details struct{ Traceback string }
	if err := json.Unmarshal([]byte(rep.Results[0].DetailsJson), &details); err != nil {
		t.Fatalf("details_json %q: %v", rep.Results[0].DetailsJson, err)
	}
	if !strings.Contains(details.Traceback, `File "tasks/t1/checks.py", line 5, in boom`) || strings.Contains(details.Traceback, "checkrunner.py") {
		t.Errorf("traceback does not name the suite as the pack does:\n%s", details.Traceback)
	}
}

// What a suite sees of the context: upstream's attribute names, the tool calls,
// the states (dict tables rebuilt, "agent" answering the tables), the task.
func TestContextAsUpstreamNamesIt(t *testing.T) {
	needPython(t)
	suite := header + `
import json
from tolokaforge.core.grading.checks_helpers import count_tool_calls, get_tool_argument, get_nested

seen = {}

@init(interface_version="1.0")
def setup(ctx: CheckContext):
    seen["ctx"] = ctx

def _ok(cond, what):
    return CheckPassed(what) if cond else CheckFailed(what)

@check
def transcript():
    c = seen["ctx"]
    roles = [m.role for m in c.transcript.messages]
    return _ok(roles == ["system", "user", "assistant", "tool", "assistant"] and c.response == "Done." and
               len(c.transcript.agent_messages) == 2 and len(c.transcript.user_messages) == 1, repr(roles))

@check
def tool_calls():
    c = seen["ctx"]
    tc = c.tool_calls[0]
    return _ok(count_tool_calls(c.tool_calls, "pay") == 1 and tc.arguments == {"order_id": "o1", "amount": 2.5} and
               get_tool_argument(tc, "order_id") == "o1" and tc.result == '{"ok": true}' and tc.status == "success" and
               c.transcript.all_tool_calls == c.tool_calls, repr(tc))

@check
def states():
    c = seen["ctx"]
    o = c.final_state.data["orders"]["o1"]
    agent = c.final_state.data.get("agent", {}).get("orders", {}).get("o1")
    return _ok(o["status"] == "paid" and c.initial_state.get("orders.o1.status") == "new" and
               c.effects is c.final_state.data and agent is o and c.final_state.data["agent"]["log"] == [{"n": 1}] and
               "agent" not in c.final_state and sorted(c.final_state.keys()) == ["log", "orders"] and
               get_nested(c.effects, "log.0.n") == 1, json.dumps(c.effects))

@check
def task():
    t = seen["ctx"].task
    return _ok((t.task_id, t.task_name, t.domain, t.tags, t.extra) == ("t1", "Pay", "shop", ["x"], {"tier": "gold"}) and
               seen["ctx"].interface_version == "1.0", repr(t))
`
	dir := artifacts(t, map[string]string{"checks.py": suite})
	keys := map[string]string{"orders": "id"}
	cctx := &Context{
		InitialState: Tables(map[string]json.RawMessage{"orders": json.RawMessage(`[{"id":"o1","status":"new"}]`), "log": json.RawMessage(`[]`)}, keys),
		FinalState:   Tables(map[string]json.RawMessage{"orders": json.RawMessage(`[{"id":"o1","status":"paid"}]`), "log": json.RawMessage(`[{"n":1}]`)}, keys),
		Transcript: Transcript{Messages: []Message{
			{Role: "system", Content: "policy"}, {Role: "user", Content: "pay o1"},
			{Role: "assistant", ToolCalls: []ToolCall{{Name: "pay", Arguments: json.RawMessage(`{"order_id":"o1","amount":2.5}`), Result: str(`{"ok": true}`), Status: "success"}}},
			{Role: "tool", Content: `{"ok": true}`, Name: "pay", ToolCallID: "c1"},
			{Role: "assistant", Content: "Done."},
		}},
		Task: Task{TaskID: "t1", TaskName: "Pay", Domain: "shop", Tags: []string{"x"}, Extra: map[string]json.RawMessage{"tier": json.RawMessage(`"gold"`)}},
	}
	rep, err := Run(context.Background(), siteFor(t, dir), Suite{File: "checks.py"}, cctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		if r.Status != StatusPassed {
			t.Errorf("%s: %s: %s", r.CheckName, r.Status, r.Message)
		}
	}
	if len(rep.Results) != 4 {
		t.Fatalf("got %d results, want 4", len(rep.Results))
	}
}

// A suite that cannot be started is named before anything runs.
func TestStartRefusals(t *testing.T) {
	needPython(t)
	dir := artifacts(t, map[string]string{"checks.py": header + "\n@check\ndef a():\n    return CheckPassed()\n"})
	for _, tc := range []struct {
		name  string
		site  func(Site) Site
		suite Suite
		want  string
	}{
		{"no interpreter", func(s Site) Site { s.Python = "/nonexistent/python3"; return s }, Suite{File: "checks.py"},
			`Python checks checks.py: the interpreter "/nonexistent/python3" did not start: exec: "/nonexistent/python3": stat /nonexistent/python3: no such file or directory`},
		{"a file that is not there", nil, Suite{File: "tasks/t/checks.py"},
			"Python checks tasks/t/checks.py: the file is not among the trial's tool_artifacts"},
		{"an absolute file", nil, Suite{File: "/etc/passwd"},
			`Python checks: file "/etc/passwd": an absolute path; want one relative to the tool_artifacts`},
		{"a file outside", nil, Suite{File: "../checks.py"},
			`Python checks: file "../checks.py": leaves the tool_artifacts`},
		{"a relative import outside", nil, Suite{File: "checks.py", RelativeImports: []string{"../lib"}},
			`Python checks checks.py: relative_imports "../lib": leaves the tool_artifacts`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			site := siteFor(t, dir)
			if tc.site != nil {
				site = tc.site(site)
			}
			_, err := Run(context.Background(), site, tc.suite, calcContext(5, true))
			var se *SuiteError
			if !errors.As(err, &se) || se.Kind != "start" || se.Error() != tc.want {
				t.Fatalf("error = %v, want the start refusal %q", err, tc.want)
			}
		})
	}
}

// Nothing is left in the scratch directory, and the pack's folders stay as shipped.
func TestRunLeavesNothing(t *testing.T) {
	needPython(t)
	dir := artifacts(t, map[string]string{"checks.py": header + "import helper\n\n@check\ndef a():\n    return CheckPassed(helper.X)\n", "helper.py": "X = 'from the helper'\n"})
	site := siteFor(t, dir)
	rep, err := Run(context.Background(), site, Suite{File: "checks.py", RelativeImports: []string{"."}}, calcContext(5, true))
	if err != nil {
		t.Fatal(err)
	}
	sameResults(t, rep.Results, []res{{"a", "passed", 1, "from the helper"}})
	if ents, _ := os.ReadDir(site.ScratchDir); len(ents) != 0 {
		t.Errorf("scratch directory keeps %d entries", len(ents))
	}
	if _, err := os.Stat(filepath.Join(dir, "__pycache__")); !os.IsNotExist(err) {
		t.Errorf("the run wrote __pycache__ into the artifacts (stat: %v)", err)
	}
}

func TestTables(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tables map[string]string
		keys   map[string]string
		want   string
	}{
		{"a dict table rebuilt, a list table kept", map[string]string{"orders": `[{"order_id":"o2","n":1},{"order_id":"o1","n":2}]`, "log": `[{"a":1}]`},
			map[string]string{"orders": "order_id"}, `{"log":[{"a":1}],"orders":{"o2":{"order_id":"o2","n":1},"o1":{"order_id":"o1","n":2}}}`},
		{"a numeric key", map[string]string{"t": `[{"id":7}]`}, map[string]string{"t": "id"}, `{"t":{"7":{"id":7}}}`},
		{"an empty dict table of unknown key", map[string]string{"requests": `[]`}, map[string]string{"requests": ""}, `{"requests":{}}`},
		{"a dict table of unknown key with records stays a list", map[string]string{"requests": `[{"request_id":"r1"}]`}, map[string]string{"requests": ""}, `{"requests":[{"request_id":"r1"}]}`},
		{"a record without the key stays a list", map[string]string{"t": `[{"id":"a"},{"x":1}]`}, map[string]string{"t": "id"}, `{"t":[{"id":"a"},{"x":1}]}`},
		{"a duplicate key stays a list", map[string]string{"t": `[{"id":"a"},{"id":"a"}]`}, map[string]string{"t": "id"}, `{"t":[{"id":"a"},{"id":"a"}]}`},
		{"a key that is an object stays a list", map[string]string{"t": `[{"id":{"x":1}}]`}, map[string]string{"t": "id"}, `{"t":[{"id":{"x":1}}]}`},
		{"a scalar table passes through", map[string]string{"counter": `5`}, map[string]string{"counter": "id"}, `{"counter":5}`},
		{"no tables", map[string]string{}, nil, `{}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := map[string]json.RawMessage{}
			for k, v := range tc.tables {
				in[k] = json.RawMessage(v)
			}
			if got := string(Tables(in, tc.keys)); got != tc.want {
				t.Errorf("Tables =\n %s\nwant\n %s", got, tc.want)
			}
		})
	}
}

// The shim's and the runner's own logic, by Python's unittest under Debian's
// interpreter (what CI has), so make test runs them.
func TestPythonUnitTests(t *testing.T) {
	needPython(t)
	cmd := exec.Command(debianPython, "-B", "-m", "unittest", "discover", "-s", "pytest", "-t", "pytest", "-v")
	cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(mustAbs(t, "py")), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python unit tests failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "OK") {
		t.Fatalf("python unit tests did not report OK:\n%s", out)
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}
