package controllers

import (
	"fmt"
	"sort"
	"strings"
	"time"
	"tolokaforge.io/operator/api/result"
	"tolokaforge.io/operator/api/task"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/host"
	"tolokaforge.io/operator/controllers/refs"
)

// world is everything one reconcile of a live Trial looks at.
type world struct {
	Now   time.Time
	Trial *evalv1.Trial
	// Pods of this trial (controlled by its UID), by attempt and role.
	Pods map[int32]map[string]*corev1.Pod
	// Strays carry this trial's name label but another owner UID: leftovers
	// of a deleted Trial of the same name.
	Strays           []*corev1.Pod
	HasNetworkPolicy bool
	// Driver is the pool's entry for the trial (nil: this process owns no
	// attempt of it).
	Driver *driverView
	// PodsCreated and PodsSeen are the pool's bookkeeping of the active
	// attempt's pods, by role.
	PodsCreated, PodsSeen map[string]bool
	// Task is resolved only when the plan may start an attempt; TaskErr says
	// why it could not be.
	Task    *resolvedTask
	TaskErr *taskError
	// AttemptTask is the task the active attempt started with (nil when
	// this process holds no driver of it).
	AttemptTask *resolvedTask
	// ImageErr says why no runner image can run the task: it needs Python
	// and the manager has no Python image. Checked with the task.
	ImageErr error
	// KeyErr says why a provider Secret of the Trial may not be used; it is
	// checked with the task, before any attempt's pods.
	KeyErr *keyError
	// Missing is the first object the Trial names that does not exist (a
	// Secret of its models); nil when all exist or were not looked at.
	Missing *refs.MissingRef
	// Queued: the manager runs a queueing integration (Kueue), so a Trial
	// that names a queue waits for its Workload's admission.
	Queued bool
	// Queue is the Trial's Workload when it names a queue and Queued.
	Queue *QueueState
	// Slots is the warm-slot side (nil: the Trial's spec.slots is not
	// Enabled).
	Slots *slotWorld
	// ProgressInterval is the least time between two status writes that
	// carry nothing but the running attempt's progress; 0 leaves
	// status.progress unwritten.
	ProgressInterval time.Duration
}

// plan is the desired status and what to do once it is written.
type plan struct {
	Status evalv1.TrialStatus

	// Claim starts an attempt in this process.
	Claim     *attemptInput
	ClaimID   string
	EnsureNP  bool
	CreatePod []string // roles of the active attempt's pods to create
	// Placement is the Kueue admission's placement of each role's pod.
	Placement map[string]Placement
	// Submit hands the active attempt to a driver.
	Submit                bool
	RunnerIP, DBIP, EnvIP string
	// OnSlot: the submitted attempt runs on a slot (RunnerIP is the slot
	// pod's, the DB service is on its loopback), presenting SlotToken.
	OnSlot    bool
	SlotToken string
	// SlotCreate makes the claimed slot's Secret and pod; SlotRelease ends
	// the trial's claim on its slot.
	SlotCreate  *slotMake
	SlotRelease *slotRelease
	// SlotEnv fences the environment pod of an attempt on a slot (created
	// with it, CreatePod's RoleEnvironment) so that slot alone reaches it.
	SlotEnv *slotEnvironment
	// Env is the task's environment when EnsureNP must fence one too.
	Env              *task.Environment
	Cancel           error
	DeletePodsOf     []int32 // attempts whose pods go now
	DeleteStrays     []*corev1.Pod
	Events           []eventRecord
	TrialStarted     bool
	AttemptsEnded    []verdict
	CompletedReason  string
	Release          string // attempt whose result was recorded
	RequeueAfter     time.Duration
	ProgressAttempt  string // registered attempt whose progress the status carries (settleProgress)
	ProgressOnly     bool   // the progress is all the status changes
	liveFigures      *evalv1.TrialProgress
	progressSince    time.Time
	attemptEndedHere bool
	now              metav1.Time
	gen              int64
}

