package campaign

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

var now = metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))

func campaign(k, maxParallel int32, agents ...string) *evalv1.Campaign {
	c := &evalv1.Campaign{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "cuid", Generation: 1},
		Spec:       evalv1.CampaignSpec{TrialsPerTask: k, MaxParallel: maxParallel},
	}
	for _, a := range agents {
		c.Spec.Agents = append(c.Spec.Agents, evalv1.NamedAgent{Name: a, Model: evalv1.ModelSpec{Provider: evalv1.ProviderOracle}})
	}
	return c
}

// tv is a Trial of cell (agent, task, index) in phase p, created at gen 1.
func tv(agent, task string, index int32, p evalv1.TrialPhase) TrialView {
	name := TrialName("c", agent, task, index)
	v := TrialView{
		Name: name, UID: types.UID("uid-" + name), Ours: true,
		Cell: Cell{Agent: agent, Task: task, Index: index}, CreatedGeneration: 1,
		Phase: p, Terminal: IsTerminalPhase(p),
		Outcome: Outcome{Agent: agent, Task: task, Phase: p},
	}
	if p == evalv1.PhasePassed {
		v.Outcome.Score = ptr.To(1.0)
	}
	return v
}

func withCost(v TrialView, usd float64, tokens int64) TrialView {
	v.Outcome.CostUSD, v.Outcome.Tokens = usd, tokens
	return v
}

func names(cs []Creation) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
}

func cond(st *evalv1.CampaignStatus, typ string) *metav1.Condition {
	return meta.FindStatusCondition(st.Conditions, typ)
}

func wantCond(t *testing.T, st *evalv1.CampaignStatus, typ string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	c := cond(st, typ)
	if c == nil {
		t.Fatalf("condition %s missing", typ)
	}
	if c.Status != status || c.Reason != reason {
		t.Fatalf("condition %s = %s/%s (%s), want %s/%s", typ, c.Status, c.Reason, c.Message, status, reason)
	}
}

func TestPlanCreatesUpToMaxParallelInIndexMajorOrder(t *testing.T) {
	w := &World{Campaign: campaign(2, 3, "a1", "a2"), Tasks: []string{"t1", "t2"}, Now: now}
	p := PlanCampaign(w)
	want := []string{"c-a1-t1-0", "c-a2-t1-0", "c-a1-t2-0"}
	if got := names(p.Creates); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("creates %v, want %v", got, want)
	}
	c := p.Status.Counts
	if c.Total != 8 || c.Pending != 3 || c.Queued != 5 || c.Running != 0 {
		t.Fatalf("counts %+v", c)
	}
	if p.Status.Progress != "0/8" || p.Status.AgentCount != 2 || p.Status.TaskCount != 2 || p.Status.K != 2 {
		t.Fatalf("display %q %d %d k=%d", p.Status.Progress, p.Status.AgentCount, p.Status.TaskCount, p.Status.K)
	}
	if p.HeldByParallel != 5 || p.HeldByBudget != 0 {
		t.Fatalf("held %d/%d", p.HeldByParallel, p.HeldByBudget)
	}
	wantCond(t, &p.Status, evalv1.CampaignProgressing, metav1.ConditionTrue, evalv1.ReasonRunning)
	wantCond(t, &p.Status, evalv1.CampaignCompleted, metav1.ConditionFalse, evalv1.ReasonRunning)
	wantCond(t, &p.Status, evalv1.CampaignTasksResolved, metav1.ConditionTrue, evalv1.ReasonResolved)
	wantCond(t, &p.Status, evalv1.CampaignBudgetExceeded, metav1.ConditionFalse, evalv1.ReasonNoBudget)
}

// In-flight creations count as running and as existing: planning again
// before the cache shows them creates nothing more.
func TestPlanIsIdempotentWithInFlightCreations(t *testing.T) {
	w := &World{Campaign: campaign(2, 3, "a1", "a2"), Tasks: []string{"t1", "t2"}, Now: now}
	first := PlanCampaign(w)
	for _, cr := range first.Creates {
		w.InFlight = append(w.InFlight, InFlight(cr))
	}
	again := PlanCampaign(w)
	if len(again.Creates) != 0 {
		t.Fatalf("second plan creates %v", names(again.Creates))
	}
	if again.Status.Counts.Pending != 3 || again.Status.Counts.Queued != 5 {
		t.Fatalf("counts %+v", again.Status.Counts)
	}
	// One in-flight creation observed as Running, one finished: one slot.
	w.InFlight = w.InFlight[2:]
	w.Trials = []TrialView{tv("a1", "t1", 0, evalv1.PhaseRunning), tv("a2", "t1", 0, evalv1.PhasePassed)}
	p := PlanCampaign(w)
	if got := names(p.Creates); len(got) != 1 || got[0] != "c-a2-t2-0" {
		t.Fatalf("creates %v, want [c-a2-t2-0]", got)
	}
}

