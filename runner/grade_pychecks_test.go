package runner_test

import (
	"encoding/base64"
	"testing"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/runner"
	"tolokaforge.io/operator/runner/grading"
	"tolokaforge.io/operator/runner/proc"
)

// A registered trial's Python custom checks run with the runner's --python, from
// the trial's unpacked tool_artifacts, under its tool limits, over the trial's
// state and calls.
func TestGradeRunsPythonChecks(t *testing.T) {
	const python = "/usr/bin/python3"
	h := startRunner(t, nil, withGrader(grading.New()), func(c *runner.Config) {
		c.Python, c.ToolLimits = python, proc.DefaultLimits
	})
	suite := `from tolokaforge.core.grading.checks_interface import CheckPassed, CheckFailed, check, init
from helpers.names import INSERT

@init(interface_version="1.0")
def setup(ctx):
    global C
    C = ctx

@check
def inserted():
    items = C.effects["items"]
    calls = [c.name for c in C.tool_calls]
    if len(items) == 1 and calls == [INSERT] and C.initial_state["items"] == []:
        return CheckPassed(f"{items[0]['id']} inserted by {calls[0]}")
    return CheckFailed(f"items {items}, calls {calls}")
`
	doc := baseTask([]any{tool("db_insert")}, nil, obj{"items": []any{}})
	doc["tool_artifacts"] = obj{
		"tasks/t1/checks.py":  base64.StdEncoding.EncodeToString([]byte(suite)),
		"helpers/__init__.py": "",
		"helpers/names.py":    base64.StdEncoding.EncodeToString([]byte("INSERT = 'db_insert'\n")),
	}
	doc["grading"] = obj{"weights": obj{"custom_checks": 1}, "custom_checks": obj{
		"enabled": true, "file": "tasks/t1/checks.py", "relative_imports": []any{"../.."}, "timeout_seconds": 20}}
	h.mustRegister(t, "py", doc)
	h.mustExec(t, "py", call{tool: "db_insert", args: `{"table":"items","record":{"id":"i1"}}`, callID: "c1"})
	r := grade(t, h, &runnerpb.GradeTrialRequest{TrialId: "py", TerminationReason: "agent_done"})
	if !r.GetSuccess() {
		t.Fatal(r.GetError())
	}
	g := r.GetGrade()
	if cc := g.GetCustomChecks(); len(cc) != 1 || cc[0].GetStatus() != "passed" || cc[0].GetMessage() != "i1 inserted by db_insert" {
		t.Fatalf("custom_checks = %v (reasons %s)", cc, g.GetReasons())
	}
	if g.GetComponents().GetCustomChecks() != 1 || g.GetReasons() != "Custom checks: score=1 (1 passed, 0 failed, 0 skipped)" {
		t.Errorf("grade = %v", g)
	}
}
