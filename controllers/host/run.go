package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"

	"github.com/go-logr/logr"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
)

// ending is how (and whether) an attempt is over.
type ending struct {
	outcome     evalv1.AttemptOutcome
	reason      string
	message     string
	termination task.TerminationReason
	grade       *runnerpb.Grade
	gradedBy    string
	// failedJudge is the judge's spend on a GradeTrial that failed (no grade).
	failedJudge *runnerpb.JudgeReport
}

// errTrialTimeout is the cause of the loop context's deadline, so a deadline
// the trial's wall clock set is told apart from one the caller set.
var errTrialTimeout = errors.New("trial wall clock exceeded")

// timings are where the attempt's wall clock went.
type timings struct {
	registration, agentLLM, userLLM, tools, grading time.Duration
}

// run is one attempt in progress.
type run struct {
	cfg     AttemptConfig
	trialID string
	log     logr.Logger
	user    Actor

	maxTurns                                        int
	registerTimeout, gradingTimeout, cleanupTimeout time.Duration

	transcript []task.Message
	stamps     []time.Time
	agentConv  []task.Message
	userConv   []task.Message
	ids        *callIDs
	records    []task.RecordedToolCall
	turns      int
	agentUsage Usage
	userUsage  Usage
	stuck      stuckDetector
	timing     timings
}

func newRun(cfg AttemptConfig) *run {
	r := &run{
		cfg:             cfg,
		trialID:         cfg.Spec.TrialID,
		log:             cfg.Log.WithValues("trial", cfg.Spec.TrialID, "attempt", cfg.AttemptNumber),
		user:            cfg.User,
		maxTurns:        cfg.MaxTurns,
		registerTimeout: cfg.RegisterTimeout,
		gradingTimeout:  cfg.GradingTimeout,
		cleanupTimeout:  cfg.CleanupTimeout,
		ids:             newCallIDs(),
	}
	if r.user == nil {
		r.user = DefaultUser(cfg.Spec.Task, cfg.InitialUserMessage)
	}
	if r.maxTurns <= 0 {
		r.maxTurns = DefaultMaxTurns
	}
	if r.registerTimeout <= 0 {
		r.registerTimeout = defaultRegisterTimeout
	}
	if r.gradingTimeout <= 0 {
		r.gradingTimeout = defaultGradingTimeout
	}
	if r.cleanupTimeout <= 0 {
		r.cleanupTimeout = defaultCleanupTimeout
	}
	return r
}

// validateConfig names the first unusable field; nothing has been sent yet.
func validateConfig(cfg *AttemptConfig) error {
	switch {
	case cfg.Runner == nil:
		return errors.New("AttemptConfig.Runner is nil")
	case cfg.Spec == nil:
		return errors.New("AttemptConfig.Spec is nil")
	case cfg.Spec.TrialID == "":
		return errors.New("AttemptConfig.Spec.trial_id is empty")
	case cfg.Spec.Task == nil:
		return fmt.Errorf("AttemptConfig.Spec.task of trial %q is nil", cfg.Spec.TrialID)
	case cfg.Agent == nil:
		return fmt.Errorf("AttemptConfig.Agent of trial %q is nil", cfg.Spec.TrialID)
	case cfg.MaxTurns < 0:
		return fmt.Errorf("AttemptConfig.MaxTurns of trial %q is negative (%d)", cfg.Spec.TrialID, cfg.MaxTurns)
	case cfg.TrialTimeout < 0 || cfg.DefaultToolTimeout < 0 || cfg.GradingTimeout < 0 || cfg.RegisterTimeout < 0 || cfg.CleanupTimeout < 0:
		return fmt.Errorf("AttemptConfig of trial %q has a negative timeout", cfg.Spec.TrialID)
	}
	return nil
}

// canceled is the ending when the caller's context ended: the attempt proves
// nothing about the agent or the infrastructure.
func canceled(ctx context.Context) *ending {
	return &ending{outcome: evalv1.OutcomeInfraFailed, reason: evalv1.ReasonCanceled,
		message: fmt.Sprintf("attempt canceled: %v", context.Cause(ctx))}
}

// ctxEnding reports whether the attempt's contexts ended: the caller's
// (canceled) or the trial's wall clock (timeout).
func (r *run) ctxEnding(lctx, ctx context.Context) *ending {
	if ctx.Err() != nil {
		return canceled(ctx)
	}
	if lctx.Err() != nil {
		return terminate(task.TerminationTimeout, evalv1.ReasonTimeout,
			fmt.Sprintf("trial wall clock of %s exceeded after %d turns", r.cfg.TrialTimeout, r.turns))
	}
	return nil
}

// transportEnding classifies a gRPC failure talking to the runner outside the
// loop (registration, grading).
func (r *run) transportEnding(ctx context.Context, what string, err error) *ending {
	if ctx.Err() != nil {
		return canceled(ctx)
	}
	e := r.callFault(ctx, fmt.Sprintf("%s %q", what, r.trialID), err)
	e.termination = ""
	return e
}

// terminate builds the ending of a loop termination; the outcome follows the
// failure taxonomy: the three planned ends go to GradeTrial, infrastructure
// faults are retried, everything else is self-graded.
func terminate(t task.TerminationReason, reason, msg string) *ending {
	e := &ending{termination: t, reason: reason, message: msg}
	switch t {
	case task.TerminationAgentDone, task.TerminationUserStop, task.TerminationMaxTurns:
		e.outcome = "" // GradeTrial decides
	case task.TerminationRateLimit, task.TerminationAPIError, task.TerminationTrialLost:
		e.outcome = evalv1.OutcomeInfraFailed
	default:
		e.outcome, e.gradedBy = evalv1.OutcomeFailed, GradedByHost
	}
	return e
}

// actorEnding classifies an actor's error.
func (r *run) actorEnding(lctx, ctx context.Context, who string, err error) *ending {
	if e := r.ctxEnding(lctx, ctx); e != nil {
		return e
	}
	var ae *ActorError
	if errors.As(err, &ae) {
		switch ae.Termination {
		case task.TerminationRateLimit:
			return terminate(ae.Termination, evalv1.ReasonRateLimited, fmt.Sprintf("%s: %v", who, ae.Err))
		case task.TerminationAPIError:
			return terminate(ae.Termination, evalv1.ReasonProviderError, fmt.Sprintf("%s: %v", who, ae.Err))
		case task.TerminationTimeout:
			return terminate(ae.Termination, evalv1.ReasonTimeout, fmt.Sprintf("%s: %v", who, ae.Err))
		case task.TerminationStuckDetected:
			return terminate(ae.Termination, evalv1.ReasonStuckDetected, fmt.Sprintf("%s: %v", who, ae.Err))
		case task.TerminationTrialLost:
			return terminate(ae.Termination, evalv1.ReasonTrialLost, fmt.Sprintf("%s: %v", who, ae.Err))
		}
		return terminate(task.TerminationError, evalv1.ReasonAgentError, fmt.Sprintf("%s: %v", who, ae.Err))
	}
	return terminate(task.TerminationError, evalv1.ReasonAgentError, fmt.Sprintf("%s: %v", who, err))
}
