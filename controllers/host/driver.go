package host

import (
	"context"
	"fmt"
	"time"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"

	"tolokaforge.io/operator/api/artifacts"
	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
)

// RunAttempt drives one attempt against a registered-to-be runner:
// RegisterTrial with the version lock, the loop, GradeTrial for the three
// planned ends (agent_done, user_stop, max_turns), a host grade for the rest,
// CleanupTrial (always, bounded, even when ctx is done), then the artifacts.
// It never returns an error: every way an attempt can end is an Outcome.
func RunAttempt(ctx context.Context, cfg AttemptConfig) AttemptResult {
	res := AttemptResult{StartTime: time.Now()}
	if err := validateConfig(&cfg); err != nil {
		res.Outcome, res.Reason, res.Message = evalv1.OutcomeInvalid, evalv1.ReasonInvalidConfig, err.Error()
		res.EndTime = time.Now()
		return res
	}
	r := newRun(cfg)
	ctx, span := r.startAttempt(ctx)
	// Ended last, so the span covers cleanup and the artifacts' writing.
	defer endAttempt(span, &res)
	res.TraceID = traceID(span)
	end := r.execute(ctx)
	res.CleanupError = r.cleanup(ctx)

	res.EndTime = time.Now()
	res.Outcome, res.Reason, res.Message, res.GradedBy = end.outcome, end.reason, end.message, end.gradedBy
	res.TerminationReason = end.termination
	res.Grade = end.grade
	res.Turns = r.turns
	res.AgentUsage, res.UserUsage = r.agentUsage, r.userUsage
	res.JudgeUsage = judgeUsage(end)
	res.Transcript, res.ToolCalls = r.transcript, r.records
	r.log.Info("attempt ended", "outcome", res.Outcome, "reason", res.Reason,
		"termination", res.TerminationReason, "turns", res.Turns)

	if sink := r.artifactsSink(); sink != nil {
		// The attempt's end is recorded even when ctx ended it (a canceled
		// trial keeps its transcript), bounded so a dead store cannot hold
		// the driver.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), artifactsTimeout)
		path, err := artifacts.WriteTo(actx, sink, r.artifactsOf(&res, end))
		cancel()
		if err != nil {
			r.log.Error(err, "writing artifacts")
			res.ArtifactsError = err
		} else {
			res.ArtifactsPath = path
		}
	}
	return res
}

// artifactsTimeout bounds writing one attempt's artifacts.
const artifactsTimeout = 2 * time.Minute

// execute registers and runs the trial and says how it ended.
func (r *run) execute(ctx context.Context) *ending {
	start := time.Now()
	rctx, span := child(ctx, SpanRegister)
	reg, end := r.register(rctx)
	endSpan(span, end)
	r.timing.registration = time.Since(start)
	if end != nil {
		return end
	}
	r.log.V(1).Info("registered", "agentTools", len(reg.agentTools), "userTools", len(reg.userTools))
	end = r.loop(ctx, reg)
	switch end.termination {
	case task.TerminationAgentDone, task.TerminationUserStop, task.TerminationMaxTurns:
		return r.grade(ctx, end)
	case task.TerminationTimeout:
		// A terminal task's tests judge what the agent left when its time
		// ran out (Harbor's rule): the agent's timeout is its outcome.
		if ctx.Err() == nil && r.cfg.Spec != nil && r.cfg.Spec.Task != nil && r.cfg.Spec.Task.HasEnvironment() {
			return r.grade(ctx, end)
		}
	}
	if end.outcome == evalv1.OutcomeFailed && end.gradedBy == GradedByHost {
		end.grade = selfGrade(end)
	} else {
		end.gradedBy = ""
	}
	return end
}

// cleanup forgets the registration on the runner. It runs even when ctx is
// done (a deleted Trial must not leave its registration behind), bounded by
// its own timeout; failure is logged, never the attempt's outcome. It says
// what went wrong ("" when the runner answered success): a slot runner
// answers whether it is back to its baseline, and only then is it reused.
func (r *run) cleanup(ctx context.Context) string {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cleanupTimeout)
	defer cancel()
	cctx, span := child(cctx, SpanCleanup)
	defer endSpan(span, nil)
	resp, err := r.cfg.Runner.CleanupTrial(outgoing(cctx), &runnerpb.CleanupTrialRequest{TrialId: r.trialID})
	switch {
	case err != nil:
		r.log.V(1).Info("cleanup trial failed", "error", err.Error())
		return "CleanupTrial failed: " + err.Error()
	case !resp.GetSuccess():
		r.log.V(1).Info("cleanup trial refused", "error", resp.GetError())
		msg := resp.GetError()
		if msg == "" {
			msg = "no reason given"
		}
		return "CleanupTrial refused: " + msg
	}
	return ""
}

func (r *run) artifactsOf(res *AttemptResult, end *ending) *artifacts.Attempt {
	spec := r.cfg.Spec
	a := &artifacts.Attempt{
		TrialID: spec.TrialID, RunID: spec.RunID, AttemptID: spec.AttemptID, TaskID: spec.Task.TaskID,
		Record:     r.cfg.Record,
		TrialIndex: r.cfg.TrialIndex, AttemptNumber: r.cfg.AttemptNumber, TraceID: res.TraceID,
		Outcome: string(res.Outcome), Reason: res.Reason, Message: res.Message,
		TerminationReason: string(res.TerminationReason), Turns: res.Turns,
		StartTime: res.StartTime, EndTime: res.EndTime,
		ToolCalls: res.ToolCalls,
		Grade:     res.Grade, GradedBy: end.gradedBy,
		AgentUsage: usageOf(res.AgentUsage), UserUsage: usageOf(res.UserUsage), JudgeUsage: usageOf(res.JudgeUsage),
		Timings: artifacts.Timings{
			Registration: r.timing.registration, AgentLLM: r.timing.agentLLM, UserLLM: r.timing.userLLM,
			Tools: r.timing.tools, Grading: r.timing.grading,
		},
	}
	a.Messages = make([]artifacts.Message, len(r.transcript))
	for i, m := range r.transcript {
		a.Messages[i] = artifacts.Message{Message: m, Timestamp: r.stamps[i]}
	}
	return a
}

func usageOf(u Usage) artifacts.Usage {
	return artifacts.Usage{Calls: u.Calls, Retries: u.Retries, PromptTokens: u.PromptTokens,
		CompletionTokens: u.CompletionTokens, ReasoningTokens: u.ReasoningTokens, CachedTokens: u.CachedTokens, CostUSD: u.CostUSD}
}

// String summarises a result for logs and CLI output.
func (r AttemptResult) String() string {
	s := fmt.Sprintf("outcome=%s reason=%s termination=%s turns=%d", r.Outcome, r.Reason, r.TerminationReason, r.Turns)
	if r.Grade != nil {
		s += fmt.Sprintf(" score=%g pass=%t", r.Grade.GetScore(), r.Grade.GetBinaryPass())
	}
	return s
}
