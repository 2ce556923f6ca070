package result_test

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"tolokaforge.io/operator/api/artifacts"
	"tolokaforge.io/operator/api/result"
	"tolokaforge.io/operator/api/runnerpb"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// The one model reads the same outcome from the runner's response and from
// the grade.yaml written for it: scores, statuses (a not-evaluated and an
// errored component among them), reasons and notes.
func TestWireAndGradeFileReadTheSame(t *testing.T) {
	trace := 0.5
	cases := []struct {
		name  string
		grade *runnerpb.Grade
		want  map[string]result.Status
	}{
		{"mixed: scored, errored judge, not-evaluated custom checks", &runnerpb.Grade{
			Score: 0.4,
			Components: &runnerpb.GradeComponents{StateChecks: 1, TranscriptRules: 0.5, LlmJudge: -1, CustomChecks: -1,
				TraceChecks: &trace},
			JudgeStatus:   runnerpb.JudgeStatus_JUDGE_STATUS_ERRORED,
			StateDiffJson: `{"summary":"1 modified","modified":[{"table":"orders"}]}`,
			Reasons: "State: hash match | JSONPath: 2 of 3 checks passed | Transcript: 1 of 2 rules failed: x | Trace checks: score=0.5 | " +
				"Judge: errored, no score (llm_judge carries no weight share): boom | " +
				"custom_checks.checks: skipped: disabled | the weighted mean of 3 components",
		}, map[string]result.Status{
			"state_checks": result.Scored, "jsonpath": result.Scored, "transcript_rules": result.Scored,
			"trace_checks": result.Scored, "llm_judge": result.Errored, "custom_checks": result.NotEvaluated,
		}},
		{"custom checks errored without a score", &runnerpb.Grade{
			Score: 1, BinaryPass: true,
			Components: &runnerpb.GradeComponents{StateChecks: 1, TranscriptRules: -1, LlmJudge: -1, CustomChecks: -1},
			CustomChecks: []*runnerpb.CustomCheckResult{{CheckName: "a", Status: "passed", Score: 1},
				{CheckName: "b", Status: "error", Message: "boom"}},
			Reasons: "State: hash match | Custom checks: the suite failed to run — boom",
		}, map[string]result.Status{"state_checks": result.Scored, "custom_checks": result.Errored}},
		{"custom checks all skipped", &runnerpb.Grade{
			Components:   &runnerpb.GradeComponents{StateChecks: 0, TranscriptRules: -1, LlmJudge: -1, CustomChecks: -1},
			CustomChecks: []*runnerpb.CustomCheckResult{{CheckName: "a", Status: "skipped"}},
			Reasons:      "State: hash mismatch | Custom checks: no check reached a verdict",
		}, map[string]result.Status{"state_checks": result.Scored, "custom_checks": result.Skipped}},
		{"test execution", &runnerpb.Grade{Score: 0.25, Reasons: `Test execution: score=0.25 (reward file)`},
			map[string]result.Status{"test_execution": result.Scored}},
		{"host grade: nothing evaluated", &runnerpb.Grade{
			Components: &runnerpb.GradeComponents{StateChecks: -1, TranscriptRules: -1, LlmJudge: -1, CustomChecks: -1},
			Reasons:    "Not graded: the trial ended with termination_reason stuck_detected (x)",
		}, map[string]result.Status{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wire := result.FromWire(tc.grade)
			dir, err := artifacts.Write(t.TempDir(), &artifacts.Attempt{TrialID: "t:0", TaskID: "t", AttemptNumber: 1, GradedBy: "runner", Grade: tc.grade})
			if err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(filepath.Join(dir, artifacts.GradeFile))
			if err != nil {
				t.Fatal(err)
			}
			f, err := result.ParseFile(data)
			if err != nil {
				t.Fatal(err)
			}
			file, err := f.Grade()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(wire, file) {
				t.Fatalf("wire and grade.yaml differ:\nwire %+v\nfile %+v\n%s", wire, file, data)
			}
			got := map[string]result.Status{}
			for _, c := range wire.Components {
				got[c.Name] = c.Status
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("statuses = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestComponentDetails(t *testing.T) {
	trace := 0.5
	g := result.FromWire(&runnerpb.Grade{
		Score:         0.4,
		Components:    &runnerpb.GradeComponents{StateChecks: 1, TranscriptRules: 0.5, LlmJudge: -1, CustomChecks: -1, TraceChecks: &trace},
		JudgeStatus:   runnerpb.JudgeStatus_JUDGE_STATUS_ERRORED,
		StateDiffJson: `{"summary":"1 modified"}`,
		Reasons: "State: hash match | JSONPath: 2 of 3 checks passed | Transcript: 1 of 2 rules failed: x | " +
			"Judge: errored, no score | the weighted mean of 3 components",
	})
	st, _ := g.Component("state_checks")
	if st.Score == nil || *st.Score != 1 || !st.Passed || !reflect.DeepEqual(st.Reasons, []string{"State: hash match", "JSONPath: 2 of 3 checks passed"}) {
		t.Errorf("state_checks = %+v", st)
	}
	jp, _ := g.Component("jsonpath")
	if jp.Score == nil || math.Abs(*jp.Score-2.0/3) > 1e-12 || jp.Passed {
		t.Errorf("jsonpath = %+v", jp)
	}
	if j, _ := g.Component("llm_judge"); j.Score != nil || j.Passed || !j.Evaluated() {
		t.Errorf("errored judge = %+v", j)
	}
	if got := g.Evaluated(); !reflect.DeepEqual(got, []string{"state_checks", "transcript_rules", "trace_checks", "llm_judge"}) {
		t.Errorf("Evaluated = %v", got)
	}
	if !reflect.DeepEqual(g.Notes, []string{"the weighted mean of 3 components"}) || g.DiffSummary != "1 modified" {
		t.Errorf("notes %q diff %q", g.Notes, g.DiffSummary)
	}
	if got := g.FirstFailing(); got != "Transcript: 1 of 2 rules failed: x" {
		t.Errorf("FirstFailing = %q", got)
	}
}

func TestIsNotEvaluated(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want bool
	}{{-1, true}, {-0.5, true}, {math.NaN(), true}, {math.Inf(1), true}, {math.Inf(-1), true},
		{0, false}, {math.Copysign(0, -1), false}, {0.5, false}, {1, false}} {
		if got := result.IsNotEvaluated(tc.v); got != tc.want {
			t.Errorf("IsNotEvaluated(%v) = %t, want %t", tc.v, got, tc.want)
		}
	}
}

func TestWireScores(t *testing.T) {
	zero := 0.0
	got := result.WireScores(&runnerpb.GradeComponents{StateChecks: 0, TranscriptRules: -1, LlmJudge: 0.5, CustomChecks: -2, TraceChecks: &zero})
	if want := map[string]float64{"state_checks": 0, "llm_judge": 0.5, "trace_checks": 0}; !reflect.DeepEqual(got, want) {
		t.Fatalf("scores = %v, want %v", got, want)
	}
	// Absent trace_checks (an older runner) is not evaluated, not 0.
	if got := result.WireScores(&runnerpb.GradeComponents{StateChecks: 1}); func() bool { _, ok := got["trace_checks"]; return ok }() {
		t.Fatalf("absent trace_checks read as evaluated: %v", got)
	}
	if got := result.WireScores(nil); len(got) != 0 {
		t.Fatalf("nil components = %v", got)
	}
}

// Status keeps the scores and the judge's verdict: the same reading, less
// what status does not carry.
func TestSummaryAndFromStatus(t *testing.T) {
	g := &runnerpb.Grade{Score: math.NaN(), BinaryPass: false,
		Components:  &runnerpb.GradeComponents{StateChecks: 0.5, TranscriptRules: -1, LlmJudge: -1, CustomChecks: math.NaN()},
		JudgeStatus: runnerpb.JudgeStatus_JUDGE_STATUS_ERRORED, Reasons: "State: x | Judge: errored"}
	s := result.Summary(g, 2)
	if s.Score != 0 || s.Attempt != 2 || s.JudgeStatus != evalv1.JudgeErrored || s.Components.StateChecks == nil ||
		*s.Components.StateChecks != 0.5 || s.Components.CustomChecks != nil || s.Components.TranscriptRules != nil {
		t.Fatalf("summary = %+v", s)
	}
	back := result.FromStatus(s)
	if j, ok := back.Component("llm_judge"); !ok || j.Status != result.Errored {
		t.Fatalf("judge from status = %+v", j)
	}
	if st, _ := back.Component("state_checks"); st.Score == nil || *st.Score != 0.5 {
		t.Fatalf("state_checks from status = %+v", st)
	}
	if long := result.Truncate("ééé", 3); long != "é…" {
		t.Fatalf("Truncate = %q", long)
	}
}
