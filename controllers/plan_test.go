package controllers

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/host"
	"tolokaforge.io/operator/controllers/refs"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func mt(d time.Duration) *metav1.Time {
	v := metav1.NewTime(t0.Add(d))
	return &v
}

func resolvedShop() *resolvedTask {
	return &resolvedTask{Desc: &task.TaskDescription{TaskID: "shop_orders_02"}}
}

func readyPod(tr *evalv1.Trial, n int32, role, ip string) *corev1.Pod {
	p := dbServicePod(PodConfig{Image: "i"}, attemptRef{tr, n})
	if role == evalv1.RoleRunner {
		p = runnerPod(PodConfig{Image: "i"}, attemptRef{tr, n}, nil)
	}
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	return p
}

func pendingPod(tr *evalv1.Trial, n int32, role string) *corev1.Pod {
	p := readyPod(tr, n, role, "")
	p.Status = corev1.PodStatus{Phase: corev1.PodPending}
	return p
}

func killedPod(tr *evalv1.Trial, n int32, role string) *corev1.Pod {
	p := readyPod(tr, n, role, "10.0.0.9")
	p.Status = corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{
		Name: role, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137}}}}}
	return p
}

func podsOf(ps ...*corev1.Pod) map[int32]map[string]*corev1.Pod {
	out := map[int32]map[string]*corev1.Pod{}
	for _, p := range ps {
		n := int32(0)
		for _, c := range p.Labels[evalv1.LabelAttempt] {
			n = n*10 + int32(c-'0')
		}
		if out[n] == nil {
			out[n] = map[string]*corev1.Pod{}
		}
		out[n][p.Labels[evalv1.LabelRole]] = p
	}
	return out
}

// running returns a trial whose attempt n is Running since t0.
func running(n int32, earlier ...evalv1.AttemptStatus) *evalv1.Trial {
	tr := testTrial()
	tr.Spec.RetryPolicy = evalv1.RetryPolicy{MaxAttempts: 3, Backoff: &metav1.Duration{Duration: 10 * time.Second}}
	tr.Status.Attempts = append(earlier, evalv1.AttemptStatus{Number: n, ID: AttemptID(tr, n), StartTime: mt(0),
		Outcome: evalv1.OutcomeRunning, Reason: evalv1.ReasonStarting})
	tr.Status.Phase = evalv1.PhaseStarting
	tr.Status.StartTime = mt(0)
	return tr
}

func cond(st *evalv1.TrialStatus, typ string) metav1.Condition {
	c := meta.FindStatusCondition(st.Conditions, typ)
	if c == nil {
		return metav1.Condition{}
	}
	return *c
}

func TestPlanStartsTheFirstAttempt(t *testing.T) {
	tr := testTrial()
	p := planTrial(&world{Now: t0, Trial: tr, Task: resolvedShop()})
	st := p.Status
	if len(st.Attempts) != 1 {
		t.Fatalf("attempts = %+v", st.Attempts)
	}
	a := st.Attempts[0]
	want := evalv1.AttemptStatus{Number: 1, ID: "uid-1-1", StartTime: mt(0), Outcome: evalv1.OutcomeRunning,
		Reason: evalv1.ReasonStarting, RunnerPod: "t1-a1-runner", DBServicePod: "t1-a1-dbservice"}
	if diff := cmp.Diff(want, a); diff != "" {
		t.Errorf("attempt (-want +got):\n%s", diff)
	}
	if st.Phase != evalv1.PhaseStarting || st.TaskID != "shop_orders_02" || st.Agent != "oracle" || st.AttemptCount != 1 {
		t.Errorf("status = phase %s task %q agent %q count %d", st.Phase, st.TaskID, st.Agent, st.AttemptCount)
	}
	if s, f := cond(&st, evalv1.TrialSucceeded), cond(&st, evalv1.TrialFailed); s.Type != "" || f.Type != "" {
		t.Errorf("a starting trial has Succeeded %+v / Failed %+v", s, f)
	}
	if c := cond(&st, evalv1.TrialCompleted); c.Status != metav1.ConditionFalse || c.Reason != evalv1.ReasonStarting {
		t.Errorf("Completed = %+v", c)
	}
	if p.Claim == nil || p.ClaimID != "uid-1-1" || !p.EnsureNP || !p.TrialStarted {
		t.Errorf("effects: claim %v id %q np %v started %v", p.Claim != nil, p.ClaimID, p.EnsureNP, p.TrialStarted)
	}
	if diff := cmp.Diff([]string{evalv1.RoleDBService, evalv1.RoleRunner}, p.CreatePod); diff != "" {
		t.Errorf("pods to create (-want +got):\n%s", diff)
	}
	if len(p.Events) != 1 || p.Events[0].Reason != evalv1.ReasonStarting || p.Events[0].Type != corev1.EventTypeNormal {
		t.Errorf("events = %+v", p.Events)
	}
	if p.RequeueAfter != defaultPodsReadyTimeout {
		t.Errorf("requeue = %s, want the pods-ready deadline", p.RequeueAfter)
	}
}

