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

// slotEnvironment is the fence of a terminal task's environment pod for an
// attempt on a slot: SlotEnvironmentPolicy admitting Slot, the pod labelled
// with Campaign (whose slot policy lets its slots out to it).
type slotEnvironment struct {
	Slot, Campaign string
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

func slotPendingMessage(n int32, pod string) string {
	return fmt.Sprintf("waiting for pod %s of attempt %d", pod, n)
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
	env, envReady, ended := p.slotEnvironmentPod(w, a, s)
	if ended {
		return true
	}
	h, reason, msg := observePod(w.Slots.Pod)
	switch h {
	case podGone:
		p.endAttempt(w, a, controllerVerdict(reason, msg), nil)
		return true
	case podReady:
		if !envReady {
			break
		}
		what := fmt.Sprintf("slot %s of attempt %d is ready", s.Name, a.Number)
		if env != nil {
			what = fmt.Sprintf("slot %s and environment %s of attempt %d are ready", s.Name, env.Name, a.Number)
		}
		p.cond(evalv1.TrialPodsReady, true, evalv1.ReasonPodsReady, what)
		if submit {
			p.Submit, p.OnSlot = true, true
			p.RunnerIP, p.SlotToken = w.Slots.Pod.Status.PodIP, s.Token
			if env != nil {
				p.EnvIP = env.Status.PodIP
			}
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
	// the attempt's start (it may have waited long for a slot); a terminal
	// task's environment, made once the slot was claimed, by its own
	// (longer) readiness bound from the claim.
	if h != podReady {
		deadline := s.ClaimedAt.Add(podsReadyTimeout(w.Trial))
		if !w.Now.Before(deadline) {
			p.endAttempt(w, a, controllerVerdict(evalv1.ReasonPodsNotReady, fmt.Sprintf(
				"slot pod %s of attempt %d not ready after %s", s.Name, a.Number, podsReadyTimeout(w.Trial))), nil)
			return true
		}
		p.requeueIn(deadline.Sub(w.Now))
	}
	if !envReady {
		desc := w.attemptDesc()
		limit := environmentReadyTimeout(w.Trial, desc)
		deadline := s.ClaimedAt.Add(limit)
		if !w.Now.Before(deadline) {
			name := PodName(w.Trial.Name, a.Number, evalv1.RoleEnvironment)
			reason, state := evalv1.ReasonEnvironmentNotReady, "not created yet"
			if env != nil {
				state = podPhase(env)
				if imagePullFailure(env) != "" {
					reason = evalv1.ReasonEnvironmentImageUnavailable
				}
			}
			p.endAttempt(w, a, controllerVerdict(reason, fmt.Sprintf(
				"environment pod %s of attempt %d not ready after %s: %s", name, a.Number, limit, state)), nil)
			return true
		}
		p.requeueIn(deadline.Sub(w.Now))
	}
	waitingFor := s.Name
	if h == podReady {
		waitingFor = a.EnvironmentPod
	}
	p.cond(evalv1.TrialPodsReady, false, evalv1.ReasonPodsPending, slotPendingMessage(a.Number, waitingFor))
	return false
}

// slotEnvironmentPod moves the fresh environment pod of a terminal task's
// attempt on a slot along: created (with its fence) once the attempt holds
// its slot, since the fence names that slot; lost or failed, it ends the
// attempt. ready is true for a task without an environment. The pod is
// never the slot's: the agent was root in it, so no later Trial sees it.
func (p *plan) slotEnvironmentPod(w *world, a *evalv1.AttemptStatus, s *slotView) (pod *corev1.Pod, ready, ended bool) {
	if !hasEnvironment(w.attemptDesc()) {
		return nil, true, false
	}
	role := evalv1.RoleEnvironment
	pod = w.Pods[a.Number][role]
	a.EnvironmentPod = PodName(w.Trial.Name, a.Number, role)
	h, reason, msg := observePod(pod)
	switch h {
	case podGone:
		p.endAttempt(w, a, controllerVerdict(reason, msg), nil)
		return pod, false, true
	case podAbsent:
		if w.PodsSeen[role] {
			p.endAttempt(w, a, controllerVerdict(evalv1.ReasonPodLost, fmt.Sprintf("pod %s disappeared", a.EnvironmentPod)), nil)
			return nil, false, true
		}
		if !w.PodsCreated[role] {
			p.CreatePod = append(p.CreatePod, role)
			p.SlotEnv = &slotEnvironment{Slot: s.Name, Campaign: s.Class.Campaign}
		}
		return nil, false, false
	case podReady:
		return pod, true, false
	}
	return pod, false, false
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
	case a != nil && a.Outcome == evalv1.OutcomeInfraFailed && !s.Driven && environmentFault(a.Reason):
		// The attempt's own environment never came up, so no driver ran:
		// the slot's runner never saw the trial, and is as it was.
		rel.Kind = releaseUnused
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

// environmentFault: an attempt ended for a reason of its own environment
// pod alone (a terminal task's), never of the slot it held.
func environmentFault(reason string) bool {
	return reason == evalv1.ReasonEnvironmentNotReady || reason == evalv1.ReasonEnvironmentImageUnavailable
}
