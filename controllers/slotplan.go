package controllers

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// The plan of an attempt on a warm slot (docs/warm-slots.md): pure, like
// the rest of plan.go. The claim itself is made in memory by observe
// (slotRegistry.claim); the plan records it in status, asks for the slot's
// objects when it is new, submits the attempt once the slot pod is Ready,
// and releases the claim once the attempt is over.

// slotWaitPoll is how often an attempt waiting for a slot looks again; a
// freed slot wakes it at once (slotRegistry.wake), this is the backstop.
const slotWaitPoll = 2 * time.Second

// slotWorld is the slot side of a world.
type slotWorld struct {
	// Next: the next attempt runs on a slot (observe decided it with the
	// task: spec.slots Enabled, a Campaign owns the Trial, admitted by Kueue
	// if it names a queue, no environment of its own).
	Next bool
	// Claim is the slot the trial holds (any attempt; nil: none), Pod its
	// pod in the cache (nil: absent).
	Claim *slotView
	Pod   *corev1.Pod
	// Make is what creating the claimed slot takes, when it is new.
	Make *slotMake
}

// slotMake is a new slot's objects, built by observe.
type slotMake struct {
	Template *corev1.Pod
	Campaign campaignRef
	Class    slotClass
}

// slotRelease ends the trial's claim on a slot.
type slotRelease struct {
	Slot      string
	AttemptID string
	Kind      releaseKind
	// Why the slot may not be reused (Kind releaseDirty).
	Why string
}

// onSlot reports whether an attempt of t runs on a slot: t's spec.slots is
// Enabled and the attempt names no runner pod of its own (one waiting for
// its slot names no slot yet either). An attempt of such a Trial that kept
// per-attempt pods (an environment, a Workload reserving them) names them.
func onSlot(t *evalv1.Trial, a *evalv1.AttemptStatus) bool {
	return t.Spec.Slots.Enabled() && a.RunnerPod == ""
}

// slotFor is the claim of attempt a, if the trial holds one for it.
func (w *world) slotFor(a *evalv1.AttemptStatus) *slotView {
	if w.Slots == nil || w.Slots.Claim == nil || w.Slots.Claim.AttemptID != a.ID {
		return nil
	}
	return w.Slots.Claim
}

func waitingForSlotMessage(n int32) string {
	return fmt.Sprintf("attempt %d waits for a free slot of its campaign: every slot it may have is busy", n)
}

func slotPendingMessage(n int32, slot string) string {
	return fmt.Sprintf("waiting for slot pod %s of attempt %d", slot, n)
}

// slotPods moves an attempt on a slot along: it takes the claimed slot,
// waits for its pod, submits it once Ready, and ends the attempt when the
// pod is lost or fails. It reports whether the attempt ended.
func (p *plan) slotPods(w *world, a *evalv1.AttemptStatus, submit bool) bool {
	s := w.slotFor(a)
	if s == nil {
		if a.Slot != "" {
			// The registry no longer holds this attempt's slot for it (it
			// was deleted under it): the attempt cannot go on there.
			p.endAttempt(w, a, controllerVerdict(evalv1.ReasonPodLost, fmt.Sprintf(
				"slot %s of attempt %d is no longer held for it", a.Slot, a.Number)), nil)
			return true
		}
		p.cond(evalv1.TrialPodsReady, false, evalv1.ReasonWaitingForSlot, waitingForSlotMessage(a.Number))
		p.requeueIn(slotWaitPoll)
		return false
	}
	a.Slot = s.Name
	h, reason, msg := observePod(w.Slots.Pod)
	switch h {
	case podGone:
		p.endAttempt(w, a, controllerVerdict(reason, msg), nil)
		return true
	case podReady:
		p.cond(evalv1.TrialPodsReady, true, evalv1.ReasonPodsReady,
			fmt.Sprintf("slot %s of attempt %d is ready", s.Name, a.Number))
		if submit {
			p.Submit, p.OnSlot = true, true
			p.RunnerIP, p.SlotToken = w.Slots.Pod.Status.PodIP, s.Token
		}
		return false
	case podAbsent:
		if s.Seen {
			p.endAttempt(w, a, controllerVerdict(evalv1.ReasonPodLost, fmt.Sprintf("slot pod %s disappeared", s.Name)), nil)
			return true
		}
		if !s.Created {
			p.SlotCreate = w.Slots.Make
		}
	}
	// Not ready yet: bounded by timeouts.podsReady from the claim, not from
	// the attempt's start (it may have waited long for a slot).
	deadline := s.ClaimedAt.Add(podsReadyTimeout(w.Trial))
	if !w.Now.Before(deadline) {
		p.endAttempt(w, a, controllerVerdict(evalv1.ReasonPodsNotReady, fmt.Sprintf(
			"slot pod %s of attempt %d not ready after %s", s.Name, a.Number, podsReadyTimeout(w.Trial))), nil)
		return true
	}
	p.requeueIn(deadline.Sub(w.Now))
	p.cond(evalv1.TrialPodsReady, false, evalv1.ReasonPodsPending, slotPendingMessage(a.Number, s.Name))
	return false
}

// releaseSlot gives the trial's slot back once no attempt of the planned
// status uses it and no driver runs on it: clean (reused), unused (never
// driven), or dirty (deleted, never reused).
func (p *plan) releaseSlot(w *world) {
	if w.Slots == nil || w.Slots.Claim == nil {
		return
	}
	s := w.Slots.Claim
	if a := activeAttempt(&p.Status); a != nil && a.ID == s.AttemptID {
		return
	}
	d := w.Driver
	if d != nil && d.AttemptID == s.AttemptID && (d.State == stateQueued || d.State == stateRunning) {
		// Its driver still works on the slot (cancelled, cleaning up): its
		// done event brings the trial back.
		return
	}
	rel := &slotRelease{Slot: s.Name, AttemptID: s.AttemptID, Kind: releaseClean}
	var a *evalv1.AttemptStatus
	for i := range p.Status.Attempts {
		if p.Status.Attempts[i].ID == s.AttemptID {
			a = &p.Status.Attempts[i]
		}
	}
	// An attempt Kueue evicted (or spec.suspend held) ended InfraFailed
	// with nothing wrong on its slot: its cancelled driver's CleanupTrial
	// says how the slot was left, and a clean one is free again.
	evicted := a != nil && evictedBy(a)
	switch {
	case a != nil && a.Outcome == evalv1.OutcomeInfraFailed && !evicted:
		rel.Kind, rel.Why = releaseDirty, fmt.Sprintf("attempt %d ended InfraFailed (%s): %s", a.Number, a.Reason, a.Message)
	case !s.Driven:
		rel.Kind = releaseUnused
	case d == nil || d.AttemptID != s.AttemptID || d.Result == nil:
		rel.Kind, rel.Why = releaseDirty, "this process has no record of how the attempt's CleanupTrial went"
	case d.Result.CleanupError != "":
		rel.Kind, rel.Why = releaseDirty, d.Result.CleanupError
	case d.Result.Outcome == evalv1.OutcomeInfraFailed && !(evicted && d.Result.Reason == evalv1.ReasonCanceled):
		rel.Kind, rel.Why = releaseDirty, fmt.Sprintf("the attempt ended InfraFailed (%s)", d.Result.Reason)
	}
	p.SlotRelease = rel
}
