package controllers

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// Only a plan whose sole change is PodsReady turning True while it hands the
// attempt to its driver skips its status write; anything else is written.
func TestPodsReadyOnlyDefersJustThatWrite(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC))
	starting := evalv1.TrialStatus{Phase: evalv1.PhaseStarting}
	meta.SetStatusCondition(&starting.Conditions, metav1.Condition{Type: evalv1.TrialPodsReady, Status: metav1.ConditionFalse, Reason: evalv1.ReasonPodsPending, Message: "pending", LastTransitionTime: at})
	meta.SetStatusCondition(&starting.Conditions, metav1.Condition{Type: evalv1.TrialRegistered, Status: metav1.ConditionFalse, Reason: evalv1.ReasonNotRegistered, Message: "not yet", LastTransitionTime: at})
	ready := func(edit func(*evalv1.TrialStatus)) *evalv1.TrialStatus {
		s := starting.DeepCopy()
		meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: evalv1.TrialPodsReady, Status: metav1.ConditionTrue, Reason: evalv1.ReasonPodsReady, Message: "ready", LastTransitionTime: at})
		if edit != nil {
			edit(s)
		}
		return s
	}
	cases := []struct {
		name    string
		desired *evalv1.TrialStatus
		submit  bool
		want    bool
	}{
		{"pods ready, attempt handed to its driver", ready(nil), true, true},
		{"pods ready, nothing submitted", ready(nil), false, false},
		{"pods ready and registered", ready(func(s *evalv1.TrialStatus) {
			s.Phase = evalv1.PhaseRunning
			meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: evalv1.TrialRegistered, Status: metav1.ConditionTrue, Reason: evalv1.ReasonRegistered, Message: "registered", LastTransitionTime: at})
		}), true, false},
		{"another field changed too", ready(func(s *evalv1.TrialStatus) { s.TaskID = "shop" }), true, false},
		{"PodsReady still False", starting.DeepCopy(), true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := podsReadyOnly(&starting, tc.desired, &plan{Submit: tc.submit}); got != tc.want {
				t.Errorf("podsReadyOnly = %v, want %v", got, tc.want)
			}
		})
	}
}
