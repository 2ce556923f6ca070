package controllers

import (
	"fmt"
	"time"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/host"
)

// Retry policy defaults (RetryPolicy's zero values).
const (
	defaultMaxAttempts = 3
	defaultBackoff     = 10 * time.Second
	// maxBackoff caps the doubling.
	maxBackoff = 10 * time.Minute
	// defaultPodsReadyTimeout bounds how long an attempt waits for its pods.
	defaultPodsReadyTimeout = 5 * time.Minute
)

// AttemptID is the opaque, unique attempt_id of attempt n: the trial's UID
// never repeats, and one trial numbers its attempts once each.
func AttemptID(t *evalv1.Trial, n int32) string {
	return fmt.Sprintf("%s-%d", t.UID, n)
}

// maxAttempts is the policy's limit with its default.
func maxAttempts(t *evalv1.Trial) int32 {
	if n := t.Spec.RetryPolicy.MaxAttempts; n > 0 {
		return n
	}
	return defaultMaxAttempts
}

// backoffAfter is the wait after the failed-th infrastructure failure:
// the policy's backoff doubled per failure, capped at MaxBackoff.
func backoffAfter(t *evalv1.Trial, failed int) time.Duration {
	b := defaultBackoff
	if p := t.Spec.RetryPolicy.Backoff; p != nil {
		b = p.Duration
	}
	if b <= 0 {
		return 0
	}
	for i := 1; i < failed; i++ {
		b *= 2
		if b >= maxBackoff {
			return maxBackoff
		}
	}
	return min(b, maxBackoff)
}

func podsReadyTimeout(t *evalv1.Trial) time.Duration {
	if d := t.Spec.Timeouts.PodsReady; d != nil && d.Duration > 0 {
		return d.Duration
	}
	return defaultPodsReadyTimeout
}

// verdict is how an ended attempt counts for its trial.
type verdict struct {
	Outcome evalv1.AttemptOutcome
	Reason  string
	Message string
	// Final ends the trial with Phase; otherwise the retry policy decides.
	Final bool
	Phase evalv1.TrialPhase
	// Grade: the attempt earned the trial's grade.
	Grade bool
}

// resultAction maps a driver's result to a verdict.
type resultAction func(r *host.AttemptResult) verdict

// resultActions is the failure taxonomy in one table: every host outcome has
// exactly one function, and only infrastructure faults leave the trial open.
var resultActions = map[evalv1.AttemptOutcome]resultAction{
	evalv1.OutcomePassed:        gradedVerdict,
	evalv1.OutcomeFailed:        gradedVerdict,
	evalv1.OutcomeGradingFailed: finalVerdict(evalv1.OutcomeGradingFailed, evalv1.PhaseGradingFailed),
	evalv1.OutcomeInvalid:       finalVerdict(evalv1.OutcomeInvalid, evalv1.PhaseInvalid),
	evalv1.OutcomeProtocolSkew:  finalVerdict(evalv1.OutcomeProtocolSkew, evalv1.PhaseProtocolSkew),
	evalv1.OutcomeInfraFailed:   infraVerdict,
}

// verdictFor applies the table. An outcome the table does not know is a
// programming error between host and controller; it ends the trial rather
// than retrying forever.
func verdictFor(r *host.AttemptResult) verdict {
	if act, ok := resultActions[r.Outcome]; ok {
		return act(r)
	}
	return verdict{
		Outcome: evalv1.OutcomeInfraFailed, Reason: string(evalv1.PhaseInfraFailed), Final: true, Phase: evalv1.PhaseInfraFailed,
		Message: fmt.Sprintf("driver reported unknown outcome %q (%s): %s", r.Outcome, r.Reason, r.Message),
	}
}