func (p *plan) requeueIn(d time.Duration) {
	if d <= 0 {
		d = time.Millisecond
	}
	if p.RequeueAfter == 0 || d < p.RequeueAfter {
		p.RequeueAfter = d
	}
}

// planTrial rebuilds the Trial's status from the world and lists the side
// effects. It is pure: the same world always gives the same plan.
func planTrial(w *world) plan {
	t := w.Trial
	p := plan{Status: *t.Status.DeepCopy(), now: metav1.NewTime(w.Now), gen: t.Generation}
	st := &p.Status
	st.ObservedGeneration = t.Generation
	st.Agent = agentLabel(t.Spec.Agent)

	if !isTerminal(st) {
		// spec.suspend holds any Trial; one that names a queue (with the
		// integration on) runs only while its Workload is admitted and not
		// evicted: Kueue's admission is its gate.
		suspended := t.Held() ||
			(w.Queue != nil && (!w.Queue.Admitted || w.Queue.EvictedReason != ""))
		p.queueCondition(w)
		if w.Queue != nil {
			p.Placement = w.Queue.Placement
		}
		if a := activeAttempt(st); a != nil {
			if suspended && !driverDone(w, a) {
				// Kueue took the quota back (or spec.suspend was set): the
				// attempt ends as an infrastructure fault. A driver that
				// already returned keeps its result, grade included.
				p.endAttempt(w, a, suspendVerdict(w, a), nil)
			} else {
				p.progress(w, a)
			}
		}
		if activeAttempt(st) == nil && !isTerminal(st) && !p.attemptEndedHere {
			if suspended {
				p.hold(w)
			} else {
				p.startNext(w)
			}
		}
	}
	st.AttemptCount = int32(len(st.Attempts))
	if c := meta.FindStatusCondition(st.Conditions, evalv1.TrialNetworkPolicyReady); c != nil &&
		c.Status != metav1.ConditionTrue && w.HasNetworkPolicy {
		p.cond(evalv1.TrialNetworkPolicyReady, true, evalv1.ReasonNetworkPolicyCreated, "the trial's network policies exist")
	}
	p.collectPods(w)
	p.releaseSlot(w)
	p.settleProgress(w)
	return p
}

// progress moves the active attempt along or ends it.
func (p *plan) progress(w *world, a *evalv1.AttemptStatus) {
	d := w.Driver
	if d == nil || d.AttemptID != a.ID {
		p.endAttempt(w, a, controllerVerdict(evalv1.ReasonManagerRestarted, fmt.Sprintf(
			"attempt %d was started by a manager process that is gone; its driver did not survive the restart", a.Number)), nil)
		return
	}
	if d.State == stateDone {
		if d.Result == nil {
			// Cut short by this process's shutdown: the next manager records it.
			return
		}
		p.endAttempt(w, a, verdictFor(d.Result), d.Result)
		return
	}

	if onSlot(w.Trial, a) {
		if p.slotPods(w, a, d.State == stateClaimed) {
			return
		}
	} else if p.attemptPods(w, a, d) {
		return
	}
	p.registration(w, a, d)
}

