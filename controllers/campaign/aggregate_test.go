package campaign

import (
	"math"
	"testing"

	"k8s.io/utils/ptr"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

func outcomes(agent, task string, phases ...evalv1.TrialPhase) []Outcome {
	out := make([]Outcome, len(phases))
	for i, p := range phases {
		out[i] = Outcome{Agent: agent, Task: task, Phase: p}
		switch p {
		case evalv1.PhasePassed:
			out[i].Score = ptr.To(1.0)
		case evalv1.PhaseFailed:
			out[i].Score = ptr.To(0.25)
		}
	}
	return out
}

func repeat(p evalv1.TrialPhase, n int) []evalv1.TrialPhase {
	out := make([]evalv1.TrialPhase, n)
	for i := range out {
		out[i] = p
	}
	return out
}

func approx(t *testing.T, what string, got *float64, want float64) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s is absent, want %.6f", what, want)
	}
	if math.Abs(*got-want) > 1e-12 {
		t.Fatalf("%s = %.15f, want %.15f", what, *got, want)
	}
}

func absent(t *testing.T, what string, got *float64) {
	t.Helper()
	if got != nil {
		t.Fatalf("%s = %v, want absent", what, *got)
	}
}

// 3 tasks x 4 trials x 2 agents: the oracle passes everything, the LLM
// passes a and b and fails c every time.
func TestAggregatesCampaignByHand(t *testing.T) {
	var all []Outcome
	for _, task := range []string{"a", "b", "c"} {
		all = append(all, outcomes("oracle", task, repeat(evalv1.PhasePassed, 4)...)...)
		p := evalv1.PhasePassed
		if task == "c" {
			p = evalv1.PhaseFailed
		}
		all = append(all, outcomes("llm", task, repeat(p, 4)...)...)
	}
	overall, perAgent, perTask := aggregates(all, 4, []string{"oracle", "llm"}, []string{"a", "b", "c"})

	if overall.Trials != 24 || overall.Passes != 20 || overall.KCells != 6 {
		t.Fatalf("overall trials/passes/kCells = %d/%d/%d, want 24/20/6", overall.Trials, overall.Passes, overall.KCells)
	}
	approx(t, "overall pass@1", overall.PassAt1, 5.0/6)
	approx(t, "overall pass^4", overall.PassHatK, 5.0/6)
	approx(t, "overall pass@4", overall.PassAtK, 5.0/6)
	approx(t, "overall mean score", overall.MeanScore, (20*1.0+4*0.25)/24)

	if perAgent[0].Name != "oracle" || perAgent[1].Name != "llm" {
		t.Fatalf("per-agent order %q, %q", perAgent[0].Name, perAgent[1].Name)
	}
	approx(t, "oracle pass^4", perAgent[0].PassHatK, 1)
	approx(t, "llm pass@1", perAgent[1].PassAt1, 2.0/3)
	approx(t, "llm pass^4", perAgent[1].PassHatK, 2.0/3)
	if perAgent[1].Trials != 12 || perAgent[1].Passes != 8 {
		t.Fatalf("llm trials/passes = %d/%d", perAgent[1].Trials, perAgent[1].Passes)
	}
	approx(t, "task c pass@1", perTask[2].PassAt1, 0.5)
	approx(t, "task c pass^4 (oracle 1, llm 0)", perTask[2].PassHatK, 0.5)
	approx(t, "task a pass^4", perTask[0].PassHatK, 1)
}

