package campaign

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

func TestPlanBudget(t *testing.T) {
	usd := func(v float64) *evalv1.Budget { return &evalv1.Budget{MaxUSD: &v} }
	tok := func(v int64) *evalv1.Budget { return &evalv1.Budget{MaxTokens: &v} }
	cases := []struct {
		name        string
		budget      *evalv1.Budget
		trials      []trialView
		wantCreates int
		exceeded    bool
		completed   bool
	}{
		// $0.25 spent, $0.25 a Trial: 0.25, 0.5 and 0.75 projected are under $1.
		{"under budget: as many as the projection allows", usd(1), []trialView{withCost(tv("a", "t", 0, evalv1.PhasePassed), 0.25, 10)}, 3, false, false},
		{"spend equals budget: stop", usd(0.5), []trialView{
			withCost(tv("a", "t", 0, evalv1.PhasePassed), 0.25, 10), withCost(tv("a", "t", 1, evalv1.PhaseFailed), 0.25, 10),
		}, 0, true, true},
		{"reached while one runs: not complete yet", usd(0.25), []trialView{
			withCost(tv("a", "t", 0, evalv1.PhasePassed), 0.25, 10), tv("a", "t", 1, evalv1.PhaseRunning),
		}, 0, true, false},
		{"tokens", tok(20), []trialView{withCost(tv("a", "t", 0, evalv1.PhasePassed), 0, 20)}, 0, true, true},
		{"zero budget creates nothing", usd(0), nil, 0, true, true},
		// 2 finished at $0.25, 1 running: projected 0.5+0.25 < 1 allows one
		// more, 0.5+0.5 does not.
		{"projection holds creations", usd(1), []trialView{
			withCost(tv("a", "t", 0, evalv1.PhasePassed), 0.25, 0), withCost(tv("a", "t", 1, evalv1.PhasePassed), 0.25, 0),
			tv("a", "t", 2, evalv1.PhaseRunning),
		}, 1, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := campaign(8, 5, "a")
			c.Spec.Budget = tc.budget
			p := (&World{Campaign: c, Tasks: []string{"t"}, Trials: tc.trials, Now: now}).Plan()
			if len(p.Creates) != tc.wantCreates {
				t.Fatalf("creates %v, want %d", names(p.Creates), tc.wantCreates)
			}
			if tc.exceeded {
				wantCond(t, &p.Status, evalv1.CampaignBudgetExceeded, metav1.ConditionTrue, evalv1.ReasonBudgetExceeded)
			} else {
				wantCond(t, &p.Status, evalv1.CampaignBudgetExceeded, metav1.ConditionFalse, evalv1.ReasonWithinBudget)
			}
			if tc.completed {
				wantCond(t, &p.Status, evalv1.CampaignCompleted, metav1.ConditionTrue, evalv1.ReasonBudgetExceeded)
			} else {
				wantCond(t, &p.Status, evalv1.CampaignCompleted, metav1.ConditionFalse, evalv1.ReasonRunning)
			}
		})
	}
}

func TestBudgetAllowance(t *testing.T) {
	usd := func(v float64) *evalv1.Budget { return &evalv1.Budget{MaxUSD: ptr.To(v)} }
	tokens := func(v int64) *evalv1.Budget { return &evalv1.Budget{MaxTokens: ptr.To(v)} }
	cases := []struct {
		name          string
		b             *evalv1.Budget
		spent         evalv1.Spend
		running       int
		finished      int
		finishedSpend evalv1.Spend
		want, allowed int
	}{
		// Nothing finished yet: no mean to project with, so only "spent < budget".
		{"nothing spent, nothing known", usd(1), evalv1.Spend{}, 0, 0, evalv1.Spend{}, 5, 5},
		{"spent reaches the budget", usd(1), evalv1.Spend{CostUSD: 1}, 0, 0, evalv1.Spend{}, 5, 0},
		// Mean $0.5: spent 0.5 + running 1 x 0.5 = 1.0 >= 1.25? no; + 2 x 0.5 = 1.5 stops.
		{"running Trials' projection holds the rest", usd(1.25), evalv1.Spend{CostUSD: 0.5}, 1, 1, evalv1.Spend{CostUSD: 0.5}, 5, 1},
		{"tokens bound", tokens(1000), evalv1.Spend{Tokens: 400}, 0, 2, evalv1.Spend{Tokens: 400}, 9, 3},
		{"want bounds", usd(100), evalv1.Spend{}, 0, 1, evalv1.Spend{CostUSD: 1}, 2, 2},
		{"both limits, the tighter wins", &evalv1.Budget{MaxUSD: ptr.To(100.0), MaxTokens: ptr.To(int64(10))}, evalv1.Spend{Tokens: 10}, 0, 0, evalv1.Spend{}, 3, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := budgetAllowance(tc.b, tc.spent, tc.running, tc.finished, tc.finishedSpend, tc.want); got != tc.allowed {
				t.Fatalf("budgetAllowance = %d, want %d", got, tc.allowed)
			}
		})
	}
}

func TestSpendTextAndBudgetReached(t *testing.T) {
	b := &evalv1.Budget{MaxUSD: ptr.To(1.25), MaxTokens: ptr.To(int64(1000))}
	s := evalv1.Spend{CostUSD: 1.5, Tokens: 400}
	if got, want := spendText(s, b), "$1.5000 of $1.2500, 400 of 1000 tokens"; got != want {
		t.Fatalf("spendText = %q, want %q", got, want)
	}
	if !budgetReached(b, s) {
		t.Fatal("$1.5 of $1.25 is not reached")
	}
	if budgetReached(nil, s) || budgetReached(&evalv1.Budget{MaxTokens: ptr.To(int64(401))}, s) {
		t.Fatal("reached without a budget, or under the token limit")
	}
}

func TestGateSaysWhyTrialsWait(t *testing.T) {
	c := campaign(4, 2, "a")
	if g := gate(c, census{nonTerminal: 1}, evalv1.Spend{}, 3); g.create != 1 || g.heldByParallel != 2 || g.heldByBudget != 0 {
		t.Fatalf("maxParallel gate %+v", g)
	}
	c.Spec.Budget = &evalv1.Budget{MaxUSD: ptr.To(1.0)}
	g := gate(c, census{}, evalv1.Spend{CostUSD: 1}, 3)
	if g.create != 0 || g.heldByBudget != 3 || g.heldByParallel != 0 || !g.reached {
		t.Fatalf("budget gate %+v", g)
	}
}
