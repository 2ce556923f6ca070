package grading

import (
	"errors"
	"fmt"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/runner/grading/judge"
)

// Error is a grading failure whose Error() is exactly the GradeTrialResponse.error text
// of its row in the spec's GradeTrial error table. Cause, when set, is the underlying
// fault (a DB client error, a decode error) for errors.Is / errors.As.
type Error struct {
	Msg   string
	Cause error
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Cause }

// notGradeable is the "Trial '<id>' is not gradeable: <Type>: ..." row family: the
// request or the config cannot be graded at all. detail starts with the error type.
func notGradeable(id, detail string, cause error) error {
	return &Error{Msg: fmt.Sprintf("Trial '%s' is not gradeable: %s", id, detail), Cause: cause}
}

// timelineInconsistent is the TimelineInconsistencyError row.
func timelineInconsistent(id, detail string) error {
	return notGradeable(id, "TimelineInconsistencyError: "+detail, nil)
}

// notAsAuthored is the "Trial '<id>' cannot be graded as authored: ..." row family: a
// pack defect refused before any grading branch reads state.
func notAsAuthored(id, detail string) error {
	return &Error{Msg: fmt.Sprintf("Trial '%s' cannot be graded as authored: %s", id, detail)}
}

// hashFailed is the "Hash grading failed: ..." row family: golden replay or stable-state
// retrieval raised. detail starts with the error type where the table names one.
func hashFailed(detail string, cause error) error {
	if cause != nil {
		detail += ": " + cause.Error()
	}
	return &Error{Msg: "Hash grading failed: " + detail, Cause: cause}
}

// gradingError is the catch-all row.
func gradingError(cause error) error {
	var ge *Error
	if errors.As(cause, &ge) {
		return cause
	}
	return &Error{Msg: "Grading error: " + cause.Error(), Cause: cause}
}

// judgeSpentError is a failed grade whose judge spent before the failure: the message
// is the grade's error, unchanged; the report is what the provider billed.
type judgeSpentError struct {
	err    error
	report *runnerpb.JudgeReport
}

func (e *judgeSpentError) Error() string { return e.err.Error() }
func (e *judgeSpentError) Unwrap() error { return e.err }

// JudgeReportOf returns the judge's spend a failed Grade carries (nil when the judge
// made no call or did not run): the GradeTrial handler forwards it so the trial's usage
// counts what a failed judge cost.
func JudgeReportOf(err error) *runnerpb.JudgeReport {
	var js *judgeSpentError
	if errors.As(err, &js) {
		return js.report
	}
	return nil
}

// withJudgeSpend attaches the judge's report to err when the judge spent anything.
func withJudgeSpend(err error, o *judge.Outcome) error {
	if o == nil || o.Report == nil {
		return err
	}
	r := o.Report
	if r.Calls == 0 && r.PromptTokens == 0 && r.CompletionTokens == 0 && r.ReasoningTokens == 0 && r.CostUsd == 0 {
		return err
	}
	return &judgeSpentError{err: err, report: r}
}
