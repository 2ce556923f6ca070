package controllers

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tolokaforge.io/operator/api/runnerpb"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/host"
)

func queuedTrial(tr *evalv1.Trial, suspend *bool) *evalv1.Trial {
	tr.Labels = map[string]string{evalv1.LabelQueueName: "team-a"}
	tr.Spec.Suspend = suspend
	return tr
}

// TestPlanQueueGate: a Trial that names a queue in a manager running Kueue's
// integration starts no attempt (and so creates no pod) until its Workload is
// admitted; the Admitted condition says where it stands.
func TestPlanQueueGate(t *testing.T) {
	for _, tc := range []struct {
		name        string
		trial       *evalv1.Trial
		queued      bool
		queue       *QueueState
		wantStart   bool
		wantPhase   evalv1.TrialPhase
		wantAdmit   metav1.ConditionStatus // "" = no Admitted condition
		wantReason  string
		wantMessage string
	}{
		{name: "no queue label: starts as always", trial: testTrial(), queued: true,
			wantStart: true, wantPhase: evalv1.PhaseStarting},
		{name: "queue label, integration off: starts as always", trial: queuedTrial(testTrial(), nil),
			wantStart: true, wantPhase: evalv1.PhaseStarting},
		{name: "queue label, no workload yet: waits", trial: queuedTrial(testTrial(), nil), queued: true,
			queue: &QueueState{}, wantPhase: evalv1.PhasePending, wantAdmit: metav1.ConditionFalse,
			wantReason: evalv1.ReasonQueued, wantMessage: "waiting for its workload in LocalQueue team-a to be created"},
		{name: "no workload, its priority class missing: says so", trial: queuedTrial(testTrial(), nil), queued: true,
			queue:     &QueueState{Pending: `WorkloadPriorityClass "urgent" (label kueue.x-k8s.io/priority-class) does not exist`},
			wantPhase: evalv1.PhasePending, wantAdmit: metav1.ConditionFalse, wantReason: evalv1.ReasonQueued,
			wantMessage: `waiting for its workload in LocalQueue team-a to be created: WorkloadPriorityClass "urgent" (label kueue.x-k8s.io/priority-class) does not exist`},
		{name: "workload pending: waits with Kueue's words", trial: queuedTrial(testTrial(), nil), queued: true,
			queue:     &QueueState{Workload: "trial-t1-abcde", Pending: "insufficient unused quota for cpu in flavor default"},
			wantPhase: evalv1.PhasePending, wantAdmit: metav1.ConditionFalse, wantReason: evalv1.ReasonQueued,
			wantMessage: "workload trial-t1-abcde waits for quota in LocalQueue team-a: insufficient unused quota for cpu in flavor default"},
		{name: "admitted: starts, naming the ClusterQueue", trial: queuedTrial(testTrial(), nil), queued: true,
			queue:     &QueueState{Workload: "trial-t1-abcde", Admitted: true, ClusterQueue: "cq"},
			wantStart: true, wantPhase: evalv1.PhaseStarting, wantAdmit: metav1.ConditionTrue, wantReason: evalv1.ReasonAdmitted,
			wantMessage: "admitted by ClusterQueue cq (LocalQueue team-a, workload trial-t1-abcde)"},
		{name: "suspend false does not override the queue: waits", trial: queuedTrial(testTrial(), ptr.To(false)), queued: true,
			queue:     &QueueState{Workload: "trial-t1-abcde", Pending: "p"},
			wantPhase: evalv1.PhasePending, wantAdmit: metav1.ConditionFalse, wantReason: evalv1.ReasonQueued,
			wantMessage: "workload trial-t1-abcde waits for quota in LocalQueue team-a: p"},
		{name: "admitted but held by hand: waits, saying spec.suspend", trial: queuedTrial(testTrial(), ptr.To(true)), queued: true,
			queue:     &QueueState{Workload: "trial-t1-abcde", Admitted: true, ClusterQueue: "cq"},
			wantPhase: evalv1.PhasePending, wantAdmit: metav1.ConditionTrue, wantReason: evalv1.ReasonAdmitted,
			wantMessage: "admitted by ClusterQueue cq (LocalQueue team-a, workload trial-t1-abcde)"},
		{name: "suspended by hand, no queue", trial: func() *evalv1.Trial { tr := testTrial(); tr.Spec.Suspend = ptr.To(true); return tr }(),
			wantPhase: evalv1.PhasePending},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := planTrial(&world{Now: t0, Trial: tc.trial, Task: resolvedShop(), Queued: tc.queued, Queue: tc.queue})
			if started := p.Claim != nil; started != tc.wantStart || (len(p.CreatePod) > 0) != tc.wantStart {
				t.Fatalf("started %t, pods to create %v; want start %t", started, p.CreatePod, tc.wantStart)
			}
			if p.Status.Phase != tc.wantPhase {
				t.Errorf("phase %s, want %s", p.Status.Phase, tc.wantPhase)
			}
			c := cond(&p.Status, evalv1.TrialAdmitted)
			if c.Status != tc.wantAdmit || c.Reason != tc.wantReason || c.Message != tc.wantMessage {
				t.Errorf("Admitted = %s/%s %q, want %s/%s %q", c.Status, c.Reason, c.Message, tc.wantAdmit, tc.wantReason, tc.wantMessage)
			}
			if !tc.wantStart {
				comp := cond(&p.Status, evalv1.TrialCompleted)
				if comp.Status != metav1.ConditionFalse || comp.Reason == "" {
					t.Errorf("Completed = %+v, want False with the reason it waits", comp)
				}
				switch {
				case tc.trial.Held():
					if comp.Reason != evalv1.ReasonTrialSuspended {
						t.Errorf("Completed = %s %q, want %s", comp.Reason, comp.Message, evalv1.ReasonTrialSuspended)
					}
				case tc.wantAdmit != "" && (comp.Reason != tc.wantReason || comp.Message != tc.wantMessage):
					t.Errorf("Completed = %s %q, want the Admitted condition's words", comp.Reason, comp.Message)
				}
			}
		})
	}
}

