package controllers

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/host"
)

const slotName = "c-slot-aaaaaa-e00"

// slotPodIn is the claimed slot's pod in the cache, in a given state.
func slotPodIn(state string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: slotName}}
	switch state {
	case "ready":
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.9.9.9",
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	case "pending":
		p.Status = corev1.PodStatus{Phase: corev1.PodPending}
	case "failed":
		p.Status = corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{
			Name: "runner", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137}}}}}
	}
	return p
}

func claimView(attemptID string, created, seen, driven bool) *slotView {
	return &slotView{Name: slotName, AttemptID: attemptID, Token: "slot-tok", Created: created, Seen: seen, Driven: driven,
		ClaimedAt: t0, Class: slotClass{Namespace: "ns", Campaign: "c", Hash: "aaaaaaaaaa"}}
}

// A slotted Trial's first attempt: no pod, Secret, NetworkPolicy or event
// of its own, whatever the slot's state.
func TestPlanStartsAnAttemptOnASlot(t *testing.T) {
	mk := &slotMake{Campaign: testCampaign}
	for _, tc := range []struct {
		name   string
		slots  *slotWorld
		reason string
		slot   string
		submit bool
		create bool
	}{
		{name: "no slot free: waits", slots: &slotWorld{Next: true}, reason: evalv1.ReasonWaitingForSlot},
		{name: "a new slot: its objects are made", slots: &slotWorld{Next: true, Claim: claimView("uid-1-1", false, false, false), Make: mk},
			reason: evalv1.ReasonPodsPending, slot: slotName, create: true},
		{name: "a slot not ready yet", slots: &slotWorld{Next: true, Claim: claimView("uid-1-1", true, true, false), Pod: slotPodIn("pending")},
			reason: evalv1.ReasonPodsPending, slot: slotName},
		{name: "a ready slot: submitted at once", slots: &slotWorld{Next: true, Claim: claimView("uid-1-1", true, true, false), Pod: slotPodIn("ready")},
			reason: evalv1.ReasonPodsReady, slot: slotName, submit: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := slotTrial()
			p := planTrial(&world{Now: t0, Trial: tr, Task: resolvedShop(), Slots: tc.slots})
			if len(p.Status.Attempts) != 1 {
				t.Fatalf("attempts %+v", p.Status.Attempts)
			}
			a := p.Status.Attempts[0]
			if a.RunnerPod != "" || a.DBServicePod != "" || a.Slot != tc.slot || a.Outcome != evalv1.OutcomeRunning {
				t.Errorf("attempt %+v", a)
			}
			if c := cond(&p.Status, evalv1.TrialPodsReady); c.Reason != tc.reason {
				t.Errorf("PodsReady %+v, want reason %s", c, tc.reason)
			}
			if p.Claim == nil || len(p.CreatePod) != 0 || p.EnsureNP || len(p.Events) != 0 {
				t.Errorf("claim %v pods %v np %v events %+v", p.Claim != nil, p.CreatePod, p.EnsureNP, p.Events)
			}
			if p.Submit != tc.submit || p.OnSlot != tc.submit {
				t.Errorf("submit %t on slot %t", p.Submit, p.OnSlot)
			}
			if tc.submit && (p.RunnerIP != "10.9.9.9" || p.SlotToken != "slot-tok") {
				t.Errorf("runner %s token %q", p.RunnerIP, p.SlotToken)
			}
			if (p.SlotCreate != nil) != tc.create {
				t.Errorf("create %+v", p.SlotCreate)
			}
			if p.SlotRelease != nil {
				t.Errorf("released %+v", p.SlotRelease)
			}
			// Waiting comes back by itself; a submitted attempt is woken
			// by its driver.
			if !tc.submit && (p.RequeueAfter <= 0 || p.RequeueAfter > podsReadyTimeout(tr)) {
				t.Errorf("requeue %s", p.RequeueAfter)
			}
		})
	}
}

