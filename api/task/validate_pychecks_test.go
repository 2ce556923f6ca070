package task

import (
	"math"
	"testing"
)

// A Python custom-check suite's keys are refused before any trial runs, naming the
// key; a well-formed suite is a configured component.
func TestPythonSuiteRefused(t *testing.T) {
	const w = `"weights":{"custom_checks":1},`
	for _, c := range []struct{ name, doc, want string }{
		{"an absolute file", `{` + w + `"custom_checks":{"enabled":true,"file":"/etc/checks.py"}}`,
			`custom_checks.file: "/etc/checks.py" is an absolute path; want a path among the task's tool_artifacts`},
		{"a file outside the artifacts", `{` + w + `"custom_checks":{"enabled":true,"file":"../checks.py"}}`,
			`custom_checks.file: "../checks.py" leaves the task's tool_artifacts`},
		{"an unclean file", `{` + w + `"custom_checks":{"enabled":true,"file":"./tasks//checks.py"}}`,
			`custom_checks.file: "./tasks//checks.py" is not a clean path; write "tasks/checks.py", as tool_artifacts names it`},
		{"not Python", `{` + w + `"custom_checks":{"enabled":true,"file":"checks.yaml"}}`,
			`custom_checks.file: "checks.yaml" is not a Python file (.py)`},
		{"a relative import outside", `{` + w + `"custom_checks":{"enabled":true,"file":"tasks/t/checks.py","relative_imports":["../..","../../.."]}}`,
			`custom_checks.relative_imports[1]: "../../.." from the folder of "tasks/t/checks.py" leaves the task's tool_artifacts`},
		{"an absolute relative import", `{` + w + `"custom_checks":{"enabled":true,"file":"checks.py","relative_imports":["/usr/lib"]}}`,
			`custom_checks.relative_imports[0]: "/usr/lib" is an absolute path; want a folder relative to the folder of "checks.py"`},
		{"an empty relative import", `{` + w + `"custom_checks":{"enabled":true,"file":"checks.py","relative_imports":[""]}}`,
			`custom_checks.relative_imports[0]: required`},
		{"an unsupported interface", `{` + w + `"custom_checks":{"enabled":true,"file":"checks.py","interface_version":"2.0"}}`,
			`custom_checks.interface_version: "2.0" is not supported (supported: "1.0")`},
		{"a negative timeout", `{` + w + `"custom_checks":{"enabled":true,"file":"checks.py","timeout_seconds":-1}}`,
			`custom_checks.timeout_seconds: -1 must be >= 0`},
		{"a timeout no duration holds", `{` + w + `"custom_checks":{"enabled":true,"file":"checks.py","timeout_seconds":1e300}}`,
			`custom_checks.timeout_seconds: 1e+300 exceeds the longest duration, 9223372036 seconds`},
		{"suite keys without a file", `{` + w + `"custom_checks":{"enabled":true,"checks":[{"name":"c","expr":"true"}],"timeout_seconds":5}}`,
			`custom_checks.timeout_seconds: only with custom_checks.file, the Python suite it configures`},
		{"a configured suite with no weight", `{"weights":{"state_checks":1},"state_checks":{"jsonpaths":[{"path":"$.db.t","exists":true}]},"custom_checks":{"enabled":true,"file":"checks.py"}}`,
			"weights: custom_checks is configured but weights declares no share for it (weights declares state_checks=1): " +
				"the fold would refuse every trial with MissingComponentWeight after the agent's budget is spent; declare weights.custom_checks"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeGradingConfig([]byte(c.doc))
			wantErr(t, err, c.want)
		})
	}
}

func TestPythonSuiteTimeoutNotFinite(t *testing.T) {
	for _, v := range []float64{math.NaN(), math.Inf(1)} {
		g := &GradingConfig{Weights: map[string]float64{"custom_checks": 1}, CustomChecks: &CustomChecks{Enabled: true, File: "checks.py", TimeoutSeconds: v}}
		err := g.Validate()
		wantErr(t, err, "custom_checks.timeout_seconds: "+map[bool]string{true: "NaN", false: "+Inf"}[math.IsNaN(v)]+" is not a finite number")
	}
}

func TestPythonSuiteAccepted(t *testing.T) {
	g, err := DecodeGradingConfig([]byte(`{"weights":{"custom_checks":1},"custom_checks":{"enabled":true,"file":"tasks/t/checks.py",
		"relative_imports":["../.."],"timeout_seconds":10,"interface_version":"1.0","fail_on_error":false}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := g.ConfiguredComponents(); len(got) != 1 || got[0] != ComponentCustomChecks {
		t.Errorf("ConfiguredComponents = %v, want [custom_checks]", got)
	}
	cc := g.CustomChecks
	if cc.File != "tasks/t/checks.py" || cc.RelativeImports[0] != "../.." || cc.TimeoutSeconds != 10 || cc.InterfaceVersion != "1.0" {
		t.Errorf("decoded %+v", cc)
	}
}

// The suite's file must be shipped: RegisterTrial would otherwise accept a trial
// whose grade can only fail.
func TestPythonSuiteFileAmongArtifacts(t *testing.T) {
	grading := raw(`{"weights":{"custom_checks":1},"custom_checks":{"enabled":true,"file":"tasks/t/checks.py"}}`)
	_, err := DecodeTrialSpec(specWith(t, set("task.grading", grading), set("task.tool_artifacts", map[string]string{"tasks/t/other.py": ""})))
	wantErr(t, err, `task.grading.custom_checks.file: "tasks/t/checks.py" is not among the task's tool_artifacts`)
	if _, err := DecodeTrialSpec(specWith(t, set("task.grading", grading), set("task.tool_artifacts", map[string]string{"tasks/t/checks.py": "eA=="}))); err != nil {
		t.Fatalf("a shipped suite is refused: %v", err)
	}
}