func TestPlanNeverExceedsMaxParallelCountingAllNonTerminal(t *testing.T) {
	c := campaign(3, 2, "a")
	w := &World{Campaign: c, Tasks: []string{"t"}, Now: now, Trials: []TrialView{
		tv("a", "t", 0, evalv1.PhaseRunning),
		tv("a", "t", 1, ""), // created, no phase yet
	}}
	if p := PlanCampaign(w); len(p.Creates) != 0 || p.HeldByParallel != 1 {
		t.Fatalf("creates %v held %d", names(p.Creates), p.HeldByParallel)
	}
	// A Trial of an agent no longer in the spec still holds a slot.
	w.Trials = []TrialView{tv("gone", "t", 0, evalv1.PhaseRunning), tv("a", "t", 0, evalv1.PhasePassed)}
	p := PlanCampaign(w)
	if got := names(p.Creates); len(got) != 1 || got[0] != "c-a-t-1" {
		t.Fatalf("creates %v", got)
	}
	if p.Status.Counts.Running != 0 || p.Status.Counts.Passed != 1 || p.Status.Overall.Trials != 1 {
		t.Fatalf("out-of-plan Trial leaked into status: %+v", p.Status.Counts)
	}
}

func TestPlanCompletes(t *testing.T) {
	w := &World{Campaign: campaign(2, 5, "a"), Tasks: []string{"t"}, Now: now, Trials: []TrialView{
		tv("a", "t", 0, evalv1.PhasePassed), tv("a", "t", 1, evalv1.PhaseInfraFailed),
	}}
	p := PlanCampaign(w)
	if len(p.Creates) != 0 {
		t.Fatalf("creates %v", names(p.Creates))
	}
	c := p.Status.Counts
	if c.Total != 2 || c.Passed != 1 || c.InfraFailed != 1 || c.Queued != 0 || c.Pending != 0 || p.Status.Progress != "2/2" {
		t.Fatalf("counts %+v progress %s", c, p.Status.Progress)
	}
	wantCond(t, &p.Status, evalv1.CampaignCompleted, metav1.ConditionTrue, evalv1.ReasonFinished)
	wantCond(t, &p.Status, evalv1.CampaignProgressing, metav1.ConditionFalse, evalv1.ReasonFinished)
	if got := cond(&p.Status, evalv1.CampaignCompleted).Message; got != "all Trials finished; 2/2 done: 1 passed, 0 failed, 1 infra-failed, 0 invalid" {
		t.Fatalf("message %q", got)
	}
	// The infra failure is not a measurement: n=1 for the cell, so pass^2 is absent.
	if p.Status.Overall.Trials != 1 || p.Status.Overall.PassHatK != nil || *p.Status.Overall.PassAt1 != 1 {
		t.Fatalf("overall %+v", p.Status.Overall)
	}
}