// attemptPods moves an attempt with pods of its own along: creates what is
// missing, submits it once all are Ready, ends it when one is lost, fails
// or is not ready in time. It reports whether the attempt ended.
func (p *plan) attemptPods(w *world, a *evalv1.AttemptStatus, d *driverView) bool {
	var waiting []string
	ready := 0
	desc := w.attemptDesc()
	roles := attemptRoles(desc)
	pullFailure := ""
	p.Env = w.environment()
	for _, role := range roles {
		pod := w.Pods[a.Number][role]
		h, reason, msg := observePod(pod)
		if role == evalv1.RoleEnvironment && h == podWaiting {
			pullFailure = imagePullFailure(pod)
		}
		switch h {
		case podGone:
			p.endAttempt(w, a, controllerVerdict(reason, msg), nil)
			return true
		case podAbsent:
			name := PodName(w.Trial.Name, a.Number, role)
			if w.PodsSeen[role] {
				p.endAttempt(w, a, controllerVerdict(evalv1.ReasonPodLost, fmt.Sprintf("pod %s disappeared", name)), nil)
				return true
			}
			if !w.PodsCreated[role] {
				p.CreatePod = append(p.CreatePod, role)
				// A retried create re-checks the fence: pods only after it.
				p.EnsureNP = !w.HasNetworkPolicy
			}
			waiting = append(waiting, name+" (not created yet)")
		case podWaiting:
			waiting = append(waiting, fmt.Sprintf("%s (%s)", pod.Name, podPhase(pod)))
		case podReady:
			ready++
		}
	}

	if ready == len(roles) {
		p.cond(evalv1.TrialPodsReady, true, evalv1.ReasonPodsReady,
			fmt.Sprintf("pods of attempt %d are ready", a.Number))
		if d.State == stateClaimed {
			p.Submit = true
			p.RunnerIP = w.Pods[a.Number][evalv1.RoleRunner].Status.PodIP
			p.DBIP = w.Pods[a.Number][evalv1.RoleDBService].Status.PodIP
			if env := w.Pods[a.Number][evalv1.RoleEnvironment]; env != nil {
				p.EnvIP = env.Status.PodIP
			}
		}
	} else {
		limit := environmentReadyTimeout(w.Trial, desc)
		if a.StartTime != nil {
			deadline := a.StartTime.Add(limit)
			if !w.Now.Before(deadline) {
				reason := evalv1.ReasonPodsNotReady
				switch {
				case pullFailure != "":
					reason = evalv1.ReasonEnvironmentImageUnavailable
				case hasEnvironment(desc) && !podIsReady(w.Pods[a.Number][evalv1.RoleEnvironment]):
					reason = evalv1.ReasonEnvironmentNotReady
				}
				p.endAttempt(w, a, controllerVerdict(reason, fmt.Sprintf(
					"pods of attempt %d not ready after %s: %s", a.Number, limit, strings.Join(waiting, ", "))), nil)
				return true
			}
			p.requeueIn(deadline.Sub(w.Now))
		}
		p.cond(evalv1.TrialPodsReady, false, evalv1.ReasonPodsPending, podsPendingMessage(a.Number, w.Trial))
	}
	return false
}

// registration says where the attempt stands with its runner.
func (p *plan) registration(w *world, a *evalv1.AttemptStatus, d *driverView) {
	st := &p.Status
	if d.Registered {
		p.cond(evalv1.TrialRegistered, true, evalv1.ReasonRegistered,
			fmt.Sprintf("attempt %d registered with its runner", a.Number))
		p.confined(a.Number, d.Report)
		if d.Report.traceID != "" {
			a.TraceID = d.Report.traceID
		}
		st.Phase = evalv1.PhaseRunning
		p.cond(evalv1.TrialCompleted, false, evalv1.ReasonRunning,
			fmt.Sprintf("attempt %d of %d is running", a.Number, maxAttempts(w.Trial)))
		p.liveProgress(w, a, d)
	} else {
		p.cond(evalv1.TrialRegistered, false, evalv1.ReasonNotRegistered,
			fmt.Sprintf("attempt %d is not registered yet", a.Number))
		st.Phase = evalv1.PhaseStarting
		p.cond(evalv1.TrialCompleted, false, evalv1.ReasonStarting,
			fmt.Sprintf("attempt %d of %d is starting", a.Number, maxAttempts(w.Trial)))
	}
}

