package controllers

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// QueueView is what the Trial controller asks of a queueing integration
// (Kueue's, package controllers/kueue): where a Trial that names a queue
// stands. Its Workload's admission is the Trial's gate. Nil in TrialReconciler: no integration,
// and the queue label means nothing to the Trial controller.
type QueueView interface {
	// State is the Trial's Workload as the cache shows it.
	State(ctx context.Context, t *evalv1.Trial) (QueueState, error)
	// Watch adds the watch that brings a Trial back when its Workload changes.
	Watch(b *builder.Builder) *builder.Builder
}

// QueueState is a Trial's Workload in Kueue's words.
type QueueState struct {
	// Workload is its name; "" while it does not exist yet.
	Workload string
	// Admitted: Kueue admitted it (quota reserved, admission checks passed)
	// into ClusterQueue.
	Admitted     bool
	ClusterQueue string
	// Pending is Kueue's message while it waits (QuotaReserved=False).
	Pending string
	// EvictedReason and EvictedMessage are its Evicted=True condition's
	// (Preempted, PodsReadyTimeout, InactiveWorkload...); empty otherwise.
	EvictedReason, EvictedMessage string
	// SlotPodSet: the Workload reserves one slot pod (pod set SlotPodSet),
	// not the Trial's own runner and DB-service pods: its attempts may run on
	// its Campaign's warm slots, and only then.
	SlotPodSet bool
	// Placement is where the admission puts each role's pod (by
	// evalv1.RoleRunner, evalv1.RoleDBService, or SlotPodSet): the node
	// labels and tolerations of the ResourceFlavors Kueue assigned and of
	// its admission checks' pod set updates. The quota was counted in those
	// flavors, so the pods must land on their nodes.
	Placement map[string]Placement
}

// Placement is what an admission adds to one pod.
type Placement struct {
	NodeSelector map[string]string
	Tolerations  []corev1.Toleration
}

// place adds pl to pod: its node labels win over the Trial's own
// nodeSelector for the same key (the quota was reserved on the flavor's
// nodes), its tolerations are added to the Trial's.
func place(pod *corev1.Pod, pl Placement) {
	if len(pl.NodeSelector) > 0 && pod.Spec.NodeSelector == nil {
		pod.Spec.NodeSelector = make(map[string]string, len(pl.NodeSelector))
	}
	for k, v := range pl.NodeSelector {
		pod.Spec.NodeSelector[k] = v
	}
	for _, tol := range pl.Tolerations {
		if !slices.ContainsFunc(pod.Spec.Tolerations, func(have corev1.Toleration) bool { return have.MatchToleration(&tol) }) {
			pod.Spec.Tolerations = append(pod.Spec.Tolerations, *tol.DeepCopy())
		}
	}
}

// AttemptResources are the requests and limits of an attempt's pods by role
// (evalv1.RoleRunner, evalv1.RoleDBService): what a queue reserves for it.
func AttemptResources(t *evalv1.Trial) map[string]corev1.ResourceRequirements {
	return map[string]corev1.ResourceRequirements{
		evalv1.RoleRunner:    resourcesFor(evalv1.RoleRunner, t.Spec.Runner.Resources),
		evalv1.RoleDBService: resourcesFor(evalv1.RoleDBService, t.Spec.DBService.Resources),
	}
}

// SlotPodSet names the one pod set of a slotted Trial's Workload: the slot
// pod its attempts run on (docs/kueue.md, "Kueue with warm slots").
const SlotPodSet = ComponentSlot

// QueuedOnSlots reports whether a Trial's Workload reserves a slot pod rather
// than its own runner and DB-service pods: its spec.slots is Enabled, a
// Campaign controls it (MultiKueue's Trials have no owner: a worker's copy
// runs pods of its own under the Workload the manager cluster's made) and
// its task has no environment of its own (such a Trial keeps per-attempt
// pods, docs/warm-slots.md).
func QueuedOnSlots(t *evalv1.Trial, hasEnvironment bool) bool {
	ref := metav1.GetControllerOf(t)
	return t.Spec.Slots.Enabled() && !hasEnvironment && !t.ManagedElsewhere() &&
		ref != nil && ref.Kind == "Campaign" && ref.APIVersion == evalv1.GroupVersion.String()
}