// gradedVerdict: the agent's outcome is final, pass or fail by the grade.
func gradedVerdict(r *host.AttemptResult) verdict {
	if r.Grade == nil {
		return verdict{Outcome: evalv1.OutcomeGradingFailed, Reason: string(evalv1.PhaseGradingFailed), Final: true,
			Phase: evalv1.PhaseGradingFailed, Message: nonEmpty(r.Message, "the attempt ended without a grade")}
	}
	v := verdict{Final: true, Grade: true, Reason: r.Reason, Message: r.Message}
	if r.Grade.GetBinaryPass() {
		v.Outcome, v.Phase = evalv1.OutcomePassed, evalv1.PhasePassed
	} else {
		v.Outcome, v.Phase = evalv1.OutcomeFailed, evalv1.PhaseFailed
	}
	if v.Reason == "" {
		v.Reason = string(v.Phase)
	}
	if v.Message == "" {
		v.Message = fmt.Sprintf("score %g", r.Grade.GetScore())
	}
	return v
}

func finalVerdict(o evalv1.AttemptOutcome, phase evalv1.TrialPhase) resultAction {
	return func(r *host.AttemptResult) verdict {
		return verdict{Outcome: o, Reason: nonEmpty(r.Reason, string(phase)), Message: r.Message, Final: true, Phase: phase}
	}
}

func infraVerdict(r *host.AttemptResult) verdict {
	return verdict{Outcome: evalv1.OutcomeInfraFailed, Reason: nonEmpty(r.Reason, string(evalv1.PhaseInfraFailed)), Message: r.Message}
}

// controllerVerdict is an infrastructure fault the controller saw itself
// (pods, restarts, timeouts).
func controllerVerdict(reason, message string) verdict {
	return verdict{Outcome: evalv1.OutcomeInfraFailed, Reason: reason, Message: message}
}

func nonEmpty(s, fallback string) string {
	if s != "" {
		return s
	}
	return fallback
}

// activeAttempt is the attempt still Running, if any. Only the last attempt
// can be: a new one starts only after the previous one ended.
func activeAttempt(st *evalv1.TrialStatus) *evalv1.AttemptStatus {
	if n := len(st.Attempts); n > 0 && st.Attempts[n-1].Outcome == evalv1.OutcomeRunning {
		return &st.Attempts[n-1]
	}
	return nil
}

// infraFailures counts attempts that ended in an infrastructure fault
// (a suspension, Kueue's eviction, is none: it paces nothing).
func infraFailures(st *evalv1.TrialStatus) int {
	n := 0
	for i := range st.Attempts {
		if a := &st.Attempts[i]; a.Outcome == evalv1.OutcomeInfraFailed && !evictedBy(a) {
			n++
		}
	}
	return n
}

// isTerminal reports whether the trial has its final outcome.
func isTerminal(st *evalv1.TrialStatus) bool {
	switch st.Phase {
	case evalv1.PhasePassed, evalv1.PhaseFailed, evalv1.PhaseGradingFailed,
		evalv1.PhaseInfraFailed, evalv1.PhaseInvalid, evalv1.PhaseProtocolSkew:
		return true
	}
	return false
}

// keepPods says whether an ended attempt's pods stay: only when the Trial
// asks for them (keepPodsAfterFinished), and then until the Trial is
// deleted. Otherwise they go as soon as the attempt ends.
func keepPods(t *evalv1.Trial) bool { return t.Spec.KeepPodsAfterFinished }

// deleteTrialAt is when ttlSecondsAfterFinished deletes a finished Trial, as
// the TTL controller deletes a Job. Zero: never (no ttl, not finished, or a
// Campaign controls it: the Campaign would re-create a deleted cell, and its
// own ttl deletes it with its Trials).
func deleteTrialAt(t *evalv1.Trial) time.Time {
	ttl := t.Spec.TTLSecondsAfterFinished
	if ttl == nil || *ttl < 0 || !isTerminal(&t.Status) || t.Status.CompletionTime == nil {
		return time.Time{}
	}
	if name, _ := evalv1.CampaignOf(t); name != "" {
		return time.Time{}
	}
	return t.Status.CompletionTime.Add(time.Duration(*ttl) * time.Second)
}
