package task

import (
	"math"
	"testing"
)

func TestWeightedMean(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	for _, c := range []struct {
		name            string
		weights, scores []float64
		want            float64
		shares          bool
		err             string
	}{
		{"plain", []float64{0.7, 0.3}, []float64{1, 0.5}, 0.85, true, ""},
		{"weights at the float64 maximum do not overflow their sum", []float64{1e308, 1e308}, []float64{1, 0}, 0.5, true, ""},
		{"the largest finite weights", []float64{math.MaxFloat64, math.MaxFloat64, math.MaxFloat64}, []float64{1, 1, 0}, 2.0 / 3, true, ""},
		{"a huge weight beside a tiny one", []float64{1e308, 5e-324}, []float64{0.25, 1}, 0.25, true, ""},
		{"subnormal weights alone", []float64{5e-324, 5e-324}, []float64{1, 0}, 0.5, true, ""},
		{"-0 weights are zero shares", []float64{math.Copysign(0, -1), 1}, []float64{0, 1}, 1, true, ""},
		{"a -0 score is 0, never -0", []float64{1}, []float64{math.Copysign(0, -1)}, 0, true, ""},
		{"all zero: no share", []float64{0, math.Copysign(0, -1)}, []float64{1, 1}, 0, false, ""},
		{"nothing: no share", nil, nil, 0, false, ""},
		{"an infinite weight", []float64{inf, 1}, []float64{1, 0}, 0, false, "weighted mean: weight 0 is +Inf, not a finite number >= 0"},
		{"a NaN weight", []float64{1, nan}, []float64{1, 0}, 0, false, "weighted mean: weight 1 is NaN, not a finite number >= 0"},
		{"a negative weight", []float64{1, -1}, []float64{1, 0}, 0, false, "weighted mean: weight 1 is -1, not a finite number >= 0"},
		{"a NaN score", []float64{1, 1}, []float64{nan, 0}, 0, false, "weighted mean: score 0 is NaN, not a finite number"},
		{"an infinite score", []float64{1, 1}, []float64{1, math.Inf(-1)}, 0, false, "weighted mean: score 1 is -Inf, not a finite number"},
		{"mismatched lengths", []float64{1}, nil, 0, false, "weighted mean: 1 weights for 0 scores"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, shares, err := WeightedMean(c.weights, c.scores)
			if c.err != "" {
				if err == nil || err.Error() != c.err {
					t.Fatalf("err = %v, want %s", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if shares != c.shares || math.Abs(got-c.want) > 1e-12 || math.Signbit(got) {
				t.Errorf("WeightedMean = %v (shares %v), want %v (shares %v)", got, shares, c.want, c.shares)
			}
		})
	}
}
