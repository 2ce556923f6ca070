package grading

import (
	"errors"
	"fmt"
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