func TestPlanBudget(t *testing.T) {
	usd := func(v float64) *evalv1.Budget { return &evalv1.Budget{MaxUSD: &v} }
	tok := func(v int64) *evalv1.Budget { return &evalv1.Budget{MaxTokens: &v} }
	cases := []struct {
		name        string
		budget      *evalv1.Budget
		trials      []TrialView
		wantCreates int
		exceeded    bool
		completed   bool
	}{
		// $0.25 spent, $0.25 a Trial: 0.25, 0.5 and 0.75 projected are under $1.
		{"under budget: as many as the projection allows", usd(1), []TrialView{withCost(tv("a", "t", 0, evalv1.PhasePassed), 0.25, 10)}, 3, false, false},
		{"spend equals budget: stop", usd(0.5), []TrialView{
			withCost(tv("a", "t", 0, evalv1.PhasePassed), 0.25, 10), withCost(tv("a", "t", 1, evalv1.PhaseFailed), 0.25, 10),
		}, 0, true, true},
		{"reached while one runs: not complete yet", usd(0.25), []TrialView{
			withCost(tv("a", "t", 0, evalv1.PhasePassed), 0.25, 10), tv("a", "t", 1, evalv1.PhaseRunning),
		}, 0, true, false},
		{"tokens", tok(20), []TrialView{withCost(tv("a", "t", 0, evalv1.PhasePassed), 0, 20)}, 0, true, true},
		{"zero budget creates nothing", usd(0), nil, 0, true, true},
		// 2 finished at $0.25, 1 running: projected 0.5+0.25 < 1 allows one
		// more, 0.5+0.5 does not.
		{"projection holds creations", usd(1), []TrialView{
			withCost(tv("a", "t", 0, evalv1.PhasePassed), 0.25, 0), withCost(tv("a", "t", 1, evalv1.PhasePassed), 0.25, 0),
			tv("a", "t", 2, evalv1.PhaseRunning),
		}, 1, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := campaign(8, 5, "a")
			c.Spec.Budget = tc.budget
			p := PlanCampaign(&World{Campaign: c, Tasks: []string{"t"}, Trials: tc.trials, Now: now})
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

func TestPlanRerun(t *testing.T) {
	c := campaign(3, 10, "a")
	c.Generation = 2
	c.Spec.Rerun = []evalv1.TrialPhase{evalv1.PhaseInfraFailed}
	lost := withCost(tv("a", "t", 0, evalv1.PhaseInfraFailed), 0.5, 100)
	newer := tv("a", "t", 2, evalv1.PhaseInfraFailed)
	newer.CreatedGeneration = 2
	w := &World{Campaign: c, Tasks: []string{"t"}, Now: now, Trials: []TrialView{
		lost, withCost(tv("a", "t", 1, evalv1.PhasePassed), 0.25, 50), newer,
	}}
	p := PlanCampaign(w)
	if !p.RerunStarted || len(p.Deletes) != 1 || p.Deletes[0].Name != lost.Name || p.Deletes[0].UID != lost.UID {
		t.Fatalf("rerun %v deletes %+v", p.RerunStarted, p.Deletes)
	}
	if len(p.Creates) != 0 {
		t.Fatalf("created %v while the retired Trial still exists", names(p.Creates))
	}
	st := p.Status
	if st.Rerun.Generation != 2 || st.Rerun.Retired != 1 || len(st.Rerun.Deleting) != 1 {
		t.Fatalf("rerun status %+v", st.Rerun)
	}
	if st.RetiredSpend.CostUSD != 0.5 || st.RetiredSpend.Tokens != 100 || st.Spent.CostUSD != 0.75 || st.Spent.Tokens != 150 {
		t.Fatalf("spend retired %+v spent %+v", st.RetiredSpend, st.Spent)
	}
	if st.Counts.InfraFailed != 1 || st.Counts.Passed != 1 || st.Counts.Queued != 1 {
		t.Fatalf("retired Trial still counted: %+v", st.Counts)
	}

	// Next reconcile: the rerun is recorded; the Trial is being deleted.
	c.Status = st
	w.Trials[0].Deleting = true
	p = PlanCampaign(w)
	if p.RerunStarted || len(p.Deletes) != 0 || len(p.Creates) != 0 {
		t.Fatalf("second pass rerun=%v deletes=%v creates=%v", p.RerunStarted, p.Deletes, names(p.Creates))
	}
	if p.Status.RetiredSpend.CostUSD != 0.5 {
		t.Fatalf("retired spend charged twice: %+v", p.Status.RetiredSpend)
	}
	wantCond(t, &p.Status, evalv1.CampaignCompleted, metav1.ConditionFalse, evalv1.ReasonRunning)

	// Gone: the record is pruned and the cell is created again, once.
	c.Status = p.Status
	w.Trials = w.Trials[1:]
	p = PlanCampaign(w)
	if got := names(p.Creates); len(got) != 1 || got[0] != lost.Name {
		t.Fatalf("creates %v, want [%s]", got, lost.Name)
	}
	if p.Status.Rerun.Deleting != nil || p.Status.Rerun.Retired != 1 || p.Status.Spent.CostUSD != 0.75 {
		t.Fatalf("rerun %+v spent %+v", p.Status.Rerun, p.Status.Spent)
	}
	// The re-created Trial fails again: same generation, no second rerun.
	c.Status = p.Status
	again := tv("a", "t", 0, evalv1.PhaseInfraFailed)
	again.UID, again.CreatedGeneration = "uid-again", 2
	w.Trials = append(w.Trials, again)
	p = PlanCampaign(w)
	if p.RerunStarted || len(p.Deletes) != 0 {
		t.Fatalf("rerun looped: started=%v deletes=%v", p.RerunStarted, p.Deletes)
	}
	wantCond(t, &p.Status, evalv1.CampaignCompleted, metav1.ConditionTrue, evalv1.ReasonFinished)
	if p.Status.Counts.InfraFailed != 2 || p.Status.Counts.Passed != 1 {
		t.Fatalf("counts %+v", p.Status.Counts)
	}
}

func TestPlanEditsAddOnlyWhatIsNew(t *testing.T) {
	c := campaign(2, 100, "a")
	trials := []TrialView{tv("a", "t1", 0, evalv1.PhasePassed), tv("a", "t1", 1, evalv1.PhasePassed)}
	c.Spec.TrialsPerTask = 3
	p := PlanCampaign(&World{Campaign: c, Tasks: []string{"t1", "t2"}, Trials: trials, Now: now})
	want := "c-a-t2-0,c-a-t2-1,c-a-t1-2,c-a-t2-2"
	if got := strings.Join(names(p.Creates), ","); got != want {
		t.Fatalf("creates %s, want %s", got, want)
	}
	// A deleted Trial (not retired) is simply missing and re-created.
	p = PlanCampaign(&World{Campaign: campaign(2, 100, "a"), Tasks: []string{"t1"}, Trials: trials[1:], Now: now})
	if got := names(p.Creates); len(got) != 1 || got[0] != "c-a-t1-0" {
		t.Fatalf("creates %v", got)
	}
}

func TestPlanMissingTasksNeverComplete(t *testing.T) {
	p := PlanCampaign(&World{Campaign: campaign(1, 1, "a"), Tasks: []string{"t"}, Missing: []string{"x", "y"},
		Trials: []TrialView{tv("a", "t", 0, evalv1.PhasePassed)}, Now: now})
	wantCond(t, &p.Status, evalv1.CampaignTasksResolved, metav1.ConditionFalse, evalv1.ReasonTaskNotFound)
	wantCond(t, &p.Status, evalv1.CampaignCompleted, metav1.ConditionFalse, evalv1.ReasonRunning)
	if msg := cond(&p.Status, evalv1.CampaignTasksResolved).Message; !strings.Contains(msg, "Task x, y not found in namespace ns") {
		t.Fatalf("message %q", msg)
	}
	p = PlanCampaign(&World{Campaign: campaign(1, 1, "a"), Now: now})
	wantCond(t, &p.Status, evalv1.CampaignTasksResolved, metav1.ConditionFalse, evalv1.ReasonNoTasksSelected)
	wantCond(t, &p.Status, evalv1.CampaignCompleted, metav1.ConditionFalse, evalv1.ReasonRunning)
}

func TestPlanCollidingNamesAreHashed(t *testing.T) {
	c := campaign(1, 10, "a", "a-b")
	p := PlanCampaign(&World{Campaign: c, Tasks: []string{"b-c", "c"}, Now: now})
	seen := map[string]bool{}
	for _, cr := range p.Creates {
		if seen[cr.Name] {
			t.Fatalf("duplicate name %q in %v", cr.Name, names(p.Creates))
		}
		seen[cr.Name] = true
	}
	// (a, b-c) and (a-b, c) both read "c-a-b-c-0": both are hashed.
	hashed := 0
	for n := range seen {
		if strings.HasPrefix(n, "c-a-b-c-") && len(n) == len("c-a-b-c-")+hashLen+2 {
			hashed++
		}
	}
	if len(seen) != 4 || !seen["c-a-c-0"] || !seen["c-a-b-b-c-0"] || seen["c-a-b-c-0"] || hashed != 2 {
		t.Fatalf("names %v", names(p.Creates))
	}
}

// Conditions keep their transition time while their status holds.
func TestPlanKeepsTransitionTimes(t *testing.T) {
	c := campaign(1, 1, "a")
	w := &World{Campaign: c, Tasks: []string{"t"}, Now: now}
	c.Status = PlanCampaign(w).Status
	w.Now = metav1.NewTime(now.Add(time.Hour))
	w.InFlight = []InFlight{{Name: "c-a-t-0", Cell: Cell{Agent: "a", Task: "t"}}}
	st := PlanCampaign(w).Status
	if got := cond(&st, evalv1.CampaignProgressing).LastTransitionTime; !got.Equal(&now) {
		t.Fatalf("transition time moved to %v", got)
	}
	if st.ObservedGeneration != 1 {
		t.Fatalf("observed generation %d", st.ObservedGeneration)
	}
}