// TestPlanEviction: suspending an admitted Trial ends its attempt
// InfraFailed with a reason naming the eviction, uncounted, without backoff;
// an attempt whose driver already returned keeps its result and grade.
func TestPlanEviction(t *testing.T) {
	graded := &host.AttemptResult{Outcome: evalv1.OutcomePassed, Grade: &runnerpb.Grade{Score: 1, BinaryPass: true}}
	for _, tc := range []struct {
		name        string
		queue       *QueueState
		driver      *driverView
		wantOutcome evalv1.AttemptOutcome
		wantReason  string
		wantMessage string
		wantPhase   evalv1.TrialPhase
	}{
		{name: "preempted while running",
			queue:       &QueueState{Workload: "wl", EvictedReason: "Preempted", EvictedMessage: "Preempted to accommodate a workload (UID: u) due to prioritization in the ClusterQueue"},
			driver:      &driverView{AttemptID: "uid-1-1", State: stateRunning, Registered: true},
			wantOutcome: evalv1.OutcomeInfraFailed, wantReason: evalv1.ReasonPreempted, wantPhase: evalv1.PhasePending,
			wantMessage: "attempt 1: Kueue preempted workload wl: Preempted to accommodate a workload (UID: u) due to prioritization in the ClusterQueue"},
		{name: "evicted for another reason",
			queue:       &QueueState{Workload: "wl", EvictedReason: "InactiveWorkload", EvictedMessage: "The workload is deactivated"},
			driver:      &driverView{AttemptID: "uid-1-1", State: stateClaimed},
			wantOutcome: evalv1.OutcomeInfraFailed, wantReason: evalv1.ReasonEvicted, wantPhase: evalv1.PhasePending,
			wantMessage: "attempt 1: Kueue evicted workload wl (InactiveWorkload): The workload is deactivated"},
		{name: "evicted after grading keeps the grade",
			queue:       &QueueState{Workload: "wl", EvictedReason: "Preempted", EvictedMessage: "m"},
			driver:      &driverView{AttemptID: "uid-1-1", State: stateDone, Registered: true, Result: graded},
			wantOutcome: evalv1.OutcomePassed, wantReason: evalv1.ReasonPassed, wantPhase: evalv1.PhasePassed,
			wantMessage: "score 1"},
		{name: "evicted while Kueue still shows it admitted",
			queue:       &QueueState{Workload: "wl", Admitted: true, ClusterQueue: "cq", EvictedReason: "Preempted", EvictedMessage: "m"},
			driver:      &driverView{AttemptID: "uid-1-1", State: stateRunning, Registered: true},
			wantOutcome: evalv1.OutcomeInfraFailed, wantReason: evalv1.ReasonPreempted, wantPhase: evalv1.PhasePending,
			wantMessage: "attempt 1: Kueue preempted workload wl: m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := queuedTrial(running(1), nil)
			tr.Spec.RetryPolicy.MaxAttempts = 1 // an eviction must not exhaust it
			p := planTrial(&world{Now: t0, Trial: tr, Queued: true, Queue: tc.queue, Driver: tc.driver, Task: resolvedShop()})
			a := p.Status.Attempts[0]
			if a.Outcome != tc.wantOutcome || a.Reason != tc.wantReason || a.Message != tc.wantMessage {
				t.Errorf("attempt = %s/%s %q, want %s/%s %q", a.Outcome, a.Reason, a.Message, tc.wantOutcome, tc.wantReason, tc.wantMessage)
			}
			if p.Status.Phase != tc.wantPhase {
				t.Errorf("phase %s, want %s", p.Status.Phase, tc.wantPhase)
			}
			if len(p.Status.Attempts) != 1 || p.Claim != nil || len(p.CreatePod) > 0 {
				t.Errorf("a new attempt started while suspended: %+v", p.Status.Attempts)
			}
			if tc.wantPhase == evalv1.PhasePassed {
				if g := p.Status.Grade; g == nil || !g.BinaryPass || g.Attempt != 1 {
					t.Errorf("grade = %+v, want the attempt's pass", g)
				}
				return
			}
			if p.Status.Grade != nil {
				t.Errorf("an evicted attempt wrote a grade: %+v", p.Status.Grade)
			}
			c := cond(&p.Status, evalv1.TrialCompleted)
			if c.Status != metav1.ConditionFalse || c.Reason != tc.wantReason || !strings.Contains(c.Message, "starts once the trial is admitted again") {
				t.Errorf("Completed = %+v", c)
			}
			if tc.driver.State == stateRunning && p.Cancel == nil {
				t.Error("the running driver was not cancelled")
			}

			// Readmitted: the next attempt starts at once (no backoff), and
			// the evicted one did not use up maxAttempts: 1.
			tr2 := tr.DeepCopy()
			tr2.Status = p.Status
			p2 := planTrial(&world{Now: t0, Trial: tr2, Queued: true, Task: resolvedShop(),
				Queue: &QueueState{Workload: "wl", Admitted: true, ClusterQueue: "cq"}})
			if len(p2.Status.Attempts) != 2 || p2.Claim == nil || p2.Status.Phase != evalv1.PhaseStarting {
				t.Fatalf("after readmission: phase %s attempts %+v", p2.Status.Phase, p2.Status.Attempts)
			}
		})
	}
}

