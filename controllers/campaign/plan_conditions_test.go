package campaign

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

func TestPlanCompletes(t *testing.T) {
	w := &World{Campaign: campaign(2, 5, "a"), Tasks: []string{"t"}, Now: now, Trials: []trialView{
		tv("a", "t", 0, evalv1.PhasePassed), tv("a", "t", 1, evalv1.PhaseInfraFailed),
	}}
	p := w.Plan()
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

func TestPlanMissingTasksNeverComplete(t *testing.T) {
	p := (&World{Campaign: campaign(1, 1, "a"), Tasks: []string{"t"}, Missing: []string{"x", "y"},
		Trials: []trialView{tv("a", "t", 0, evalv1.PhasePassed)}, Now: now}).Plan()
	wantCond(t, &p.Status, evalv1.CampaignTasksResolved, metav1.ConditionFalse, evalv1.ReasonTaskNotFound)
	wantCond(t, &p.Status, evalv1.CampaignCompleted, metav1.ConditionFalse, evalv1.ReasonRunning)
	if msg := cond(&p.Status, evalv1.CampaignTasksResolved).Message; !strings.Contains(msg, "Task x, y not found in namespace ns") {
		t.Fatalf("message %q", msg)
	}
	p = (&World{Campaign: campaign(1, 1, "a"), Now: now}).Plan()
	wantCond(t, &p.Status, evalv1.CampaignTasksResolved, metav1.ConditionFalse, evalv1.ReasonNoTasksSelected)
	wantCond(t, &p.Status, evalv1.CampaignCompleted, metav1.ConditionFalse, evalv1.ReasonRunning)
}

// Conditions keep their transition time while their status holds.
func TestPlanKeepsTransitionTimes(t *testing.T) {
	c := campaign(1, 1, "a")
	w := &World{Campaign: c, Tasks: []string{"t"}, Now: now}
	c.Status = w.Plan().Status
	w.Now = metav1.NewTime(now.Add(time.Hour))
	w.InFlight = []inFlight{{Name: "c-a-t-0", Cell: Cell{Agent: "a", Task: "t"}}}
	st := w.Plan().Status
	if got := cond(&st, evalv1.CampaignProgressing).LastTransitionTime; !got.Equal(&now) {
		t.Fatalf("transition time moved to %v", got)
	}
	if st.ObservedGeneration != 1 {
		t.Fatalf("observed generation %d", st.ObservedGeneration)
	}
}
