package client

import (
	"errors"
	"fmt"
)

// Sentinels matched by *APIError under errors.Is.
var (
	ErrTrialNotFound      = errors.New("dbservice: trial not found")
	ErrTableNotFound      = errors.New("dbservice: table not found")
	ErrSnapshotNotFound   = errors.New("dbservice: snapshot not found")
	ErrTrialAlreadyExists = errors.New("dbservice: trial already exists")
	ErrVersionMismatch    = errors.New("dbservice: version mismatch")
	ErrDuplicateKey       = errors.New("dbservice: duplicate key")
	// ErrInvalidRequest matches every 4xx the caller caused by what it sent: InvalidJSON,
	// InvalidOperation, InvalidTrialID, ValidationError and PayloadTooLarge.
	ErrInvalidRequest = errors.New("dbservice: invalid request")
	// ErrLimitExceeded matches every refusal for crossing one of the service's
	// configured limits (details.limit names it): PayloadTooLarge, LimitExceeded,
	// RequestTimeout, and InvalidJSON for a number with too many digits. A 507
	// LimitExceeded means the service is full, not that the request was wrong, so it
	// does not match ErrInvalidRequest.
	ErrLimitExceeded = errors.New("dbservice: limit exceeded")
	// ErrUnavailable matches a call that failed at transport level while the caller's
	// context was still live: connection refused or reset, the HTTP client's timeout,
	// a response cut off. The service's answer is unknown, so a write may or may not
	// have landed.
	ErrUnavailable = errors.New("dbservice: unavailable")
	// ErrUnauthenticated matches a 401: the request did not carry the
	// trial's credential, or carried another one.
	ErrUnauthenticated = errors.New("dbservice: unauthenticated")
)

// unavailableError keeps the transport error's text and matches ErrUnavailable.
type unavailableError struct{ err error }

func (e *unavailableError) Error() string        { return e.err.Error() }
func (e *unavailableError) Unwrap() error        { return e.err }
func (e *unavailableError) Is(target error) bool { return target == ErrUnavailable }

// APIError is an error response of the DB service.
type APIError struct {
	StatusCode int
	Type       string
	Message    string
	Details    map[string]any
}

func (e *APIError) Error() string {
	return fmt.Sprintf("dbservice: %d %s: %s", e.StatusCode, e.Type, e.Message)
}

// Is maps the wire type to the sentinels.
func (e *APIError) Is(target error) bool {
	if target == ErrLimitExceeded {
		_, named := e.Details["limit"].(string)
		return e.Type == "PayloadTooLarge" || e.Type == "LimitExceeded" || e.Type == "RequestTimeout" || named
	}
	if target == ErrUnauthenticated {
		return e.StatusCode == 401
	}
	switch e.Type {
	case "TrialNotFound":
		return target == ErrTrialNotFound
	case "TableNotFound":
		return target == ErrTableNotFound
	case "SnapshotNotFound":
		return target == ErrSnapshotNotFound
	case "TrialAlreadyExists":
		return target == ErrTrialAlreadyExists
	// ETagMismatch is the upstream service's name for the same conflict.
	case "VersionMismatch", "ETagMismatch":
		return target == ErrVersionMismatch
	case "DuplicateKey":
		return target == ErrDuplicateKey
	case "InvalidJSON", "InvalidOperation", "InvalidTrialID", "ValidationError", "PayloadTooLarge", "RequestTimeout":
		return target == ErrInvalidRequest
	case "LimitExceeded":
		return target == ErrInvalidRequest && e.StatusCode < 500
	}
	return false
}