// SlotPodSetSpec is what a slotted Trial's Workload reserves: the slot pod
// its attempts run on, reduced to its containers' names and resources. It is
// read off the slot pod's own template, so the reservation and the pod
// cannot drift apart: one pod whose requests are its runner's and its DB
// service's together, the same as the Trial's own two pods would ask.
func SlotPodSetSpec(t *evalv1.Trial) corev1.PodSpec {
	tmpl := slotTemplate(PodConfig{}, t, nil)
	spec := corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever}
	for _, c := range tmpl.Spec.Containers {
		spec.Containers = append(spec.Containers, corev1.Container{Name: c.Name, Resources: *c.Resources.DeepCopy()})
	}
	return spec
}

// evictedBy says whether an attempt ended because the Trial was suspended
// (by Kueue's eviction or preemption, or by hand): such an attempt is no
// fault of the trial's and does not count against the retry policy.
func evictedBy(a *evalv1.AttemptStatus) bool {
	switch a.Reason {
	case evalv1.ReasonEvicted, evalv1.ReasonPreempted, evalv1.ReasonTrialSuspended:
		return a.Outcome == evalv1.OutcomeInfraFailed
	}
	return false
}

// countedAttempts are the attempts retryPolicy.maxAttempts bounds: all but
// those a suspension ended.
func countedAttempts(st *evalv1.TrialStatus) int32 {
	n := int32(0)
	for i := range st.Attempts {
		if !evictedBy(&st.Attempts[i]) {
			n++
		}
	}
	return n
}

// suspendVerdict ends the attempt of a Trial that was suspended while it ran.
func suspendVerdict(w *world, a *evalv1.AttemptStatus) verdict {
	q := w.Queue
	switch {
	case q != nil && q.EvictedReason == "Preempted":
		return controllerVerdict(evalv1.ReasonPreempted, fmt.Sprintf(
			"attempt %d: Kueue preempted workload %s: %s", a.Number, q.Workload, q.EvictedMessage))
	case q != nil && q.EvictedReason != "":
		return controllerVerdict(evalv1.ReasonEvicted, fmt.Sprintf(
			"attempt %d: Kueue evicted workload %s (%s): %s", a.Number, q.Workload, q.EvictedReason, q.EvictedMessage))
	case q != nil && !w.Trial.Held():
		return controllerVerdict(evalv1.ReasonEvicted, fmt.Sprintf(
			"attempt %d: workload %s is no longer admitted", a.Number, nonEmpty(q.Workload, "(none)")))
	default:
		return controllerVerdict(evalv1.ReasonTrialSuspended, fmt.Sprintf(
			"attempt %d: spec.suspend was set while it ran", a.Number))
	}
}

// queueCondition sets the Admitted condition of a Trial that names a queue.
func (p *plan) queueCondition(w *world) {
	q := w.Queue
	if q == nil {
		return
	}
	lq := w.Trial.QueueName()
	switch {
	case q.Admitted && q.EvictedReason == "":
		p.cond(evalv1.TrialAdmitted, true, evalv1.ReasonAdmitted, fmt.Sprintf(
			"admitted by ClusterQueue %s (LocalQueue %s, workload %s)", q.ClusterQueue, lq, q.Workload))
	case q.EvictedReason == "Preempted":
		p.cond(evalv1.TrialAdmitted, false, evalv1.ReasonPreempted, fmt.Sprintf(
			"workload %s was preempted and waits in LocalQueue %s again: %s", q.Workload, lq, q.EvictedMessage))
	case q.EvictedReason != "":
		p.cond(evalv1.TrialAdmitted, false, evalv1.ReasonEvicted, fmt.Sprintf(
			"workload %s was evicted (%s) and waits in LocalQueue %s again: %s", q.Workload, q.EvictedReason, lq, q.EvictedMessage))
	case q.Workload == "":
		msg := fmt.Sprintf("waiting for its workload in LocalQueue %s to be created", lq)
		if q.Pending != "" {
			msg += ": " + q.Pending
		}
		p.cond(evalv1.TrialAdmitted, false, evalv1.ReasonQueued, msg)
	default:
		msg := fmt.Sprintf("workload %s waits for quota in LocalQueue %s", q.Workload, lq)
		if q.Pending != "" {
			msg += ": " + q.Pending
		}
		p.cond(evalv1.TrialAdmitted, false, evalv1.ReasonQueued, msg)
	}
}
