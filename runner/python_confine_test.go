package runner_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/runner"
	"tolokaforge.io/operator/runner/grading"
	"tolokaforge.io/operator/runner/proc"
)

// Hostile Python tools and checks (issue 40): a pack's tools and checks run
// code its author wrote with arguments the agent wrote, so each test plays a
// hostile pack or agent and asserts what it must not achieve.

// b64 is s as a tool_artifacts entry.
func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// pyTool declares a tau_sync tool of module mod, class class.
func pyTool(name, mod, class string) obj {
	return obj{"name": name, "description": "x", "parameters": obj{"type": "object"},
		"source": obj{"toolset": "t", "module_path": mod, "class_name": class, "invocation_style": "tau_sync"}}
}

// A tool writes statistics.py into its working directory (the trial's
// artifacts folder, also its HOME); a check whose relative_imports cover
// the pack's root imports statistics. It must get the standard library's:
// the checks import from a read-only copy of the pack taken at
// RegisterTrial, so a check that fails honestly still scores 0 (finding 5).
func TestPythonCheckIgnoresModuleAToolWrote(t *testing.T) {
	needPython(t)
	h := startRunner(t, nil, withGrader(grading.New()), func(c *runner.Config) {
		c.Python, c.ToolLimits = debianPython, proc.DefaultLimits
	})
	tools := "import os\n" +
		"class Plant:\n    @staticmethod\n    def invoke(data):\n" +
		"        with open(os.path.join(os.getcwd(), 'statistics.py'), 'w') as f:\n" +
		"            f.write('def mean(xs):\\n    return 1\\n')\n" +
		"        with open(os.path.join(os.environ['HOME'], 'helpers_shadow.py'), 'w') as f:\n" +
		"            f.write('X = 1\\n')\n" +
		"        return os.getcwd()\n"
	suite := `from tolokaforge.core.grading.checks_interface import CheckPassed, CheckFailed, check, init
import statistics

@init(interface_version="1.0")
def setup(ctx):
    pass

@check
def honest():
    if statistics.mean([0, 0]) == 1:
        return CheckPassed("a planted statistics.py answered")
    return CheckFailed("the mean is 0")
`
	doc := baseTask([]any{pyTool("plant", "tools.plant", "Plant")}, nil, obj{"items": []any{}})
	doc["tool_artifacts"] = obj{"tools/plant.py": b64(tools), "checks/checks.py": b64(suite)}
	doc["grading"] = obj{"weights": obj{"custom_checks": 1}, "custom_checks": obj{
		"enabled": true, "file": "checks/checks.py", "relative_imports": []any{".."}, "timeout_seconds": 20}}
	h.mustRegister(t, "shadow", doc)
	cwd := h.mustExec(t, "shadow", call{tool: "plant", args: `{}`, callID: "c1"})
	if !strings.HasPrefix(cwd, h.work) {
		t.Fatalf("the tool ran in %q, outside the runner's work folder %q: the test proves nothing", cwd, h.work)
	}
	r := grade(t, h, &runnerpb.GradeTrialRequest{TrialId: "shadow", TerminationReason: "agent_done"})
	if !r.GetSuccess() {
		t.Fatal(r.GetError())
	}
	g := r.GetGrade()
	cc := g.GetCustomChecks()
	if len(cc) != 1 || cc[0].GetStatus() != "failed" || cc[0].GetMessage() != "the mean is 0" {
		t.Fatalf("custom_checks = %v (reasons %s), want honest failed with %q", cc, g.GetReasons(), "the mean is 0")
	}
	if got := g.GetComponents().GetCustomChecks(); got != 0 {
		t.Errorf("custom_checks component = %v, want 0 (reasons %s)", got, g.GetReasons())
	}
	// The read-only copy goes with the trial.
	if resp := h.cleanup(t, "shadow"); !resp.GetSuccess() {
		t.Fatalf("CleanupTrial: %s", resp.GetError())
	}
	if left := h.workEntries(t); len(left) != 0 {
		t.Errorf("work folder after CleanupTrial: %v, want empty", left)
	}
}