// confined records how the registered attempt's runner confines the pack's
// code. The condition outlives the attempt: it says what the graded run had.
func (p *plan) confined(n int32, c runnerReport) {
	switch {
	case !c.reported:
		// An older runner image says nothing; the condition keeps what an
		// earlier attempt's runner said, or stays absent.
	case c.landlockABI > 0:
		p.cond(evalv1.TrialConfined, true, evalv1.ReasonLandlock, fmt.Sprintf(
			"attempt %d: the pack's Python tools, MCP servers and checks run under Landlock ABI %d, confined to this trial's files",
			n, c.landlockABI))
	default:
		p.cond(evalv1.TrialConfined, false, evalv1.ReasonLandlockUnavailable, fmt.Sprintf(
			"attempt %d: the runner's kernel has no Landlock, so the pack's Python tools, MCP servers and checks can read "+
				"whatever the runner's user can in its pod (its judge key and token); run trials on nodes whose kernel enables Landlock (5.13 or later, lsm=landlock)",
			n))
	}
}

// endAttempt records how the active attempt ended and what follows.
func (p *plan) endAttempt(w *world, a *evalv1.AttemptStatus, v verdict, res *host.AttemptResult) {
	st := &p.Status
	t := w.Trial
	now := metav1.NewTime(w.Now)
	p.attemptEndedHere = true
	a.EndTime = &now
	a.Outcome, a.Reason, a.Message = v.Outcome, v.Reason, truncate(v.Message, result.MaxStatusText)
	// The attempt's figures move to turns and usage: progress is only ever
	// the running attempt's, so summing usage and progress counts none twice.
	st.Progress = nil
	if res != nil {
		st.Turns = int32(res.Turns)
		st.TerminationReason = string(res.TerminationReason)
		st.Usage = addUsage(st.Usage, res)
		if res.ArtifactsPath != "" {
			st.ArtifactsPath = res.ArtifactsPath
		}
		if res.ArtifactsURL != "" {
			st.ArtifactsURL = res.ArtifactsURL
		}
		if v.Grade && st.Grade == nil {
			st.Grade = result.Summary(res.Grade, a.Number)
		}
		if res.TraceID != "" {
			a.TraceID = res.TraceID
		}
	}
	ended := fmt.Sprintf("attempt %d ended: %s", a.Number, a.Message)
	p.cond(evalv1.TrialPodsReady, false, v.Reason, ended)
	p.cond(evalv1.TrialRegistered, false, v.Reason, ended)
	p.AttemptsEnded = append(p.AttemptsEnded, v)
	p.Release = a.ID
	if w.Driver != nil && w.Driver.AttemptID == a.ID && (w.Driver.State == stateQueued || w.Driver.State == stateRunning) {
		p.Cancel = errAttemptAbandoned
	}

	switch {
	case v.Final:
		p.complete(w, v.Phase, completionMessage(a, v, st.Grade))
	case evictedBy(a):
		// Not the trial's fault and not counted: it runs again once
		// admitted again, without a backoff (Kueue paces the requeue).
		st.Phase = evalv1.PhasePending
		msg := fmt.Sprintf("attempt %d ended (%s): %s; the next attempt starts once the trial is admitted again",
			a.Number, a.Reason, a.Message)
		p.cond(evalv1.TrialCompleted, false, a.Reason, msg)
		p.Events = append(p.Events, warningEvent(v.Reason, actionEndAttempt, msg))
	case countedAttempts(st) >= maxAttempts(t):
		p.Events = append(p.Events, warningEvent(v.Reason, actionEndAttempt, ended))
		p.complete(w, evalv1.PhaseInfraFailed, exhaustedMessage(len(st.Attempts), a))
	default:
		wait := backoffAfter(t, infraFailures(st))
		st.Phase = evalv1.PhasePending
		msg := backoffMessage(a, a.EndTime.Add(wait))
		p.cond(evalv1.TrialCompleted, false, evalv1.ReasonBackoff, msg)
		p.Events = append(p.Events, warningEvent(v.Reason, actionEndAttempt, msg))
		p.requeueIn(wait)
	}
}

func completionMessage(a *evalv1.AttemptStatus, v verdict, g *evalv1.GradeSummary) string {
	if v.Grade && g != nil {
		msg := fmt.Sprintf("attempt %d graded: score %g, pass %t", a.Number, g.Score, g.BinaryPass)
		if g.Reasons != "" {
			msg += ": " + g.Reasons
		}
		return msg
	}
	return fmt.Sprintf("attempt %d: %s", a.Number, a.Message)
}

