package runner

import "fmt"

// wireError is an error whose text is a spec-mandated in-band message
// ("Trial '<id>' not found", "Invalid trial_spec_json: ..."). Those sentences
// start with a capital letter by contract, which Go's error-string convention
// would otherwise flag; the type makes the exception explicit.
type wireError struct{ msg string }

func (e *wireError) Error() string { return e.msg }

func wiref(format string, args ...any) error { return &wireError{msg: fmt.Sprintf(format, args...)} }

func trialNotFound(id string) string { return fmt.Sprintf("Trial '%s' not found", id) }

// dbInitFailed is the spec's in-band "DB Service initialization failed"
// refusal, still matching client.ErrUnavailable when the DB service could not
// be reached, so RegisterTrial can tell a fault from a refused state.
func dbInitFailed(err error) error {
	return &dbInitError{wireError{msg: fmt.Sprintf("DB Service initialization failed: %v", err)}, err}
}

type dbInitError struct {
	wireError
	cause error
}

func (e *dbInitError) Unwrap() error { return e.cause }
