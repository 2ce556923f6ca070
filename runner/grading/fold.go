package grading

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner/grading/gradefmt"
)

// componentScore is one scored component entering the fold.
type componentScore struct {
	name  string
	score float64
}

// foldResult is the final score, the pass verdict and, when the fold decided without
// averaging, its own sentence for Grade.reasons.
type foldResult struct {
	score    float64
	pass     bool
	sentence string
}

// The fold's own sentences, when it decides without a score to read.
const (
	sentenceNothingOwed = "no component was configured and no weight names one, so nothing was scored and nothing was owed"
	sentenceNotCounted  = "no component was scored, yet the task asked for %s: nothing it asked for was counted"
	sentenceZeroShares  = "the weights of the scored components (%s) sum to zero, so the weighted mean has no share to divide by"
)

// fold combines the scored components by method: weighted (their mean scaled by the
// weights), all (the weakest) or any (the strongest); binary_pass is score >=
// threshold. Every folded component must carry a weight whatever the method (an
// authored pack cannot omit one); under all and any a weight's value is inert, so a
// 0.0 there excludes nothing. asked lists what the task configured or weighted, for the
// sentence when nothing was scored.
func fold(id string, method task.CombineMethod, weights map[string]float64, threshold float64, scored []componentScore, asked []string) (foldResult, error) {
	if len(scored) == 0 {
		if len(asked) == 0 {
			return foldResult{score: 1, pass: true, sentence: sentenceNothingOwed}, nil
		}
		return foldResult{score: 0, pass: false, sentence: fmt.Sprintf(sentenceNotCounted, strings.Join(asked, ", "))}, nil
	}
	var missing []string
	for _, c := range scored {
		if _, ok := weights[c.name]; !ok {
			missing = append(missing, c.name)
		}
	}
	if len(missing) > 0 {
		clauses := make([]string, len(missing))
		for i, m := range missing {
			clauses[i] = m + " was scored and combine.weights declares no weight for it"
		}
		return foldResult{}, notGradeable(id, fmt.Sprintf(
			"MissingComponentWeight: %s (weights declares %s); neither 1.0 nor 0.0 is defensible, so the fold refuses: declare a weight for %s",
			strings.Join(clauses, "; "), describeWeights(weights), strings.Join(missing, ", ")), nil)
	}
	// The validation every entrance runs refuses a non-finite weight, so one here is a
	// config built around it: no grade beats a NaN one.
	if !task.IsFinite(threshold) {
		return foldResult{}, gradingError(fmt.Errorf("pass_threshold is %v, not a finite number", threshold))
	}
	for _, c := range scored {
		if !task.IsFinite(c.score) {
			return foldResult{}, gradingError(fmt.Errorf("%s scored %v, not a finite number", c.name, c.score))
		}
		if w := weights[c.name]; !task.IsFinite(w) || w < 0 {
			return foldResult{}, gradingError(fmt.Errorf("weights.%s is %v, not a finite number >= 0", c.name, w))
		}
	}
	var r foldResult
	switch method {
	case task.CombineAll:
		r.score = scored[0].score
		for _, c := range scored[1:] {
			r.score = math.Min(r.score, c.score)
		}
	case task.CombineAny:
		r.score = scored[0].score
		for _, c := range scored[1:] {
			r.score = math.Max(r.score, c.score)
		}
	case task.CombineWeighted, "":
		ws, ss := make([]float64, len(scored)), make([]float64, len(scored))
		shares := make([]string, len(scored))
		for i, c := range scored {
			ws[i], ss[i] = weights[c.name], c.score
			shares[i] = fmt.Sprintf("%s=%g", c.name, ws[i])
		}
		mean, ok, err := task.WeightedMean(ws, ss)
		if err != nil {
			return foldResult{}, gradingError(err) // unreachable: checked above
		}
		if !ok {
			return foldResult{score: 0, pass: false, sentence: fmt.Sprintf(sentenceZeroShares, strings.Join(shares, ", "))}, nil
		}
		r.score = mean
	default:
		return foldResult{}, fmt.Errorf("combine_method %q is not one of weighted, all, any", method)
	}
	r.score = task.PositiveZero(gradefmt.Round6(r.score))
	r.pass = r.score >= threshold
	return r, nil
}

func describeWeights(w map[string]float64) string {
	if len(w) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(w))
	for k := range w {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%g", k, w[k])
	}
	return strings.Join(parts, ", ")
}
