package artifacts_test

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"

	"tolokaforge.io/operator/api/artifacts"
	"tolokaforge.io/operator/api/runnerpb"
)

// grade.yaml's component_results gives every component its status, score, pass and
// own reasons, so a report counts per-component pass rates without parsing reasons.
func TestGradeYAMLComponentResults(t *testing.T) {
	trace := 0.5
	g := &runnerpb.Grade{
		Score: 0.4,
		Components: &runnerpb.GradeComponents{StateChecks: 1, TranscriptRules: 0.5, LlmJudge: -1, CustomChecks: -1,
			TraceChecks: &trace},
		JudgeStatus: runnerpb.JudgeStatus_JUDGE_STATUS_ERRORED,
		Reasons: "State: hash match | JSONPath: all 3 checks passed | Transcript: 1 of 2 rules failed: x | Trace checks: score=0.5 | " +
			"Trace check paid: not paid | Judge: errored, no score (llm_judge carries no weight share): boom | " +
			"custom_checks.checks: skipped: disabled | the weighted mean of 3 components",
	}
	root := t.TempDir()
	dir, err := artifacts.Write(root, &artifacts.Attempt{TrialID: "t:0", TaskID: "t", AttemptNumber: 1, GradedBy: "runner", Grade: g})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, artifacts.GradeFile))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		ComponentResults map[string]struct {
			Status  string   `json:"status"`
			Score   *float64 `json:"score"`
			Passed  *bool    `json:"passed"`
			Reasons []string `json:"reasons"`
		} `json:"component_results"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	type want struct {
		status  string
		score   float64 // -1: absent
		passed  bool
		reasons []string
	}
	wants := map[string]want{
		"state_checks":     {"scored", 1, true, []string{"State: hash match", "JSONPath: all 3 checks passed"}},
		"transcript_rules": {"scored", 0.5, false, []string{"Transcript: 1 of 2 rules failed: x"}},
		"trace_checks":     {"scored", 0.5, false, []string{"Trace checks: score=0.5", "Trace check paid: not paid"}},
		"llm_judge":        {"errored", -1, false, []string{"Judge: errored, no score (llm_judge carries no weight share): boom"}},
		"custom_checks":    {"not_evaluated", -1, false, []string{"custom_checks.checks: skipped: disabled"}},
	}
	if len(doc.ComponentResults) != len(wants) {
		t.Fatalf("component_results = %+v\n%s", doc.ComponentResults, b)
	}
	for name, w := range wants {
		got := doc.ComponentResults[name]
		score := -1.0
		if got.Score != nil {
			score = *got.Score
		}
		if got.Status != w.status || score != w.score || got.Passed == nil || *got.Passed != w.passed || !reflect.DeepEqual(got.Reasons, w.reasons) {
			t.Errorf("%s = %+v (score %v), want %+v", name, got, score, w)
		}
	}

	// A host grade (nothing evaluated) records no component.
	dir, err = artifacts.Write(t.TempDir(), &artifacts.Attempt{TrialID: "t:0", TaskID: "t", AttemptNumber: 1, GradedBy: "host", Grade: &runnerpb.Grade{
		Components: &runnerpb.GradeComponents{StateChecks: -1, TranscriptRules: -1, LlmJudge: -1, CustomChecks: -1},
		Reasons:    "Not graded: the trial ended with termination_reason stuck_detected (x)"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(filepath.Join(dir, artifacts.GradeFile))
	doc.ComponentResults = nil
	if err := yaml.Unmarshal(b, &doc); err != nil || len(doc.ComponentResults) != 0 {
		t.Fatalf("host grade component_results = %+v (%v)\n%s", doc.ComponentResults, err, b)
	}
}
