package grading

import (
	"testing"

	"tolokaforge.io/operator/api/task"
)

func TestFold(t *testing.T) {
	st := func(s float64) componentScore { return componentScore{name: task.ComponentStateChecks, score: s} }
	tr := func(s float64) componentScore { return componentScore{name: task.ComponentTranscriptRules, score: s} }
	w := func(kv ...any) map[string]float64 {
		m := map[string]float64{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1].(float64)
		}
		return m
	}
	for _, c := range []struct {
		name      string
		method    task.CombineMethod
		weights   map[string]float64
		threshold float64
		scored    []componentScore
		asked     []string
		want      foldResult
		err       string
	}{
		{"weighted mean", task.CombineWeighted, w("state_checks", 0.7, "transcript_rules", 0.3), 0.75,
			[]componentScore{st(1), tr(0.5)}, nil, foldResult{score: 0.85, pass: true}, ""},
		{"weighted perfect scores are exactly 1.0", task.CombineWeighted, w("state_checks", 0.1, "transcript_rules", 0.2), 1,
			[]componentScore{st(1), tr(1)}, nil, foldResult{score: 1, pass: true}, ""},
		{"weighted rounds like Python round(x, 6)", task.CombineWeighted, w("state_checks", 1.0, "transcript_rules", 2.0), 1,
			[]componentScore{st(1), tr(0)}, nil, foldResult{score: 0.333333}, ""},
		{"weighted over scored components only", task.CombineWeighted, w("state_checks", 0.7, "transcript_rules", 0.3), 1,
			[]componentScore{st(1)}, nil, foldResult{score: 1, pass: true}, ""},
		{"a zero share excludes its component from the mean", task.CombineWeighted, w("state_checks", 1.0, "transcript_rules", 0.0), 1,
			[]componentScore{st(1), tr(0)}, nil, foldResult{score: 1, pass: true}, ""},
		{"shares summing to zero fail with the reason", task.CombineWeighted, w("state_checks", 0.0, "transcript_rules", 0.0), 0,
			[]componentScore{st(1), tr(1)}, nil,
			foldResult{score: 0, pass: false, sentence: "the weights of the scored components (state_checks=0, transcript_rules=0) sum to zero, so the weighted mean has no share to divide by"}, ""},
		{"all is the weakest", task.CombineAll, w("state_checks", 1.0, "transcript_rules", 1.0), 0.5,
			[]componentScore{st(0.9), tr(0.4)}, nil, foldResult{score: 0.4}, ""},
		{"all: a 0.0 weight is inert", task.CombineAll, w("state_checks", 0.0, "transcript_rules", 0.0), 0.4,
			[]componentScore{st(0.9), tr(0.4)}, nil, foldResult{score: 0.4, pass: true}, ""},
		{"any is the strongest", task.CombineAny, w("state_checks", 0.0, "transcript_rules", 1.0), 0.9,
			[]componentScore{st(0.9), tr(0.4)}, nil, foldResult{score: 0.9, pass: true}, ""},
		{"score at the threshold passes", task.CombineWeighted, w("state_checks", 1.0), 0.75,
			[]componentScore{st(0.75)}, nil, foldResult{score: 0.75, pass: true}, ""},
		{"nothing configured, nothing weighted: nothing owed", task.CombineWeighted, w(), 1, nil, nil,
			foldResult{score: 1, pass: true, sentence: sentenceNothingOwed}, ""},
		{"asked for and not counted", task.CombineAll, w("state_checks", 1.0), 1, nil, []string{"state_checks (weighted)", "transcript_rules (configured)"},
			foldResult{score: 0, pass: false, sentence: "no component was scored, yet the task asked for state_checks (weighted), transcript_rules (configured): nothing it asked for was counted"}, ""},
		{"MissingComponentWeight under weighted", task.CombineWeighted, w("state_checks", 1.0), 1, []componentScore{st(1), tr(1)}, nil, foldResult{},
			"Trial 't' is not gradeable: MissingComponentWeight: transcript_rules was scored and combine.weights declares no weight for it (weights declares state_checks=1); neither 1.0 nor 0.0 is defensible, so the fold refuses: declare a weight for transcript_rules"},
		{"MissingComponentWeight under any too: every folded component carries a share", task.CombineAny, w(), 1, []componentScore{st(1), tr(1)}, nil, foldResult{},
			"Trial 't' is not gradeable: MissingComponentWeight: state_checks was scored and combine.weights declares no weight for it; transcript_rules was scored and combine.weights declares no weight for it (weights declares none); neither 1.0 nor 0.0 is defensible, so the fold refuses: declare a weight for state_checks, transcript_rules"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := fold("t", c.method, c.weights, c.threshold, c.scored, c.asked)
			if c.err != "" {
				if err == nil || err.Error() != c.err {
					t.Fatalf("err = %v\nwant %s", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("fold = %+v, want %+v", got, c.want)
			}
		})
	}
}