// Messages are functions of status alone, never of the clock, so a
// reconcile that changes nothing writes nothing.

func backoffMessage(a *evalv1.AttemptStatus, next time.Time) string {
	return fmt.Sprintf("attempt %d failed (%s): %s; attempt %d starts at %s",
		a.Number, a.Reason, a.Message, a.Number+1, next.UTC().Format(time.RFC3339))
}

func exhaustedMessage(n int, last *evalv1.AttemptStatus) string {
	return fmt.Sprintf("all %d attempts failed on infrastructure; attempt %d: %s: %s", n, last.Number, last.Reason, last.Message)
}

func podsPendingMessage(n int32, t *evalv1.Trial) string {
	return fmt.Sprintf("waiting for pods %s and %s of attempt %d",
		PodName(t.Name, n, evalv1.RoleDBService), PodName(t.Name, n, evalv1.RoleRunner), n)
}

// complete gives the trial its final outcome.
func (p *plan) complete(w *world, phase evalv1.TrialPhase, msg string) {
	st := &p.Status
	now := metav1.NewTime(w.Now)
	st.Phase = phase
	st.CompletionTime = &now
	// The Completed reason is the phase, so events, conditions and the
	// Status column agree.
	p.cond(evalv1.TrialCompleted, true, string(phase), msg)
	if phase == evalv1.PhasePassed {
		p.cond(evalv1.TrialSucceeded, true, string(phase), msg)
	} else {
		p.cond(evalv1.TrialFailed, true, string(phase), msg)
	}
	p.CompletedReason = string(phase)
	typ := warningEvent
	if phase == evalv1.PhasePassed {
		typ = normalEvent
	}
	p.Events = append(p.Events, typ(string(phase), actionComplete, msg))
}

