package report

import (
	"fmt"
	"strings"
	"testing"

	"tolokaforge.io/operator/api/result"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

func f(v float64) *float64 { return &v }

func TestComponentsOf(t *testing.T) {
	cases := []struct {
		name string
		gd   result.File
		want string
	}{
		{"state with jsonpath folded in", result.File{Components: result.Scores{StateChecks: f(0.6)},
			Reasons: "State: hash match | JSONPath: 3 of 4 checks passed; failed: x (y)"},
			"state_checks=0.6 failed; jsonpath=0.75 failed"},
		{"every scored component", result.File{Components: result.Scores{StateChecks: f(1), TranscriptRules: f(1), TraceChecks: f(0.5), LLMJudge: f(1), CustomChecks: f(0)},
			Reasons: "State: hash match | JSONPath: all 2 checks passed | Transcript: all 1 rules passed | Trace checks: score=0.5 | Trace check t1: missing | Judge: score=1 | Custom checks: score=0 (0 passed, 1 failed)"},
			"state_checks=1 passed; jsonpath=1 passed; transcript_rules=1 passed; trace_checks=0.5 failed; llm_judge=1 passed; custom_checks=0 failed"},
		{"errored judge", result.File{JudgeStatus: "JUDGE_STATUS_ERRORED", Reasons: "Judge: errored, no score"}, "llm_judge=- errored"},
		{"test execution", result.File{Score: 1, BinaryPass: true, Reasons: "Test execution: score=1 (exit code 0)"}, "test_execution=1 passed"},
		{"failed test execution", result.File{Score: 0.25, Reasons: `Test execution: score=0.25 (reward file); output tail: "x"`}, "test_execution=0.25 failed"},
		{"host-graded: nothing evaluated", result.File{Reasons: "Not graded: the trial ended with termination_reason timeout (x)"}, ""},
	}
	for _, tc := range cases {
		var got []string
		g, err := tc.gd.Grade()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range g.Components {
			s := "-"
			if c.Score != nil {
				s = fmt.Sprint(*c.Score)
			}
			v := "failed"
			switch {
			case c.Status == result.Errored:
				v = "errored"
			case c.Passed:
				v = "passed"
			}
			got = append(got, c.Name+"="+s+" "+v)
		}
		if g := strings.Join(got, "; "); g != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, g, tc.want)
		}
	}
}

// From the cluster, a Trial's grade summary gives the same per-component
// verdicts as grade.yaml does.
func TestTrialOfComponents(t *testing.T) {
	one, half := 1.0, 0.5
	tr := &evalv1.Trial{}
	tr.Name = "camp-t1-0"
	tr.Status.Phase = evalv1.PhaseFailed
	tr.Status.Grade = &evalv1.GradeSummary{Score: 0.7, Reasons: "State: hash match | JSONPath: 1 of 2 checks passed; failed: x (y) | Transcript: 1 of 2 rules failed: r",
		Components: evalv1.GradeComponents{StateChecks: &one, TranscriptRules: &half}, JudgeStatus: evalv1.JudgeErrored}
	var got []string
	for _, c := range trialOf(tr).Components {
		got = append(got, fmt.Sprintf("%s %v %v", c.Name, c.Passed, c.Status == result.Errored))
	}
	if g := strings.Join(got, "; "); g != "state_checks true false; jsonpath false false; transcript_rules false false; llm_judge false true" {
		t.Fatalf("components %s", g)
	}
}
