package campaign

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

func TestPlanRerun(t *testing.T) {
	c := campaign(3, 10, "a")
	c.Generation = 2
	c.Spec.Rerun = []evalv1.TrialPhase{evalv1.PhaseInfraFailed}
	lost := withCost(tv("a", "t", 0, evalv1.PhaseInfraFailed), 0.5, 100)
	newer := tv("a", "t", 2, evalv1.PhaseInfraFailed)
	newer.CreatedGeneration = 2
	w := &World{Campaign: c, Tasks: []string{"t"}, Now: now, Trials: []trialView{
		lost, withCost(tv("a", "t", 1, evalv1.PhasePassed), 0.25, 50), newer,
	}}
	p := w.Plan()
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
	p = w.Plan()
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
	p = w.Plan()
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
	p = w.Plan()
	if p.RerunStarted || len(p.Deletes) != 0 {
		t.Fatalf("rerun looped: started=%v deletes=%v", p.RerunStarted, p.Deletes)
	}
	wantCond(t, &p.Status, evalv1.CampaignCompleted, metav1.ConditionTrue, evalv1.ReasonFinished)
	if p.Status.Counts.InfraFailed != 2 || p.Status.Counts.Passed != 1 {
		t.Fatalf("counts %+v", p.Status.Counts)
	}
}