// startNext starts the next attempt, or says why it cannot yet.
func (p *plan) startNext(w *world) {
	st := &p.Status
	t := w.Trial
	if te := w.TaskErr; te != nil && te.Missing != nil {
		p.failMissing(w, te.Missing)
		return
	}
	if w.Missing != nil {
		p.failMissing(w, w.Missing)
		return
	}
	if te := w.TaskErr; te != nil {
		if te.Transient && !te.EndsTrial {
			st.Phase = evalv1.PhasePending
			p.cond(evalv1.TrialCompleted, false, te.Reason, te.Error())
			p.requeueIn(transientRetry)
			return
		}
		p.complete(w, evalv1.PhaseInvalid, te.Error())
		// Failed names the cause (InvalidDescription, PackFilesInvalid),
		// as for a provider key below.
		if te.Reason != "" {
			p.cond(evalv1.TrialFailed, true, te.Reason, te.Error())
		}
		return
	}
	if ke := w.KeyErr; ke != nil {
		if ke.Transient {
			st.Phase = evalv1.PhasePending
			p.cond(evalv1.TrialCompleted, false, ke.Reason, ke.Error())
			p.requeueIn(transientRetry)
			return
		}
		p.complete(w, evalv1.PhaseInvalid, ke.Error())
		// Failed carries the cause, as a Job's Failed carries
		// BackoffLimitExceeded; Completed keeps the phase.
		p.cond(evalv1.TrialFailed, true, ke.Reason, ke.Error())
		return
	}
	if w.Task == nil {
		return // the caller resolves the task whenever this branch can run
	}
	if err := checkUserSimulator(t, w.Task.Desc); err != nil {
		// A spec nobody can run as written: terminal, before any pod or token.
		p.complete(w, evalv1.PhaseInvalid, err.Error())
		p.cond(evalv1.TrialFailed, true, evalv1.ReasonInvalidConfig, err.Error())
		return
	}
	if err := w.ImageErr; err != nil {
		// No image of this manager can run the task: terminal, before any pod.
		p.complete(w, evalv1.PhaseInvalid, err.Error())
		p.cond(evalv1.TrialFailed, true, evalv1.ReasonInvalidConfig, err.Error())
		return
	}
	if n := len(st.Attempts); n > 0 {
		last := &st.Attempts[n-1]
		if countedAttempts(st) >= maxAttempts(t) {
			p.complete(w, evalv1.PhaseInfraFailed, exhaustedMessage(n, last))
			return
		}
		if last.EndTime != nil && !evictedBy(last) {
			next := last.EndTime.Add(backoffAfter(t, infraFailures(st)))
			if w.Now.Before(next) {
				st.Phase = evalv1.PhasePending
				p.cond(evalv1.TrialCompleted, false, evalv1.ReasonBackoff, backoffMessage(last, next))
				p.requeueIn(next.Sub(w.Now))
				return
			}
		}
	}

	n := int32(len(st.Attempts)) + 1
	now := metav1.NewTime(w.Now)
	p.cond(evalv1.TrialReferencesResolved, true, evalv1.ReasonResolved, "the task and every Secret the trial names exist")
	a := evalv1.AttemptStatus{
		Number: n, ID: AttemptID(t, n), StartTime: &now,
		Outcome: evalv1.OutcomeRunning, Reason: evalv1.ReasonStarting,
	}
	slot := w.Slots != nil && w.Slots.Next
	if !slot {
		a.RunnerPod, a.DBServicePod = PodName(t.Name, n, evalv1.RoleRunner), PodName(t.Name, n, evalv1.RoleDBService)
	}
	st.Attempts = append(st.Attempts, a)
	if st.StartTime == nil {
		st.StartTime = &now
		p.TrialStarted = true
	}
	st.TaskID = w.Task.Desc.TaskID
	st.Phase = evalv1.PhaseStarting
	msg := fmt.Sprintf("attempt %d of %d is starting", n, maxAttempts(t))
	p.cond(evalv1.TrialCompleted, false, evalv1.ReasonStarting, msg)
	p.cond(evalv1.TrialPodsReady, false, evalv1.ReasonPodsPending, podsPendingMessage(n, t))
	p.cond(evalv1.TrialRegistered, false, evalv1.ReasonNotRegistered,
		fmt.Sprintf("attempt %d is not registered yet", n))

	p.Claim = &attemptInput{Trial: t.DeepCopy(), Number: n, Task: w.Task}
	p.ClaimID = a.ID
	if slot {
		// No runner or DB service pod, Secret or NetworkPolicy of its own,
		// and no event: the slot's objects are the Campaign's, and the
		// Trial's one event is its end. The new attempt takes the slot
		// observe claimed for it, and is submitted at once when that slot
		// (and a terminal task's fresh environment) is Ready.
		if hasEnvironment(w.Task.Desc) {
			st.Attempts[len(st.Attempts)-1].EnvironmentPod = PodName(t.Name, n, evalv1.RoleEnvironment)
		}
		p.slotPods(w, &st.Attempts[len(st.Attempts)-1], true)
		return
	}
	p.EnsureNP = !w.HasNetworkPolicy
	p.CreatePod = attemptRoles(w.Task.Desc)
	p.Env = w.environment()
	msg = fmt.Sprintf("attempt %d of %d: creating pods %s and %s", n, maxAttempts(t), a.DBServicePod, a.RunnerPod)
	if hasEnvironment(w.Task.Desc) {
		st.Attempts[len(st.Attempts)-1].EnvironmentPod = PodName(t.Name, n, evalv1.RoleEnvironment)
		msg = fmt.Sprintf("attempt %d of %d: creating pods %s, %s and %s (the task's environment, image %s)", n, maxAttempts(t),
			a.DBServicePod, a.RunnerPod, PodName(t.Name, n, evalv1.RoleEnvironment), w.Task.Desc.Environment.Image)
	}
	p.Events = append(p.Events, normalEvent(evalv1.ReasonStarting, actionStartAttempt, msg))
	p.requeueIn(environmentReadyTimeout(t, w.Task.Desc))
}

