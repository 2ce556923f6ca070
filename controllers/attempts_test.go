package controllers

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tolokaforge.io/operator/api/runnerpb"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/host"
)

// TestResultActionTable pins the failure taxonomy: which host outcomes end a
// trial, with which phase, and which leave it to the retry policy.
func TestResultActionTable(t *testing.T) {
	pass := &runnerpb.Grade{BinaryPass: true, Score: 1}
	fail := &runnerpb.Grade{BinaryPass: false, Score: 0.3}
	for _, tc := range []struct {
		name string
		res  host.AttemptResult
		want verdict
	}{
		{"graded pass", host.AttemptResult{Outcome: evalv1.OutcomePassed, Reason: evalv1.ReasonPassed, Message: "ok", Grade: pass},
			verdict{Outcome: evalv1.OutcomePassed, Reason: "Passed", Message: "ok", Final: true, Phase: evalv1.PhasePassed, Grade: true}},
		{"graded fail", host.AttemptResult{Outcome: evalv1.OutcomePassed, Grade: fail},
			verdict{Outcome: evalv1.OutcomeFailed, Reason: "Failed", Message: "score 0.3", Final: true, Phase: evalv1.PhaseFailed, Grade: true}},
		{"self-graded stuck", host.AttemptResult{Outcome: evalv1.OutcomeFailed, Reason: evalv1.ReasonStuckDetected, Message: "repeated", Grade: &runnerpb.Grade{}},
			verdict{Outcome: evalv1.OutcomeFailed, Reason: evalv1.ReasonStuckDetected, Message: "repeated", Final: true, Phase: evalv1.PhaseFailed, Grade: true}},
		{"graded without grade", host.AttemptResult{Outcome: evalv1.OutcomePassed},
			verdict{Outcome: evalv1.OutcomeGradingFailed, Reason: "GradingFailed", Message: "the attempt ended without a grade", Final: true, Phase: evalv1.PhaseGradingFailed}},
		{"grading failed", host.AttemptResult{Outcome: evalv1.OutcomeGradingFailed, Reason: evalv1.ReasonGradingFailed, Message: "Hash grading failed: x"},
			verdict{Outcome: evalv1.OutcomeGradingFailed, Reason: "GradingFailed", Message: "Hash grading failed: x", Final: true, Phase: evalv1.PhaseGradingFailed}},
		{"invalid", host.AttemptResult{Outcome: evalv1.OutcomeInvalid, Reason: evalv1.ReasonInvalidTask, Message: "tool x: tau_sync"},
			verdict{Outcome: evalv1.OutcomeInvalid, Reason: evalv1.ReasonInvalidTask, Message: "tool x: tau_sync", Final: true, Phase: evalv1.PhaseInvalid}},
		{"skew", host.AttemptResult{Outcome: evalv1.OutcomeProtocolSkew, Reason: evalv1.ReasonProtocolSkew, Message: "engine_protocol_version 2 < 3"},
			verdict{Outcome: evalv1.OutcomeProtocolSkew, Reason: "ProtocolSkew", Message: "engine_protocol_version 2 < 3", Final: true, Phase: evalv1.PhaseProtocolSkew}},
		{"infra", host.AttemptResult{Outcome: evalv1.OutcomeInfraFailed, Reason: evalv1.ReasonTrialLost, Message: "gone"},
			verdict{Outcome: evalv1.OutcomeInfraFailed, Reason: evalv1.ReasonTrialLost, Message: "gone"}},
		{"unknown outcome ends the trial", host.AttemptResult{Outcome: "Exploded", Reason: "X", Message: "m"},
			verdict{Outcome: evalv1.OutcomeInfraFailed, Reason: "InfraFailed", Message: `driver reported unknown outcome "Exploded" (X): m`, Final: true, Phase: evalv1.PhaseInfraFailed}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := verdictFor(&tc.res); got != tc.want {
				t.Errorf("verdict = %+v\nwant      %+v", got, tc.want)
			}
		})
	}
	// Every outcome the host defines has an entry.
	for _, o := range []evalv1.AttemptOutcome{evalv1.OutcomePassed, evalv1.OutcomeFailed, evalv1.OutcomeGradingFailed,
		evalv1.OutcomeInvalid, evalv1.OutcomeProtocolSkew, evalv1.OutcomeInfraFailed} {
		if _, ok := resultActions[o]; !ok {
			t.Errorf("no action for %s", o)
		}
	}
}

func TestBackoffDoublesAndCaps(t *testing.T) {
	tr := testTrial()
	tr.Spec.RetryPolicy.Backoff = &metav1.Duration{Duration: 3 * time.Second}
	for failed, want := range map[int]time.Duration{1: 3 * time.Second, 2: 6 * time.Second, 3: 12 * time.Second, 30: maxBackoff} {
		if got := backoffAfter(tr, failed); got != want {
			t.Errorf("backoffAfter(%d) = %s, want %s", failed, got, want)
		}
	}
	tr.Spec.RetryPolicy.Backoff = nil
	if got := backoffAfter(tr, 1); got != defaultBackoff {
		t.Errorf("default backoff = %s", got)
	}
	tr.Spec.RetryPolicy.Backoff = &metav1.Duration{}
	if got := backoffAfter(tr, 5); got != 0 {
		t.Errorf("zero backoff = %s", got)
	}
	if got := maxAttempts(tr); got != defaultMaxAttempts {
		t.Errorf("default max attempts = %d", got)
	}
}

func TestDeleteTrialAt(t *testing.T) {
	done := func(ttl *int32, phase evalv1.TrialPhase, owner string) *evalv1.Trial {
		tr := testTrial()
		tr.Spec.TTLSecondsAfterFinished = ttl
		tr.Status.Phase = phase
		if phase != evalv1.PhaseRunning {
			tr.Status.CompletionTime = mt(0)
		}
		if owner != "" {
			tr.OwnerReferences = []metav1.OwnerReference{{APIVersion: evalv1.GroupVersion.String(), Kind: owner, Name: "c", UID: "c", Controller: ptr.To(true)}}
		}
		return tr
	}
	cases := []struct {
		name string
		tr   *evalv1.Trial
		want time.Time
	}{
		{"no ttl: kept", done(nil, evalv1.PhaseFailed, ""), time.Time{}},
		{"ttl after a pass", done(ptr.To[int32](30), evalv1.PhasePassed, ""), t0.Add(30 * time.Second)},
		{"ttl after a failure", done(ptr.To[int32](30), evalv1.PhaseInfraFailed, ""), t0.Add(30 * time.Second)},
		{"ttl 0: at once", done(ptr.To[int32](0), evalv1.PhaseInvalid, ""), t0},
		{"still running", done(ptr.To[int32](30), evalv1.PhaseRunning, ""), time.Time{}},
		{"a campaign's trial: the campaign's ttl decides", done(ptr.To[int32](30), evalv1.PhasePassed, "Campaign"), time.Time{}},
	}
	for _, tc := range cases {
		if got := deleteTrialAt(tc.tr); !got.Equal(tc.want) {
			t.Errorf("%s: delete at %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestAttemptIDIsUniquePerAttempt(t *testing.T) {
	a := testTrial()
	b := testTrial()
	b.UID = "uid-2"
	ids := map[string]bool{AttemptID(a, 1): true, AttemptID(a, 2): true, AttemptID(b, 1): true}
	if len(ids) != 3 {
		t.Errorf("ids collide: %v", ids)
	}
	if got := AttemptID(a, 2); got != "uid-1-2" {
		t.Errorf("AttemptID = %q", got)
	}
}