func TestCountedAttempts(t *testing.T) {
	st := &evalv1.TrialStatus{Attempts: []evalv1.AttemptStatus{
		{Number: 1, Outcome: evalv1.OutcomeInfraFailed, Reason: evalv1.ReasonPodLost},
		{Number: 2, Outcome: evalv1.OutcomeInfraFailed, Reason: evalv1.ReasonPreempted},
		{Number: 3, Outcome: evalv1.OutcomeInfraFailed, Reason: evalv1.ReasonEvicted},
		{Number: 4, Outcome: evalv1.OutcomeInfraFailed, Reason: evalv1.ReasonTrialSuspended},
		{Number: 5, Outcome: evalv1.OutcomeRunning},
	}}
	if got := countedAttempts(st); got != 2 {
		t.Errorf("countedAttempts = %d, want 2 (the pod loss and the running one)", got)
	}
	if got := infraFailures(st); got != 1 {
		t.Errorf("infraFailures = %d, want 1", got)
	}
}

// TestPlanHeldByHand: spec.suspend set on a running Trial ends its attempt
// (TrialSuspended, uncounted); admission alone does not start it again.
func TestPlanHeldByHand(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tr    *evalv1.Trial
		queue *QueueState
	}{
		{"queued and admitted", queuedTrial(running(1), ptr.To(true)), &QueueState{Workload: "wl", Admitted: true, ClusterQueue: "cq"}},
		{"no queue", func() *evalv1.Trial { tr := running(1); tr.Spec.Suspend = ptr.To(true); return tr }(), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := planTrial(&world{Now: t0, Trial: tc.tr, Queued: true, Queue: tc.queue, Task: resolvedShop(),
				Driver: &driverView{AttemptID: "uid-1-1", State: stateRunning, Registered: true}})
			a := p.Status.Attempts[0]
			if a.Outcome != evalv1.OutcomeInfraFailed || a.Reason != evalv1.ReasonTrialSuspended ||
				a.Message != "attempt 1: spec.suspend was set while it ran" {
				t.Errorf("attempt = %s/%s %q", a.Outcome, a.Reason, a.Message)
			}
			if countedAttempts(&p.Status) != 0 || p.Cancel == nil || len(p.Status.Attempts) != 1 {
				t.Errorf("counted %d, cancel %v, attempts %d", countedAttempts(&p.Status), p.Cancel, len(p.Status.Attempts))
			}
			held := tc.tr.DeepCopy()
			held.Status = p.Status
			p2 := planTrial(&world{Now: t0, Trial: held, Queued: true, Queue: tc.queue, Task: resolvedShop()})
			if p2.Claim != nil || cond(&p2.Status, evalv1.TrialCompleted).Reason != evalv1.ReasonTrialSuspended {
				t.Errorf("held trial started again or says %+v", cond(&p2.Status, evalv1.TrialCompleted))
			}
		})
	}
}