// driverDone: the attempt's driver in this process returned a result.
func driverDone(w *world, a *evalv1.AttemptStatus) bool {
	d := w.Driver
	return d != nil && d.AttemptID == a.ID && d.State == stateDone && d.Result != nil
}

// hold keeps a held Trial from starting an attempt, saying why: spec.suspend,
// else the Admitted condition's words (it waits for Kueue).
func (p *plan) hold(w *world) {
	st := &p.Status
	st.Phase = evalv1.PhasePending
	if c := meta.FindStatusCondition(st.Conditions, evalv1.TrialAdmitted); c != nil && w.Queue != nil && !w.Trial.Held() {
		p.cond(evalv1.TrialCompleted, false, c.Reason, c.Message)
		return
	}
	p.cond(evalv1.TrialCompleted, false, evalv1.ReasonTrialSuspended,
		"spec.suspend holds the trial: no attempt starts until it is unset")
}

// collectPods deletes pods of ended attempts (unless the Trial keeps them
// for debugging) and pods left behind by an earlier Trial of the same name.
func (p *plan) collectPods(w *world) {
	st := &p.Status
	active := activeAttempt(st)
	nums := make([]int32, 0, len(w.Pods))
	for n := range w.Pods {
		nums = append(nums, n)
	}
	sort.Slice(nums, func(i, j int) bool { return nums[i] < nums[j] })
	for _, n := range nums {
		if active != nil && active.Number == n {
			continue
		}
		if n < 1 || int(n) > len(st.Attempts) {
			continue // an attempt this (possibly stale) status does not know yet
		}
		if allDeleting(w.Pods[n]) {
			continue
		}
		if keepPods(w.Trial) {
			continue
		}
		p.DeletePodsOf = append(p.DeletePodsOf, n)
	}
	for _, s := range w.Strays {
		if s.DeletionTimestamp == nil {
			p.DeleteStrays = append(p.DeleteStrays, s)
		}
	}
}

func allDeleting(pods map[string]*corev1.Pod) bool {
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			return false
		}
	}
	return true
}

func podPhase(p *corev1.Pod) string {
	phase := string(p.Status.Phase)
	switch p.Status.Phase {
	case "":
		phase = "Pending"
	case corev1.PodRunning:
		phase = "Running, not ready"
	}
	// On a real node the reason a pod does not start is a container's
	// waiting reason (ErrImagePull, ImagePullBackOff, CreateContainerError):
	// the attempt's end names it, not only "Pending".
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" {
			msg := w.Message
			if len(msg) > 200 {
				msg = msg[:200] + "..."
			}
			phase += fmt.Sprintf(": container %s %s", cs.Name, w.Reason)
			if msg != "" {
				phase += " (" + msg + ")"
			}
			break
		}
	}
	return phase
}

// cond sets a condition of the planned status. meta.SetStatusCondition keeps
// the transition time when only the reason or message changes; a new
// transition is stamped with the world's clock, not the wall clock, so
// planning stays a function of the world.
func (p *plan) cond(typ string, ok bool, reason, msg string) {
	s := metav1.ConditionFalse
	if ok {
		s = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{
		Type: typ, Status: s, Reason: reason, Message: truncate(msg, 4096), ObservedGeneration: p.gen,
		LastTransitionTime: p.now,
	})
}

// failMissing ends a Trial that names an object which does not exist, before
// any pod and without using an attempt: no attempt could succeed, so retries
// would only spend pods. Final, as a Job with an invalid spec: the spec is
// immutable, and an object created later does not revive the Trial.
func (p *plan) failMissing(w *world, m *refs.MissingRef) {
	msg := m.String()
	p.cond(evalv1.TrialReferencesResolved, false, m.Reason, msg)
	p.Events = append(p.Events, warningEvent(m.Reason, actionStartAttempt, msg+"; no pods are created and the trial ends as Invalid"))
	p.complete(w, evalv1.PhaseInvalid, msg)
}
