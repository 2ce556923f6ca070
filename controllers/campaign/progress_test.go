package campaign

import (
	"testing"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// TestOutcomeCountsRunningSpend: a running Trial's spend so far (its live
// progress) is part of its outcome's tokens and cost, beside the usage of
// its ended attempts; a finished Trial's leftover progress is not.
func TestOutcomeCountsRunningSpend(t *testing.T) {
	usage := &evalv1.Usage{TotalTokens: 1000, TotalCostUSD: 0.25}
	progress := &evalv1.TrialProgress{Attempt: 2, Turn: 3,
		Usage: evalv1.Usage{TotalTokens: 400, TotalCostUSD: 0.125}}
	cases := []struct {
		name       string
		phase      evalv1.TrialPhase
		usage      *evalv1.Usage
		progress   *evalv1.TrialProgress
		wantTokens int64
		wantCost   float64
	}{
		{"running, first attempt", evalv1.PhaseRunning, nil, progress, 400, 0.125},
		{"running, after an ended attempt", evalv1.PhaseRunning, usage, progress, 1400, 0.375},
		{"running, no turn yet", evalv1.PhaseRunning, usage, nil, 1000, 0.25},
		{"passed", evalv1.PhasePassed, usage, progress, 1000, 0.25},
		{"pending", evalv1.PhasePending, nil, nil, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := &evalv1.Trial{Status: evalv1.TrialStatus{Phase: c.phase, Usage: c.usage, Progress: c.progress}}
			o := OutcomeOf(tr)
			if o.Tokens != c.wantTokens || o.CostUSD != c.wantCost {
				t.Fatalf("tokens %d cost %g, want %d %g", o.Tokens, o.CostUSD, c.wantTokens, c.wantCost)
			}
		})
	}
}
