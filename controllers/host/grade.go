package host

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
)

// grade is gradeTrial in its span.
func (r *run) grade(ctx context.Context, end *ending) *ending {
	gctx, span := child(ctx, SpanGrade)
	e := r.gradeTrial(gctx, end)
	endSpan(span, e)
	return e
}

// gradeTrial asks the runner for the grade of a trial that ended the way the
// harness planned (agent_done, user_stop, max_turns).
func (r *run) gradeTrial(ctx context.Context, end *ending) *ending {
	wire, err := task.EncodeTranscriptWire(r.transcript)
	if err != nil {
		// The host built a transcript its own encoder refuses: a host bug,
		// and the runner could not grade it either.
		end.outcome, end.reason = evalv1.OutcomeGradingFailed, evalv1.ReasonGradingFailed
		end.message = fmt.Sprintf("encode transcript of trial %q: %v", r.trialID, err)
		return end
	}
	gctx, cancel := context.WithTimeout(ctx, r.gradingTimeout)
	defer cancel()
	start := time.Now()
	var trailer metadata.MD
	resp, err := r.cfg.Runner.GradeTrial(outgoing(gctx), &runnerpb.GradeTrialRequest{
		TrialId:           r.trialID,
		LlmMessagesJson:   string(wire),
		GradingComponents: gradingComponents(r.cfg),
		TerminationReason: string(end.termination),
	}, grpc.Trailer(&trailer))
	r.timing.grading = time.Since(start)
	if out := runnerpb.TestOutputFromMD(trailer); out != nil && r.cfg.Spec != nil && r.cfg.Spec.Task != nil {
		r.keepArtifact(ctx, TestOutputName(r.cfg.Spec.Task.TaskID, r.cfg.TrialIndex, r.cfg.AttemptNumber), out)
	}
	if err != nil {
		e := r.transportEnding(ctx, "grade trial", err)
		e.termination = end.termination
		return e
	}
	if !resp.GetSuccess() {
		if trialNotFoundPattern.MatchString(resp.GetError()) {
			return &ending{outcome: evalv1.OutcomeInfraFailed, reason: evalv1.ReasonTrialLost, termination: end.termination,
				message: fmt.Sprintf("grade trial %q: %s", r.trialID, resp.GetError())}
		}
		// A judge that ran before grading failed was billed all the same.
		jr, jerr := runnerpb.JudgeReportFromMD(trailer)
		if jerr != nil {
			r.log.Error(jerr, "read the failed judge's spend from the GradeTrial trailer")
		}
		// A grader that could not read the state of a stopped or vanished DB
		// service says so in its error; the DB service's health decides
		// whether that is the grade's failure or the infrastructure's.
		// A terminal task's environment that stopped answering, or tests
		// that left no reward to read, say nothing about the agent:
		// retried like any infrastructure fault, never averaged as 0.
		if task.IsEnvironmentError(resp.GetError()) {
			return &ending{outcome: evalv1.OutcomeInfraFailed, reason: evalv1.ReasonEnvironmentUnavailable, termination: end.termination,
				message: fmt.Sprintf("grade trial %q: %s", r.trialID, resp.GetError()), failedJudge: jr}
		}
		if e := r.answerFault(ctx, fmt.Sprintf("grade trial %q", r.trialID), resp.GetError()); e != nil {
			e.termination = end.termination
			e.failedJudge = jr
			return e
		}
		return &ending{outcome: evalv1.OutcomeGradingFailed, reason: evalv1.ReasonGradingFailed, termination: end.termination,
			message: resp.GetError(), failedJudge: jr}
	}
	if resp.GetGrade() == nil {
		return &ending{outcome: evalv1.OutcomeGradingFailed, reason: evalv1.ReasonGradingFailed, termination: end.termination,
			message: fmt.Sprintf("grade trial %q: the runner answered success without a grade", r.trialID)}
	}
	g := resp.GetGrade()
	e := &ending{outcome: evalv1.OutcomeFailed, reason: evalv1.ReasonFailed, termination: end.termination,
		grade: g, gradedBy: GradedByRunner, message: g.GetReasons()}
	if g.GetBinaryPass() {
		e.outcome, e.reason = evalv1.OutcomePassed, evalv1.ReasonPassed
	}
	return e
}

// oracleGradingComponents is what an oracle trial is graded on. The oracle
// replays the golden actions and says nothing, so conversational components
// (transcript rules, a judge) would score the absence of a conversation rather
// than the pack; an oracle trial answers one question: does the golden path
// reach the state the task's state checks expect.
var oracleGradingComponents = []string{task.ComponentStateChecks}

func gradingComponents(cfg AttemptConfig) []string {
	if cfg.GradingComponents != nil {
		return cfg.GradingComponents
	}
	if cfg.Spec != nil && cfg.Spec.Agent != nil && cfg.Spec.Agent.Provider == task.ProviderOracle {
		return oracleGradingComponents
	}
	return nil
}

// selfGrade is the host's grade of a trial that never reaches GradeTrial:
// score 0, no component evaluated, a reason naming the termination.
func selfGrade(end *ending) *runnerpb.Grade {
	return &runnerpb.Grade{
		BinaryPass: false,
		Score:      0,
		Components: &runnerpb.GradeComponents{StateChecks: -1, TranscriptRules: -1, LlmJudge: -1, CustomChecks: -1},
		Reasons:    fmt.Sprintf("Not graded: the trial ended with termination_reason %s (%s)", end.termination, end.message),
	}
}

// judgeUsage reads the runner's report of the judge's spend: the grade's, or when
// grading failed, the one the runner's trailer carried.
func judgeUsage(end *ending) Usage {
	jr := end.grade.GetJudgeReport()
	if jr == nil {
		jr = end.failedJudge
	}
	if jr == nil {
		return Usage{}
	}
	return Usage{
		Calls:            int64(jr.GetCalls()),
		PromptTokens:     int64(jr.GetPromptTokens()),
		CompletionTokens: int64(jr.GetCompletionTokens()),
		ReasoningTokens:  int64(jr.GetReasoningTokens()),
		CostUSD:          jr.GetCostUsd(),
	}
}
