package host

import (
	"fmt"

	"tolokaforge.io/operator/api/task"
)

// ActorError is an actor's way of ending the trial with a specific
// termination reason: rate_limit and api_error (infrastructure: the attempt
// is retried) or error (final: a provider 4xx caused by the request, a pack
// the oracle cannot replay).
type ActorError struct {
	Termination task.TerminationReason
	Err         error
}

func (e *ActorError) Error() string {
	return fmt.Sprintf("%s: %v", e.Termination, e.Err)
}

func (e *ActorError) Unwrap() error { return e.Err }
