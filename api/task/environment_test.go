package task

import (
	"reflect"
	"strings"
	"testing"
)

// Tests and solutions land where Harbor and Terminal-Bench put them: a
// folder's contents under the destination, a file by its base name; a
// project's root-relative keys map the same way.
func TestEnvironmentUploads(t *testing.T) {
	arts := map[string]string{"tests/test.sh": "", "tests/sub/a.py": "", "run-tests.sh": "", "testsuite/x": "", "tasks/t/solution/solve.sh": ""}
	for _, tc := range []struct {
		sources []string
		want    []EnvironmentUpload
	}{
		{[]string{"tests"}, []EnvironmentUpload{{"tests/sub/a.py", "/tests/sub/a.py"}, {"tests/test.sh", "/tests/test.sh"}}},
		{[]string{"tests", "run-tests.sh"}, []EnvironmentUpload{{"run-tests.sh", "/tests/run-tests.sh"}, {"tests/sub/a.py", "/tests/sub/a.py"}, {"tests/test.sh", "/tests/test.sh"}}},
		{[]string{"tasks/t/solution"}, []EnvironmentUpload{{"tasks/t/solution/solve.sh", "/tests/solve.sh"}}},
		{[]string{"nothing"}, nil},
	} {
		if got := EnvironmentUploads(tc.sources, arts, "/tests"); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%v: %v, want %v", tc.sources, got, tc.want)
		}
	}
}

// An environment is refused by key path when it cannot run as written.
func TestEnvironmentValidation(t *testing.T) {
	base := func() *TaskDescription {
		return &TaskDescription{TaskID: "t", Name: "t", Category: "c", Description: "d", AdapterType: AdapterTerminalBench, SystemPrompt: "s",
			Grading:     &GradingConfig{GradingMethod: GradingTestExecution, TestExecution: &TestExecution{Command: []string{"bash", "/tests/test.sh"}}},
			Environment: &Environment{Image: "reg.local/t:1", Verifier: EnvironmentVerifier{Tests: []string{"tests"}}}}
	}
	for _, tc := range []struct {
		name string
		edit func(*TaskDescription)
		want string
	}{
		{"valid", func(*TaskDescription) {}, ""},
		{"native with environment", func(d *TaskDescription) { d.AdapterType = AdapterNative }, "environment: only allowed with adapter_type terminal_bench"},
		{"no image, no build", func(d *TaskDescription) { d.Environment.Image = "" }, "environment.image: required unless build names the Dockerfile"},
		{"image with spaces", func(d *TaskDescription) { d.Environment.Image = "a b" }, `environment.image: "a b" is not an image reference`},
		{"components grading", func(d *TaskDescription) { d.Grading = &GradingConfig{} }, "grading.grading_method: a task with an environment is graded by its tests: test_execution"},
		{"no tests", func(d *TaskDescription) { d.Environment.Verifier.Tests = nil }, "environment.verifier.tests: required"},
		{"escaping tests", func(d *TaskDescription) { d.Environment.Verifier.Tests = []string{"../x"} }, `environment.verifier.tests[0]: "../x" is not a clean path`},
		{"parser", func(d *TaskDescription) { d.Environment.Verifier.Parser = "junit" }, "environment.verifier.parser"},
		{"negative timeout", func(d *TaskDescription) { d.Environment.Agent.TimeoutS = -1 }, "environment.agent.timeout_s: -1 must be >= 0"},
		{"huge memory", func(d *TaskDescription) { d.Environment.MemoryMB = 1 << 40 }, "environment.memory_mb"},
		{"a tool with a source", func(d *TaskDescription) {
			d.AgentTools = []ToolSchema{{Name: "x", Source: &ToolSource{}}}
		}, "agent_tools[0].source: a task with an environment offers only the environment's tools"},
		{"solution without command", func(d *TaskDescription) {
			d.Environment.Solution = &EnvironmentSolution{Files: []string{"solution"}}
		}, "environment.solution.command: required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := base()
			tc.edit(d)
			d.ApplyDefaults()
			err := d.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %s", err, tc.want)
			}
		})
	}
}