// Mixed cells: infra failures and invalid trials leave n; GradingFailed is a
// measured non-pass; spend counts everything; a cell with n < k stays out of
// pass^k but in pass@1.
func TestSummarizeMixed(t *testing.T) {
	all := []Outcome{
		{Agent: "a", Task: "t1", Phase: evalv1.PhasePassed, Score: ptr.To(1.0), Tokens: 100, CostUSD: 0.5},
		{Agent: "a", Task: "t1", Phase: evalv1.PhasePassed, Score: ptr.To(0.9), Tokens: 100, CostUSD: 0.5},
		{Agent: "a", Task: "t1", Phase: evalv1.PhaseFailed, Score: ptr.To(0.2), Tokens: 100, CostUSD: 0.5},
		{Agent: "a", Task: "t1", Phase: evalv1.PhaseInfraFailed, Tokens: 40, CostUSD: 0.25},
		{Agent: "a", Task: "t2", Phase: evalv1.PhaseGradingFailed, Tokens: 10, CostUSD: 0.125},
		{Agent: "a", Task: "t2", Phase: evalv1.PhasePassed, Score: ptr.To(1.0)},
		{Agent: "a", Task: "t2", Phase: evalv1.PhaseInvalid},
		{Agent: "a", Task: "t2", Phase: evalv1.PhaseRunning, Tokens: 5},
	}
	cells := Cells(all)
	if len(cells) != 2 {
		t.Fatalf("%d cells", len(cells))
	}
	c1, c2 := cells[0], cells[1]
	if c1.N != 3 || c1.C != 2 || c1.InfraFailed != 1 || c1.Tokens != 340 || c1.CostUSD != 1.75 {
		t.Fatalf("t1 cell %+v", *c1)
	}
	if c2.N != 2 || c2.C != 1 || c2.Invalid != 1 || c2.Scored != 1 || c2.Tokens != 15 {
		t.Fatalf("t2 cell %+v", *c2)
	}
	a := Summarize(cells, 3)
	if a.Trials != 5 || a.Passes != 3 || a.KCells != 1 || a.Tokens != 355 || a.CostUSD != 1.875 {
		t.Fatalf("aggregate %+v", a)
	}
	approx(t, "pass@1 = mean(2/3, 1/2)", a.PassAt1, (2.0/3+0.5)/2)
	approx(t, "pass^3 over t1 only = C(2,3)/C(3,3)", a.PassHatK, 0)
	approx(t, "pass@3 over t1 only", a.PassAtK, 1)
	approx(t, "mean score over graded trials", a.MeanScore, (1.0+0.9+0.2+1.0)/4)

	empty := Summarize(nil, 3)
	absent(t, "empty pass@1", empty.PassAt1)
	absent(t, "empty pass^k", empty.PassHatK)
	absent(t, "empty mean score", empty.MeanScore)
	if empty.Trials != 0 || empty.KCells != 0 {
		t.Fatalf("empty aggregate %+v", empty)
	}

	// The curve averages over the cells with n >= 3: t1 only (n=3, c=2).
	curve := PassHatCurve(cells, 3)
	if len(curve) != 3 {
		t.Fatalf("curve %v", curve)
	}
	approx(t, "pass^1 curve", curve[0], 2.0/3)
	approx(t, "pass^2 curve = C(2,2)/C(3,2)", curve[1], 1.0/3)
	approx(t, "pass^3 curve", curve[2], 0)
	curve = PassHatCurve(cells, 2) // both cells
	approx(t, "pass^1 over both", curve[0], (2.0/3+0.5)/2)
	approx(t, "pass^2 over both = mean(1/3, 0)", curve[1], (1.0/3)/2)
	if PassHatCurve(cells, 4) != nil {
		t.Fatal("no cell has 4 trials: the curve must be absent")
	}
}

// An agent or task with no trials keeps its line.
func TestAggregatesKeepsEmptyLines(t *testing.T) {
	_, perAgent, perTask := aggregates(nil, 2, []string{"x"}, []string{"t"})
	if len(perAgent) != 1 || perAgent[0].Name != "x" || perAgent[0].Trials != 0 || perAgent[0].PassAt1 != nil {
		t.Fatalf("per agent %+v", perAgent)
	}
	if len(perTask) != 1 || perTask[0].Name != "t" {
		t.Fatalf("per task %+v", perTask)
	}
}