// The slotted attempt as it goes on.
func TestPlanAttemptOnASlot(t *testing.T) {
	claimed := &driverView{AttemptID: "uid-1-1", State: stateClaimed}
	runningD := &driverView{AttemptID: "uid-1-1", State: stateRunning, Registered: true}
	for _, tc := range []struct {
		name    string
		slot    string // the attempt's status.slot
		slots   *slotWorld
		driver  *driverView
		now     time.Duration
		ended   string // the attempt's reason when it ended
		submit  bool
		podsRdy string
	}{
		{name: "still waiting", slots: &slotWorld{}, driver: claimed, podsRdy: evalv1.ReasonWaitingForSlot},
		{name: "claimed and ready: submitted", slots: &slotWorld{Claim: claimView("uid-1-1", true, true, false), Pod: slotPodIn("ready")},
			driver: claimed, submit: true, podsRdy: evalv1.ReasonPodsReady},
		{name: "ready, driver running: not submitted again", slot: slotName,
			slots: &slotWorld{Claim: claimView("uid-1-1", true, true, true), Pod: slotPodIn("ready")}, driver: runningD, podsRdy: evalv1.ReasonPodsReady},
		{name: "slot pod failed mid-trial: PodFailed", slot: slotName,
			slots: &slotWorld{Claim: claimView("uid-1-1", true, true, true), Pod: slotPodIn("failed")}, driver: runningD, ended: evalv1.ReasonPodFailed},
		{name: "slot pod gone mid-trial: PodLost", slot: slotName,
			slots: &slotWorld{Claim: claimView("uid-1-1", true, true, true)}, driver: runningD, ended: evalv1.ReasonPodLost},
		{name: "slot no longer held: PodLost", slot: slotName, slots: &slotWorld{}, driver: runningD, ended: evalv1.ReasonPodLost},
		{name: "created, not in the cache yet: waits", slot: slotName,
			slots: &slotWorld{Claim: claimView("uid-1-1", true, false, false)}, driver: claimed, podsRdy: evalv1.ReasonPodsPending},
		{name: "not ready within podsReady of the claim: PodsNotReady", slot: slotName, now: defaultPodsReadyTimeout,
			slots: &slotWorld{Claim: claimView("uid-1-1", true, true, false), Pod: slotPodIn("pending")}, driver: claimed, ended: evalv1.ReasonPodsNotReady},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := running(1)
			tr.Spec.Slots = &evalv1.SlotPolicy{Mode: evalv1.SlotsEnabled}
			tr.Status.Attempts[0].Slot = tc.slot
			p := planTrial(&world{Now: t0.Add(tc.now), Trial: tr, Slots: tc.slots, Driver: tc.driver, AttemptTask: resolvedShop()})
			a := p.Status.Attempts[0]
			if tc.ended != "" {
				if a.Outcome != evalv1.OutcomeInfraFailed || a.Reason != tc.ended {
					t.Fatalf("attempt %s %s: %s, want InfraFailed %s", a.Outcome, a.Reason, a.Message, tc.ended)
				}
				if tc.driver.State == stateRunning && p.Cancel == nil {
					t.Error("the running driver is not cancelled")
				}
				return
			}
			if a.Outcome != evalv1.OutcomeRunning {
				t.Fatalf("attempt ended: %+v", a)
			}
			if c := cond(&p.Status, evalv1.TrialPodsReady); c.Reason != tc.podsRdy {
				t.Errorf("PodsReady %+v", c)
			}
			if p.Submit != tc.submit || len(p.CreatePod) != 0 {
				t.Errorf("submit %t pods %v", p.Submit, p.CreatePod)
			}
			if tc.slots.Claim != nil && a.Slot != slotName {
				t.Errorf("status.slot %q", a.Slot)
			}
		})
	}
}