// TestPlanIsStable: replanning the written status against the same world
// changes nothing and repeats no side effect, so a reconcile triggered by our
// own write costs no second write.
func TestPlanIsStable(t *testing.T) {
	tr := testTrial()
	first := planTrial(&world{Now: t0, Trial: tr, Task: resolvedShop()})
	tr.Status = first.Status
	w := &world{Now: t0.Add(time.Second), Trial: tr, Driver: &driverView{AttemptID: "uid-1-1", State: stateClaimed},
		PodsCreated: map[string]bool{evalv1.RoleRunner: true, evalv1.RoleDBService: true}, PodsSeen: map[string]bool{},
		HasNetworkPolicy: true}
	second := planTrial(w)
	if diff := cmp.Diff(first.Status, second.Status); diff != "" {
		t.Errorf("status changed on replan (-first +second):\n%s", diff)
	}
	if second.Claim != nil || len(second.CreatePod) != 0 || second.Submit || len(second.Events) != 0 || second.EnsureNP {
		t.Errorf("replan repeats effects: %+v", second)
	}
}

func TestPlanActiveAttempt(t *testing.T) {
	seenBoth := map[string]bool{evalv1.RoleRunner: true, evalv1.RoleDBService: true}
	for _, tc := range []struct {
		name string
		w    func() *world
		// check inspects the plan.
		check func(t *testing.T, p plan)
	}{
		{
			name: "pods ready and a claimed driver: submit with the pod IPs",
			w: func() *world {
				tr := running(1)
				return &world{Now: t0.Add(2 * time.Second), Trial: tr,
					Pods:        podsOf(readyPod(tr, 1, evalv1.RoleRunner, "10.0.0.1"), readyPod(tr, 1, evalv1.RoleDBService, "10.0.0.2")),
					Driver:      &driverView{AttemptID: "uid-1-1", State: stateClaimed},
					PodsCreated: seenBoth, PodsSeen: seenBoth}
			},
			check: func(t *testing.T, p plan) {
				if !p.Submit || p.RunnerIP != "10.0.0.1" || p.DBIP != "10.0.0.2" {
					t.Errorf("submit %v %q %q", p.Submit, p.RunnerIP, p.DBIP)
				}
				if c := cond(&p.Status, evalv1.TrialPodsReady); c.Status != metav1.ConditionTrue || c.Reason != evalv1.ReasonPodsReady {
					t.Errorf("PodsReady = %+v", c)
				}
				if p.Status.Phase != evalv1.PhaseStarting {
					t.Errorf("phase = %s", p.Status.Phase)
				}
			},
		},
		{
			name: "registered driver: Running",
			w: func() *world {
				tr := running(1)
				return &world{Now: t0.Add(3 * time.Second), Trial: tr,
					Pods:        podsOf(readyPod(tr, 1, evalv1.RoleRunner, "10.0.0.1"), readyPod(tr, 1, evalv1.RoleDBService, "10.0.0.2")),
					Driver:      &driverView{AttemptID: "uid-1-1", State: stateRunning, Registered: true},
					PodsCreated: seenBoth, PodsSeen: seenBoth}
			},
			check: func(t *testing.T, p plan) {
				if p.Submit {
					t.Error("resubmitted a running driver")
				}
				if p.Status.Phase != evalv1.PhaseRunning {
					t.Errorf("phase = %s", p.Status.Phase)
				}
				if c := cond(&p.Status, evalv1.TrialRegistered); c.Status != metav1.ConditionTrue || c.Reason != evalv1.ReasonRegistered {
					t.Errorf("Registered = %+v", c)
				}
				if c := cond(&p.Status, evalv1.TrialCompleted); c.Reason != evalv1.ReasonRunning {
					t.Errorf("Completed = %+v", c)
				}
			},
		},
		{
			name: "attempt not owned by this process: ManagerRestarted, backoff",
			w: func() *world {
				tr := running(1)
				return &world{Now: t0.Add(time.Minute), Trial: tr,
					Pods: podsOf(readyPod(tr, 1, evalv1.RoleRunner, "10.0.0.1"), readyPod(tr, 1, evalv1.RoleDBService, "10.0.0.2"))}
			},
			check: func(t *testing.T, p plan) {
				a := p.Status.Attempts[0]
				if a.Outcome != evalv1.OutcomeInfraFailed || a.Reason != evalv1.ReasonManagerRestarted || a.EndTime == nil || !a.EndTime.Time.Equal(t0.Add(time.Minute)) {
					t.Errorf("attempt = %+v", a)
				}
				if p.Status.Phase != evalv1.PhasePending {
					t.Errorf("phase = %s", p.Status.Phase)
				}
				c := cond(&p.Status, evalv1.TrialCompleted)
				if c.Reason != evalv1.ReasonBackoff || c.Message != "attempt 1 failed (ManagerRestarted): attempt 1 was started by a manager process that is gone; its driver did not survive the restart; attempt 2 starts at 2026-11-30T12:01:10Z" {
					t.Errorf("Completed = %+v", c)
				}
				if p.RequeueAfter != 10*time.Second {
					t.Errorf("requeue = %s, want the backoff", p.RequeueAfter)
				}
				if diff := cmp.Diff([]int32{1}, p.DeletePodsOf); diff != "" {
					t.Errorf("pods to delete (-want +got):\n%s", diff)
				}
				if p.Claim != nil {
					t.Error("started the next attempt before the backoff")
				}
				if p.Cancel != nil {
					t.Errorf("cancel = %v with no driver", p.Cancel)
				}
			},
		},
		{
			name: "runner killed while the driver runs: PodFailed, driver cancelled",
			w: func() *world {
				tr := running(1)
				return &world{Now: t0.Add(5 * time.Second), Trial: tr,
					Pods:        podsOf(killedPod(tr, 1, evalv1.RoleRunner), readyPod(tr, 1, evalv1.RoleDBService, "10.0.0.2")),
					Driver:      &driverView{AttemptID: "uid-1-1", State: stateRunning, Registered: true},
					PodsCreated: seenBoth, PodsSeen: seenBoth}
			},
			check: func(t *testing.T, p plan) {
				a := p.Status.Attempts[0]
				if a.Outcome != evalv1.OutcomeInfraFailed || a.Reason != evalv1.ReasonPodFailed ||
					a.Message != "pod t1-a1-runner container runner exited with code 137" {
					t.Errorf("attempt = %+v", a)
				}
				if p.Cancel != errAttemptAbandoned {
					t.Errorf("cancel = %v", p.Cancel)
				}
				if c := cond(&p.Status, evalv1.TrialPodsReady); c.Status != metav1.ConditionFalse || c.Reason != evalv1.ReasonPodFailed {
					t.Errorf("PodsReady = %+v", c)
				}
				if len(p.Events) != 1 || p.Events[0].Reason != evalv1.ReasonPodFailed || p.Events[0].Type != corev1.EventTypeWarning {
					t.Errorf("events = %+v", p.Events)
				}
			},
		},
		{
			name: "a seen pod vanished: PodLost",
			w: func() *world {
				tr := running(1)
				return &world{Now: t0.Add(5 * time.Second), Trial: tr,
					Pods:        podsOf(readyPod(tr, 1, evalv1.RoleDBService, "10.0.0.2")),
					Driver:      &driverView{AttemptID: "uid-1-1", State: stateQueued},
					PodsCreated: seenBoth, PodsSeen: seenBoth}
			},
			check: func(t *testing.T, p plan) {
				a := p.Status.Attempts[0]
				if a.Reason != evalv1.ReasonPodLost || a.Message != "pod t1-a1-runner disappeared" {
					t.Errorf("attempt = %+v", a)
				}
				if p.Cancel != errAttemptAbandoned {
					t.Errorf("a queued driver must be cancelled too: %v", p.Cancel)
				}
			},
		},
		{
			name: "a created pod not yet in the cache: wait, do not recreate",
			w: func() *world {
				tr := running(1)
				return &world{Now: t0.Add(time.Second), Trial: tr,
					Pods:        podsOf(pendingPod(tr, 1, evalv1.RoleDBService)),
					Driver:      &driverView{AttemptID: "uid-1-1", State: stateClaimed},
					PodsCreated: seenBoth, PodsSeen: map[string]bool{evalv1.RoleDBService: true}}
			},
			check: func(t *testing.T, p plan) {
				if len(p.CreatePod) != 0 || p.Status.Attempts[0].Outcome != evalv1.OutcomeRunning {
					t.Errorf("create %v, attempt %+v", p.CreatePod, p.Status.Attempts[0])
				}
				if c := cond(&p.Status, evalv1.TrialPodsReady); c.Reason != evalv1.ReasonPodsPending ||
					c.Message != "waiting for pods t1-a1-dbservice and t1-a1-runner of attempt 1" {
					t.Errorf("PodsReady = %+v", c)
				}
			},
		},
		{
			name: "a pod whose create failed earlier: create it again",
			w: func() *world {
				tr := running(1)
				return &world{Now: t0.Add(time.Second), Trial: tr,
					Pods:        podsOf(pendingPod(tr, 1, evalv1.RoleDBService)),
					Driver:      &driverView{AttemptID: "uid-1-1", State: stateClaimed},
					PodsCreated: map[string]bool{evalv1.RoleDBService: true}, PodsSeen: map[string]bool{evalv1.RoleDBService: true}}
			},
			check: func(t *testing.T, p plan) {
				if diff := cmp.Diff([]string{evalv1.RoleRunner}, p.CreatePod); diff != "" {
					t.Errorf("create (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "pods not ready in time: PodsNotReady",
			w: func() *world {
				tr := running(1)
				return &world{Now: t0.Add(defaultPodsReadyTimeout), Trial: tr,
					Pods:        podsOf(pendingPod(tr, 1, evalv1.RoleRunner), readyPod(tr, 1, evalv1.RoleDBService, "10.0.0.2")),
					Driver:      &driverView{AttemptID: "uid-1-1", State: stateClaimed},
					PodsCreated: seenBoth, PodsSeen: seenBoth}
			},
			check: func(t *testing.T, p plan) {
				a := p.Status.Attempts[0]
				if a.Reason != evalv1.ReasonPodsNotReady || a.Message != "pods of attempt 1 not ready after 5m0s: t1-a1-runner (Pending)" {
					t.Errorf("attempt = %+v", a)
				}
			},
		},
		{
			name: "third infra failure: InfraFailed, no fourth attempt",
			w: func() *world {
				tr := running(3,
					evalv1.AttemptStatus{Number: 1, ID: "uid-1-1", Outcome: evalv1.OutcomeInfraFailed, Reason: evalv1.ReasonPodFailed, EndTime: mt(-time.Minute)},
					evalv1.AttemptStatus{Number: 2, ID: "uid-1-2", Outcome: evalv1.OutcomeInfraFailed, Reason: evalv1.ReasonPodFailed, EndTime: mt(-time.Second)})
				return &world{Now: t0.Add(time.Second), Trial: tr,
					Driver: &driverView{AttemptID: "uid-1-3", State: stateDone, Result: &host.AttemptResult{
						Outcome: evalv1.OutcomeInfraFailed, Reason: evalv1.ReasonRunnerUnavailable, Message: "runner unreachable"}}}
			},
			check: func(t *testing.T, p plan) {
				if p.Status.Phase != evalv1.PhaseInfraFailed {
					t.Errorf("phase = %s", p.Status.Phase)
				}
				c := cond(&p.Status, evalv1.TrialCompleted)
				if c.Status != metav1.ConditionTrue || c.Reason != "InfraFailed" ||
					c.Message != "all 3 attempts failed on infrastructure; attempt 3: RunnerUnavailable: runner unreachable" {
					t.Errorf("Completed = %+v", c)
				}
				if f, s := cond(&p.Status, evalv1.TrialFailed), cond(&p.Status, evalv1.TrialSucceeded); f.Status != metav1.ConditionTrue || f.Reason != "InfraFailed" || s.Type != "" {
					t.Errorf("Failed = %+v, Succeeded = %+v", f, s)
				}
				if p.CompletedReason != "InfraFailed" || len(p.AttemptsEnded) != 1 || p.Claim != nil {
					t.Errorf("effects: completed %q ended %v claim %v", p.CompletedReason, p.AttemptsEnded, p.Claim != nil)
				}
				if len(p.Events) != 2 || p.Events[0].Reason != evalv1.ReasonRunnerUnavailable || p.Events[1].Reason != "InfraFailed" {
					t.Errorf("events = %+v", p.Events)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.check(t, planTrial(tc.w())) })
	}
}

// TestPlanRecordsTheGradeOnce: a graded result writes the grade with the
// attempt that earned it; a grade already in status is never replaced.
func TestPlanRecordsTheGradeOnce(t *testing.T) {
	grade := &runnerpb.Grade{BinaryPass: true, Score: 1, Reasons: "State: hash match",
		Components: &runnerpb.GradeComponents{StateChecks: 1, TranscriptRules: -1, LlmJudge: -1, CustomChecks: -1}}
	res := &host.AttemptResult{Outcome: evalv1.OutcomePassed, Reason: evalv1.ReasonPassed, Grade: grade, Turns: 2,
		TerminationReason: task.TerminationUserStop, ArtifactsPath: "/a/t1/attempt-2",
		AgentUsage: host.Usage{Calls: 2, PromptTokens: 100, CompletionTokens: 10, CostUSD: 0.5}}
	tr := running(2, evalv1.AttemptStatus{Number: 1, ID: "uid-1-1", Outcome: evalv1.OutcomeInfraFailed, Reason: evalv1.ReasonPodFailed, EndTime: mt(-time.Second)})
	tr.Status.Usage = &evalv1.Usage{Agent: evalv1.TokenUsage{Calls: 1, PromptTokens: 50, CostUSD: 0.25}, TotalTokens: 50, TotalCostUSD: 0.25}
	p := planTrial(&world{Now: t0.Add(time.Second), Trial: tr,
		Driver: &driverView{AttemptID: "uid-1-2", State: stateDone, Result: res}})
	st := p.Status
	want := &evalv1.GradeSummary{Score: 1, BinaryPass: true, Reasons: "State: hash match",
		Components: evalv1.GradeComponents{StateChecks: ptr.To(1.0)}, Attempt: 2}
	if diff := cmp.Diff(want, st.Grade); diff != "" {
		t.Errorf("grade (-want +got):\n%s", diff)
	}
	if st.Phase != evalv1.PhasePassed || st.Turns != 2 || st.TerminationReason != "user_stop" || st.ArtifactsPath != "/a/t1/attempt-2" {
		t.Errorf("status = %s turns %d term %q artifacts %q", st.Phase, st.Turns, st.TerminationReason, st.ArtifactsPath)
	}
	wantUsage := &evalv1.Usage{Agent: evalv1.TokenUsage{Calls: 3, PromptTokens: 150, CompletionTokens: 10, CostUSD: 0.75},
		TotalTokens: 160, TotalCostUSD: 0.75}
	if diff := cmp.Diff(wantUsage, st.Usage); diff != "" {
		t.Errorf("usage sums over attempts (-want +got):\n%s", diff)
	}
	if c := cond(&st, evalv1.TrialCompleted); c.Status != metav1.ConditionTrue || c.Reason != "Passed" ||
		c.Message != "attempt 2 graded: score 1, pass true: State: hash match" {
		t.Errorf("Completed = %+v", c)
	}
	if s, f := cond(&st, evalv1.TrialSucceeded), cond(&st, evalv1.TrialFailed); s.Status != metav1.ConditionTrue || s.Reason != "Passed" || f.Type != "" {
		t.Errorf("Succeeded = %+v, Failed = %+v", s, f)
	}
	if p.Release != "uid-1-2" || p.CompletedReason != "Passed" {
		t.Errorf("release %q completed %q", p.Release, p.CompletedReason)
	}

	// A stale status that already holds a grade keeps it.
	tr2 := running(2)
	tr2.Status.Grade = &evalv1.GradeSummary{Score: 0.5, Attempt: 1}
	p2 := planTrial(&world{Now: t0, Trial: tr2, Driver: &driverView{AttemptID: "uid-1-2", State: stateDone, Result: res}})
	if p2.Status.Grade.Attempt != 1 || p2.Status.Grade.Score != 0.5 {
		t.Errorf("grade replaced: %+v", p2.Status.Grade)
	}
}

func TestPlanWaitsForBackoffThenStartsTheNextAttempt(t *testing.T) {
	tr := testTrial()
	tr.Spec.RetryPolicy = evalv1.RetryPolicy{MaxAttempts: 3, Backoff: &metav1.Duration{Duration: 10 * time.Second}}
	tr.Status.Phase = evalv1.PhasePending
	tr.Status.Attempts = []evalv1.AttemptStatus{{Number: 1, ID: "uid-1-1", Outcome: evalv1.OutcomeInfraFailed,
		Reason: evalv1.ReasonPodFailed, Message: "boom", EndTime: mt(0)}}
	tr.Status.StartTime = mt(-time.Minute)

	early := planTrial(&world{Now: t0.Add(4 * time.Second), Trial: tr, Task: resolvedShop()})
	if early.Claim != nil || len(early.Status.Attempts) != 1 || early.RequeueAfter != 6*time.Second {
		t.Errorf("before backoff: claim %v attempts %d requeue %s", early.Claim != nil, len(early.Status.Attempts), early.RequeueAfter)
	}
	if c := cond(&early.Status, evalv1.TrialCompleted); c.Reason != evalv1.ReasonBackoff ||
		!strings.HasSuffix(c.Message, "attempt 2 starts at 2026-11-30T12:00:10Z") {
		t.Errorf("Completed = %+v", c)
	}

	late := planTrial(&world{Now: t0.Add(10 * time.Second), Trial: tr, Task: resolvedShop(), HasNetworkPolicy: true})
	if late.Claim == nil || late.ClaimID != "uid-1-2" || late.EnsureNP || late.TrialStarted {
		t.Errorf("after backoff: claim %q np %v started %v", late.ClaimID, late.EnsureNP, late.TrialStarted)
	}
	if n := len(late.Status.Attempts); n != 2 || late.Status.Attempts[1].Number != 2 {
		t.Errorf("attempts = %+v", late.Status.Attempts)
	}
	if !late.Status.StartTime.Time.Equal(t0.Add(-time.Minute)) {
		t.Errorf("trial start time moved: %v", late.Status.StartTime)
	}
}

func TestPlanTaskProblems(t *testing.T) {
	for _, tc := range []struct {
		name       string
		err        *taskError
		wantPhase  evalv1.TrialPhase
		wantStatus metav1.ConditionStatus
		wantReason string
	}{
		{"missing task waits", &taskError{Reason: evalv1.ReasonTaskNotFound, Transient: true, Err: errString("task ns/shop not found")},
			evalv1.PhasePending, metav1.ConditionFalse, evalv1.ReasonTaskNotFound},
		{"unreadable configmap waits", &taskError{Reason: evalv1.ReasonInitialStateUnavailable, Transient: true, Err: errString("configMap not found")},
			evalv1.PhasePending, metav1.ConditionFalse, evalv1.ReasonInitialStateUnavailable},
		{"invalid description is final", &taskError{Reason: evalv1.ReasonInvalidDescription, Err: errString("spec.task.bogus: unknown key")},
			evalv1.PhaseInvalid, metav1.ConditionTrue, "Invalid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := planTrial(&world{Now: t0, Trial: testTrial(), TaskErr: tc.err})
			c := cond(&p.Status, evalv1.TrialCompleted)
			if p.Status.Phase != tc.wantPhase || c.Status != tc.wantStatus || c.Reason != tc.wantReason || c.Message != tc.err.Error() {
				t.Errorf("phase %s, Completed %+v", p.Status.Phase, c)
			}
			if p.Claim != nil || len(p.CreatePod) != 0 || len(p.Status.Attempts) != 0 {
				t.Error("an attempt started without a task")
			}
		})
	}
}

func TestPlanProviderKeyProblems(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		err                   *keyError
		wantPhase             evalv1.TrialPhase
		wantCompleted, wantFR string // Completed reason; Failed reason ("" = no Failed condition)
	}{
		{"missing Secret waits", &keyError{Reason: evalv1.ReasonAPIKeyUnavailable, Transient: true, Err: errString(`read secret ns/k: not found`)},
			evalv1.PhasePending, evalv1.ReasonAPIKeyUnavailable, ""},
		{"Secret not opted in is final", &keyError{Reason: evalv1.ReasonSecretNotAllowed, Err: errString("secret ns/k may not be sent to https://x/v1")},
			evalv1.PhaseInvalid, "Invalid", evalv1.ReasonSecretNotAllowed},
		{"namespace not granted is final", &keyError{Reason: evalv1.ReasonNamespaceNotGranted, Err: errString("the manager may not read Secrets in namespace ns")},
			evalv1.PhaseInvalid, "Invalid", evalv1.ReasonNamespaceNotGranted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := planTrial(&world{Now: t0, Trial: testTrial(), Task: resolvedShop(), KeyErr: tc.err})
			c := cond(&p.Status, evalv1.TrialCompleted)
			if p.Status.Phase != tc.wantPhase || c.Reason != tc.wantCompleted || c.Message != tc.err.Error() {
				t.Errorf("phase %s, Completed %+v", p.Status.Phase, c)
			}
			f := cond(&p.Status, evalv1.TrialFailed)
			if tc.wantFR == "" && f.Status == metav1.ConditionTrue {
				t.Errorf("Failed = %+v while waiting", f)
			}
			if tc.wantFR != "" && (f.Status != metav1.ConditionTrue || f.Reason != tc.wantFR || f.Message != tc.err.Error()) {
				t.Errorf("Failed = %+v, want reason %s", f, tc.wantFR)
			}
			if p.Claim != nil || len(p.CreatePod) != 0 || p.EnsureNP || len(p.Status.Attempts) != 0 {
				t.Error("an attempt started with an unusable provider key")
			}
		})
	}
}

func TestPlanCollectsPods(t *testing.T) {
	tr := testTrial()
	// The Trial's ttl is about the Trial, not its pods: ended attempts'
	// pods go at once.
	tr.Spec.TTLSecondsAfterFinished = ptr.To[int32](60)
	tr.Status.Phase = evalv1.PhasePassed
	tr.Status.Attempts = []evalv1.AttemptStatus{
		{Number: 1, Outcome: evalv1.OutcomeInfraFailed, EndTime: mt(-90 * time.Second)}, // already deleting
		{Number: 2, Outcome: evalv1.OutcomeInfraFailed, EndTime: mt(-30 * time.Second)},
		{Number: 3, Outcome: evalv1.OutcomePassed, EndTime: mt(0)},
	}
	now := metav1.NewTime(t0)
	deleting := readyPod(tr, 1, evalv1.RoleDBService, "x")
	deleting.DeletionTimestamp = &now
	stray := readyPod(tr, 9, evalv1.RoleRunner, "x")
	stray.OwnerReferences[0].UID = "old"
	w := &world{Now: t0, Trial: tr, Strays: []*corev1.Pod{stray},
		Pods: podsOf(readyPod(tr, 1, evalv1.RoleRunner, "x"), deleting,
			readyPod(tr, 2, evalv1.RoleRunner, "x"), readyPod(tr, 3, evalv1.RoleRunner, "x"), readyPod(tr, 4, evalv1.RoleRunner, "x"))}
	p := planTrial(w)
	if diff := cmp.Diff([]int32{1, 2, 3}, p.DeletePodsOf); diff != "" {
		t.Errorf("delete (-want +got):\n%s", diff)
	}
	if p.RequeueAfter != 0 {
		t.Errorf("requeue = %s, want none", p.RequeueAfter)
	}
	if len(p.DeleteStrays) != 1 || p.DeleteStrays[0] != stray {
		t.Errorf("strays = %v", p.DeleteStrays)
	}
	if diff := cmp.Diff(tr.Status, p.Status, cmp.FilterPath(func(pa cmp.Path) bool {
		return pa.String() == "ObservedGeneration" || pa.String() == "Agent" || pa.String() == "AttemptCount"
	}, cmp.Ignore())); diff != "" {
		t.Errorf("a terminal trial's status changed (-before +after):\n%s", diff)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

func TestPlanKeepsPodsWhenAsked(t *testing.T) {
	tr := testTrial()
	tr.Spec.KeepPodsAfterFinished = true
	tr.Status.Phase = evalv1.PhaseFailed
	tr.Status.Attempts = []evalv1.AttemptStatus{
		{Number: 1, Outcome: evalv1.OutcomeInfraFailed, EndTime: mt(-time.Hour)},
		{Number: 2, Outcome: evalv1.OutcomeFailed, EndTime: mt(0)},
	}
	p := planTrial(&world{Now: t0, Trial: tr, Pods: podsOf(readyPod(tr, 1, evalv1.RoleRunner, "x"), readyPod(tr, 2, evalv1.RoleDBService, "x"))})
	if len(p.DeletePodsOf) != 0 || p.RequeueAfter != 0 {
		t.Errorf("keepPodsAfterFinished: delete %v, requeue %s; want the pods kept", p.DeletePodsOf, p.RequeueAfter)
	}
}

func TestPlanFailsFastOnAMissingReference(t *testing.T) {
	secret := &refs.MissingRef{Reason: evalv1.ReasonSecretNotFound, Kind: "Secret", Namespace: "ns", Name: "openai", Field: "spec.agent.apiKeySecretRef"}
	noKey := &refs.MissingRef{Reason: evalv1.ReasonSecretNotFound, Kind: "Secret", Namespace: "ns", Name: "openai", Key: "token", Field: "spec.judge.apiKeySecretRef"}
	task := &refs.MissingRef{Reason: evalv1.ReasonTaskNotFound, Kind: "Task", Namespace: "ns", Name: "shop", Field: "spec.taskRef"}
	cm := &refs.MissingRef{Reason: evalv1.ReasonConfigMapNotFound, Kind: "ConfigMap", Namespace: "ns", Name: "state", Field: "spec.initialStateFrom.configMapKeyRef"}
	cases := []struct {
		name    string
		w       world
		reason  string
		message string
	}{
		{"secret", world{Task: &resolvedTask{}, Missing: secret}, evalv1.ReasonSecretNotFound,
			"Secret ns/openai not found (spec.agent.apiKeySecretRef)"},
		{"secret key", world{Task: &resolvedTask{}, Missing: noKey}, evalv1.ReasonSecretNotFound,
			`Secret ns/openai has no key "token" (spec.judge.apiKeySecretRef)`},
		{"task", world{TaskErr: &taskError{Reason: evalv1.ReasonTaskNotFound, Transient: true, Err: errString("task ns/shop not found"), Missing: task}},
			evalv1.ReasonTaskNotFound, "Task ns/shop not found (spec.taskRef)"},
		{"configmap", world{TaskErr: &taskError{Reason: evalv1.ReasonInitialStateUnavailable, Transient: true, Err: errString("x"), Missing: cm}},
			evalv1.ReasonConfigMapNotFound, "ConfigMap ns/state not found (spec.initialStateFrom.configMapKeyRef)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := testTrial()
			// A later attempt is refused the same way, and its budget is not
			// touched.
			tr.Status.Attempts = []evalv1.AttemptStatus{{Number: 1, Outcome: evalv1.OutcomeInfraFailed, EndTime: mt(-time.Hour)}}
			w := tc.w
			w.Now, w.Trial = t0, tr
			p := planTrial(&w)
			if p.Claim != nil || len(p.CreatePod) != 0 || p.EnsureNP || len(p.Status.Attempts) != 1 {
				t.Fatalf("an attempt started: claim %v pods %v attempts %d", p.Claim, p.CreatePod, len(p.Status.Attempts))
			}
			if p.Status.Phase != evalv1.PhaseInvalid || p.Status.CompletionTime == nil {
				t.Errorf("phase %s, completion %v; want Invalid, completed", p.Status.Phase, p.Status.CompletionTime)
			}
			rr := cond(&p.Status, evalv1.TrialReferencesResolved)
			if rr.Status != metav1.ConditionFalse || rr.Reason != tc.reason || rr.Message != tc.message {
				t.Errorf("ReferencesResolved = %+v", rr)
			}
			if f := cond(&p.Status, evalv1.TrialFailed); f.Status != metav1.ConditionTrue || f.Reason != string(evalv1.PhaseInvalid) || f.Message != tc.message {
				t.Errorf("Failed = %+v", f)
			}
			if len(p.Events) != 2 || p.Events[0].Reason != tc.reason || p.Events[0].Type != corev1.EventTypeWarning ||
				p.Events[0].Message != tc.message+"; no pods are created and the trial ends as Invalid" {
				t.Errorf("events = %+v", p.Events)
			}
		})
	}
}

// A DB service fault the host reported ends the attempt ungraded and, after
// the backoff, a new attempt starts with new pods: the budget allows it.
func TestPlanRetriesADBServiceFault(t *testing.T) {
	tr := running(1)
	msg := `execute tool "db_insert" (call w) of trial "t1:0": DB service unavailable (Unavailable): no answer within 1s`
	p := planTrial(&world{Now: t0.Add(time.Second), Trial: tr, Driver: &driverView{AttemptID: "uid-1-1", State: stateDone,
		Result: &host.AttemptResult{Outcome: evalv1.OutcomeInfraFailed, Reason: evalv1.ReasonDBServiceUnavailable, Message: msg}}})
	a := p.Status.Attempts[0]
	if a.Outcome != evalv1.OutcomeInfraFailed || a.Reason != evalv1.ReasonDBServiceUnavailable || a.Message != msg || p.Status.Grade != nil {
		t.Fatalf("attempt 1 = %+v, grade %v", a, p.Status.Grade)
	}
	if c := cond(&p.Status, evalv1.TrialCompleted); c.Status != metav1.ConditionFalse || c.Reason != evalv1.ReasonBackoff || p.Claim != nil {
		t.Fatalf("Completed = %+v, claim %v", c, p.Claim != nil)
	}
	tr.Status = p.Status
	p = planTrial(&world{Now: t0.Add(time.Minute), Trial: tr, Task: &resolvedTask{Desc: &task.TaskDescription{TaskID: "shop"}}})
	if p.Claim == nil || p.Claim.Number != 2 || len(p.CreatePod) != 2 || len(p.Status.Attempts) != 2 {
		t.Fatalf("no second attempt: claim %v pods %v attempts %d", p.Claim, p.CreatePod, len(p.Status.Attempts))
	}
}

// A task that simulates its user with an LLM, run by a Trial that names no user,
// ends Invalid before any pod: it would otherwise run silently against a scripted
// user. A Trial that asks for the scripted user, an LLM user, or an oracle agent runs.
func TestPlanRefusesAnLLMUserTaskWithoutAUser(t *testing.T) {
	llmTask := func() *resolvedTask {
		return &resolvedTask{Desc: &task.TaskDescription{TaskID: "shop_orders_02",
			UserSimulator: &task.UserSimulatorConfig{Mode: task.UserSimLLM}}}
	}
	const msg = "spec.userSimulator: task shop_orders_02 simulates its user with an LLM (user_simulator.mode llm), but the Trial names no user model; " +
		"set spec.userSimulator {mode: llm, model: {...}} to simulate the user, or spec.userSimulator {mode: scripted} to run the task with a scripted user on purpose"
	llmAgent := evalv1.ModelSpec{Provider: evalv1.ProviderOpenAI, Model: "m"}
	for _, tc := range []struct {
		name    string
		edit    func(tr *evalv1.Trial)
		task    *resolvedTask
		refused bool
	}{
		{name: "llm agent, no user", edit: func(tr *evalv1.Trial) { tr.Spec.Agent = llmAgent }, task: llmTask(), refused: true},
		{name: "llm agent, scripted user on purpose", edit: func(tr *evalv1.Trial) {
			tr.Spec.Agent = llmAgent
			tr.Spec.UserSimulator = &evalv1.UserSimulatorSpec{Mode: evalv1.UserSimulatorScripted}
		}, task: llmTask()},
		{name: "llm agent, llm user", edit: func(tr *evalv1.Trial) {
			tr.Spec.Agent = llmAgent
			tr.Spec.UserSimulator = &evalv1.UserSimulatorSpec{Mode: evalv1.UserSimulatorLLM, Model: &llmAgent}
		}, task: llmTask()},
		{name: "oracle agent, no user", edit: func(*evalv1.Trial) {}, task: llmTask()},
		{name: "a task with a scripted user", edit: func(tr *evalv1.Trial) { tr.Spec.Agent = llmAgent },
			task: &resolvedTask{Desc: &task.TaskDescription{TaskID: "t", UserSimulator: &task.UserSimulatorConfig{Mode: task.UserSimScripted}}}},
		{name: "a task with no user simulator", edit: func(tr *evalv1.Trial) { tr.Spec.Agent = llmAgent }, task: resolvedShop()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := testTrial()
			tc.edit(tr)
			p := planTrial(&world{Now: t0, Trial: tr, Task: tc.task})
			if !tc.refused {
				if p.Status.Phase != evalv1.PhaseStarting || p.Claim == nil {
					t.Fatalf("phase %s, claim %v: want the attempt started", p.Status.Phase, p.Claim != nil)
				}
				return
			}
			if p.Status.Phase != evalv1.PhaseInvalid || p.Status.CompletionTime == nil {
				t.Fatalf("phase %s: want Invalid and completed", p.Status.Phase)
			}
			if c := cond(&p.Status, evalv1.TrialCompleted); c.Status != metav1.ConditionTrue || c.Message != msg {
				t.Errorf("Completed = %+v", c)
			}
			if f := cond(&p.Status, evalv1.TrialFailed); f.Status != metav1.ConditionTrue || f.Reason != evalv1.ReasonInvalidConfig || f.Message != msg {
				t.Errorf("Failed = %+v", f)
			}
			if p.Claim != nil || len(p.CreatePod) != 0 || p.EnsureNP || len(p.Status.Attempts) != 0 {
				t.Error("an attempt started for a trial with no user")
			}
		})
	}
}
