package controllers

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// The Trial says how its runner confined the pack's code: an unconfined run
// is a condition in the cluster, never only a line in the runner's log.
func TestPlanConfinedCondition(t *testing.T) {
	seenBoth := map[string]bool{evalv1.RoleRunner: true, evalv1.RoleDBService: true}
	for _, tc := range []struct {
		name       string
		c          runnerReport
		wantStatus metav1.ConditionStatus // "" = no condition
		wantReason string
		wantMsg    string
	}{
		{name: "landlock", c: runnerReport{reported: true, landlockABI: 7},
			wantStatus: metav1.ConditionTrue, wantReason: evalv1.ReasonLandlock, wantMsg: "run under Landlock ABI 7"},
		{name: "kernel without landlock", c: runnerReport{reported: true},
			wantStatus: metav1.ConditionFalse, wantReason: evalv1.ReasonLandlockUnavailable, wantMsg: "kernel has no Landlock"},
		{name: "a runner that reports nothing", c: runnerReport{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := running(1)
			p := planTrial(&world{Now: t0.Add(3 * time.Second), Trial: tr, Task: resolvedShop(),
				Pods:        podsOf(readyPod(tr, 1, evalv1.RoleRunner, "10.0.0.1"), readyPod(tr, 1, evalv1.RoleDBService, "10.0.0.2")),
				Driver:      &driverView{AttemptID: "uid-1-1", State: stateRunning, Registered: true, Report: tc.c},
				PodsCreated: seenBoth, PodsSeen: seenBoth})
			c := cond(&p.Status, evalv1.TrialConfined)
			if c.Status != tc.wantStatus || c.Reason != tc.wantReason || !strings.Contains(c.Message, tc.wantMsg) {
				t.Fatalf("Confined = %+v; want status %q reason %q message containing %q", c, tc.wantStatus, tc.wantReason, tc.wantMsg)
			}
		})
	}
}

// The attempt's trace id reaches the status once its runner accepted it, so a
// slow Trial leads to its trace while it still runs.
func TestPlanRecordsTheAttemptsTrace(t *testing.T) {
	seenBoth := map[string]bool{evalv1.RoleRunner: true, evalv1.RoleDBService: true}
	const id = "4bf92f3577b34da6a3ce929d0e0e4736"
	for _, tc := range []struct {
		name string
		d    driverView
		want string
	}{
		{"registered with a trace", driverView{AttemptID: "uid-1-1", State: stateRunning, Registered: true, Report: runnerReport{traceID: id}}, id},
		{"registered, untraced", driverView{AttemptID: "uid-1-1", State: stateRunning, Registered: true}, ""},
		{"not registered yet", driverView{AttemptID: "uid-1-1", State: stateRunning, Report: runnerReport{traceID: id}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := running(1)
			d := tc.d
			p := planTrial(&world{Now: t0.Add(3 * time.Second), Trial: tr, Task: resolvedShop(),
				Pods:   podsOf(readyPod(tr, 1, evalv1.RoleRunner, "10.0.0.1"), readyPod(tr, 1, evalv1.RoleDBService, "10.0.0.2")),
				Driver: &d, PodsCreated: seenBoth, PodsSeen: seenBoth})
			if got := p.Status.Attempts[0].TraceID; got != tc.want {
				t.Fatalf("attempts[0].traceID = %q, want %q", got, tc.want)
			}
		})
	}
}