// The claim goes back once the attempt is over and its driver returned:
// how it goes back follows what CleanupTrial said and how the attempt ended.
func TestPlanReleasesTheSlot(t *testing.T) {
	passed := &host.AttemptResult{Outcome: evalv1.OutcomePassed, GradedBy: host.GradedByRunner, Reason: evalv1.ReasonPassed}
	dirty := *passed
	dirty.CleanupError = "CleanupTrial refused: process 42 remains"
	infra := &host.AttemptResult{Outcome: evalv1.OutcomeInfraFailed, Reason: evalv1.ReasonRunnerUnavailable, Message: "gone"}
	for _, tc := range []struct {
		name   string
		driver *driverView
		driven bool
		kind   releaseKind
		why    string
		none   bool
	}{
		{name: "clean", driver: &driverView{AttemptID: "uid-1-1", State: stateDone, Result: passed}, driven: true, kind: releaseClean},
		{name: "CleanupTrial refused: dirty", driver: &driverView{AttemptID: "uid-1-1", State: stateDone, Result: &dirty}, driven: true,
			kind: releaseDirty, why: "process 42 remains"},
		{name: "InfraFailed: dirty", driver: &driverView{AttemptID: "uid-1-1", State: stateDone, Result: infra}, driven: true,
			kind: releaseDirty, why: "ended InfraFailed"},
		{name: "no record of the driver: dirty", driven: true, kind: releaseDirty, why: "no record"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := running(1)
			tr.Spec.Slots = &evalv1.SlotPolicy{Mode: evalv1.SlotsEnabled}
			tr.Status.Attempts[0].Slot = slotName
			w := &world{Now: t0.Add(time.Second), Trial: tr, Driver: tc.driver, AttemptTask: resolvedShop(),
				Slots: &slotWorld{Claim: claimView("uid-1-1", true, true, tc.driven), Pod: slotPodIn("ready")}}
			if tc.driver == nil {
				// The status already says the attempt ended (an earlier
				// reconcile); this process lost its driver's record.
				tr.Status.Attempts[0].Outcome, tr.Status.Attempts[0].EndTime = evalv1.OutcomePassed, mt(time.Second)
				tr.Status.Phase = evalv1.PhasePassed
			}
			p := planTrial(w)
			r := p.SlotRelease
			if r == nil {
				t.Fatalf("no release; attempt %+v", p.Status.Attempts[0])
			}
			if r.Slot != slotName || r.AttemptID != "uid-1-1" || r.Kind != tc.kind || !strings.Contains(r.Why, tc.why) {
				t.Errorf("release %+v, want kind %d why ~%q", r, tc.kind, tc.why)
			}
		})
	}

	// A driver still at work (cancelled, cleaning up) keeps the slot.
	tr := running(1)
	tr.Spec.Slots = &evalv1.SlotPolicy{Mode: evalv1.SlotsEnabled}
	tr.Status.Attempts[0].Slot = slotName
	p := planTrial(&world{Now: t0.Add(time.Second), Trial: tr, AttemptTask: resolvedShop(),
		Driver: &driverView{AttemptID: "uid-1-1", State: stateRunning},
		Slots:  &slotWorld{Claim: claimView("uid-1-1", true, true, true)}})
	if p.Status.Attempts[0].Reason != evalv1.ReasonPodLost || p.SlotRelease != nil {
		t.Errorf("attempt %+v released %+v while its driver runs", p.Status.Attempts[0], p.SlotRelease)
	}

	// A claim for an attempt the plan did not start (backoff) goes back unused.
	tr = testTrial()
	tr.Spec.Slots = &evalv1.SlotPolicy{Mode: evalv1.SlotsEnabled}
	tr.Spec.RetryPolicy = evalv1.RetryPolicy{MaxAttempts: 3, Backoff: &metav1.Duration{Duration: time.Minute}}
	tr.Status.Attempts = []evalv1.AttemptStatus{{Number: 1, ID: "uid-1-1", StartTime: mt(0), EndTime: mt(time.Second),
		Outcome: evalv1.OutcomeInfraFailed, Reason: evalv1.ReasonPodLost}}
	p = planTrial(&world{Now: t0.Add(2 * time.Second), Trial: tr, Task: resolvedShop(),
		Slots: &slotWorld{Next: true, Claim: claimView("uid-1-2", true, true, false)}})
	if len(p.Status.Attempts) != 1 || p.SlotRelease == nil || p.SlotRelease.Kind != releaseUnused {
		t.Errorf("attempts %d release %+v", len(p.Status.Attempts), p.SlotRelease)
	}
}
