package task

import (
	"fmt"
	"math"
)

// WeightedMean is the one weighted mean of grading: Σ wᵢ·sᵢ / Σ wᵢ over the
// component fold, trace routes, rubric criteria and custom checks. shares is false when
// the weights sum to zero (the mean has no share to divide by; the caller says so in
// its own words). It never returns NaN or ±Inf: each weight is first divided by the
// largest, so weights near math.MaxFloat64 cannot overflow their sum, and the mean is
// then a convex combination of the scores, bounded by them. A weight that is negative
// or not finite, or a score that is not finite, is an error naming its index: the
// validation every entrance runs refuses those before a trial starts, so one reaching
// here is a config built around it, and no number is better than a wrong one.
func WeightedMean(weights, scores []float64) (mean float64, shares bool, err error) {
	if len(weights) != len(scores) {
		return 0, false, fmt.Errorf("weighted mean: %d weights for %d scores", len(weights), len(scores))
	}
	var top float64
	for i, w := range weights {
		if !IsFinite(w) || w < 0 {
			return 0, false, fmt.Errorf("weighted mean: weight %d is %v, not a finite number >= 0", i, w)
		}
		top = math.Max(top, w)
	}
	for i, s := range scores {
		if !IsFinite(s) {
			return 0, false, fmt.Errorf("weighted mean: score %d is %v, not a finite number", i, s)
		}
	}
	if top == 0 {
		return 0, false, nil
	}
	// The plain Σ wᵢ·sᵢ / Σ wᵢ whenever it cannot overflow: its rounding is the
	// reference implementation's, so a grade's sixth decimal agrees with it.
	var plainSum, plainTotal float64
	for i, w := range weights {
		plainSum += w
		plainTotal += w * scores[i]
	}
	if IsFinite(plainSum) && IsFinite(plainTotal) {
		return PositiveZero(plainTotal / plainSum), true, nil
	}
	// Near math.MaxFloat64: each ratio is in [0, 1], so the sum is at most
	// len(weights).
	var sum float64
	for _, w := range weights {
		sum += w / top
	}
	for i, w := range weights {
		mean += (w / top / sum) * scores[i]
	}
	return PositiveZero(mean), true, nil
}

// IsFinite reports whether x is neither NaN nor ±Inf.
func IsFinite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// PositiveZero turns -0 into 0, so a score is never written as "-0".
func PositiveZero(x float64) float64 {
	if x == 0 {
		return 0
	}
	return x
}
