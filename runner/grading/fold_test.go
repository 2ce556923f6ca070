package grading

import (
	"math"
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

// TestFoldNeverNonFinite: weights near the float64 maximum fold to the right mean (their
// naive sum overflows to +Inf, and Inf/Inf is NaN), -0 is 0, and a NaN or infinite
// weight, score or threshold (which validation refuses at every entrance, so only a
// config built around it reaches here) fails the grade loudly instead of publishing NaN.
func TestFoldNeverNonFinite(t *testing.T) {
	st := func(s float64) componentScore { return componentScore{name: task.ComponentStateChecks, score: s} }
	tr := func(s float64) componentScore { return componentScore{name: task.ComponentTranscriptRules, score: s} }
	inf, nan, negZero := math.Inf(1), math.NaN(), math.Copysign(0, -1)
	both := func(a, b float64) map[string]float64 {
		return map[string]float64{task.ComponentStateChecks: a, task.ComponentTranscriptRules: b}
	}
	for _, c := range []struct {
		name      string
		method    task.CombineMethod
		weights   map[string]float64
		threshold float64
		scored    []componentScore
		want      foldResult
		err       string
	}{
		{"1e308 weights: 0.5, not NaN", task.CombineWeighted, both(1e308, 1e308), 0.5, []componentScore{st(1), tr(0)}, foldResult{score: 0.5, pass: true}, ""},
		{"MaxFloat64 weights: 0.5", task.CombineWeighted, both(math.MaxFloat64, math.MaxFloat64), 1, []componentScore{st(0), tr(1)}, foldResult{score: 0.5}, ""},
		{"1e308 beside 1: the huge share wins", task.CombineWeighted, both(1e308, 1), 1, []componentScore{st(1), tr(0)}, foldResult{score: 1, pass: true}, ""},
		{"-0 weights are zero shares", task.CombineWeighted, both(negZero, negZero), 0, []componentScore{st(1), tr(1)},
			foldResult{sentence: "the weights of the scored components (state_checks=-0, transcript_rules=-0) sum to zero, so the weighted mean has no share to divide by"}, ""},
		{"a -0 score folds to 0", task.CombineWeighted, both(1, 1), 0, []componentScore{st(negZero), tr(negZero)}, foldResult{score: 0, pass: true}, ""},
		{"a -0 score under all is 0", task.CombineAll, both(1, 1), 0.5, []componentScore{st(negZero), tr(1)}, foldResult{score: 0}, ""},
		{"an infinite weight", task.CombineWeighted, both(inf, 1), 1, []componentScore{st(1), tr(0)}, foldResult{},
			"Grading error: weights.state_checks is +Inf, not a finite number >= 0"},
		{"a NaN weight, even under any", task.CombineAny, both(1, nan), 1, []componentScore{st(1), tr(0)}, foldResult{},
			"Grading error: weights.transcript_rules is NaN, not a finite number >= 0"},
		{"a NaN score under all", task.CombineAll, both(1, 1), 1, []componentScore{st(nan), tr(0)}, foldResult{},
			"Grading error: state_checks scored NaN, not a finite number"},
		{"an infinite score under weighted", task.CombineWeighted, both(1, 1), 1, []componentScore{st(1), tr(inf)}, foldResult{},
			"Grading error: transcript_rules scored +Inf, not a finite number"},
		{"a NaN threshold", task.CombineWeighted, both(1, 1), nan, []componentScore{st(1), tr(1)}, foldResult{},
			"Grading error: pass_threshold is NaN, not a finite number"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := fold("t", c.method, c.weights, c.threshold, c.scored, nil)
			if c.err != "" {
				if err == nil || err.Error() != c.err {
					t.Fatalf("err = %v\nwant %s", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want || math.Signbit(got.score) {
				t.Errorf("fold = %+v, want %+v", got, c.want)
			}
		})
	}
}