// TestPlace: an admission's flavor node labels win over the Trial's own for
// the same key (its quota was reserved there); tolerations are added once.
func TestPlace(t *testing.T) {
	spot := corev1.Toleration{Key: "spot", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	gpu := corev1.Toleration{Key: "gpu", Operator: corev1.TolerationOpEqual, Value: "a100", Effect: corev1.TaintEffectNoSchedule}
	for _, tc := range []struct {
		name     string
		selector map[string]string
		tols     []corev1.Toleration
		pl       Placement
		wantSel  map[string]string
		wantTols []corev1.Toleration
	}{
		{name: "nothing to add", selector: map[string]string{"zone": "a"}, wantSel: map[string]string{"zone": "a"}},
		{name: "onto an empty pod", pl: Placement{NodeSelector: map[string]string{"pool": "spot"}, Tolerations: []corev1.Toleration{spot}},
			wantSel: map[string]string{"pool": "spot"}, wantTols: []corev1.Toleration{spot}},
		{name: "the flavor wins a shared key", selector: map[string]string{"pool": "on-demand", "zone": "a"},
			pl:      Placement{NodeSelector: map[string]string{"pool": "spot"}},
			wantSel: map[string]string{"pool": "spot", "zone": "a"}},
		{name: "a toleration the Trial has is not repeated", tols: []corev1.Toleration{spot},
			pl: Placement{Tolerations: []corev1.Toleration{spot, gpu}}, wantTols: []corev1.Toleration{spot, gpu}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{NodeSelector: tc.selector, Tolerations: tc.tols}}
			place(pod, tc.pl)
			if !reflect.DeepEqual(pod.Spec.NodeSelector, tc.wantSel) {
				t.Errorf("nodeSelector = %v, want %v", pod.Spec.NodeSelector, tc.wantSel)
			}
			if !reflect.DeepEqual(pod.Spec.Tolerations, tc.wantTols) {
				t.Errorf("tolerations = %v, want %v", pod.Spec.Tolerations, tc.wantTols)
			}
		})
	}
}
