package dbservice

import (
	"fmt"
	"net/http"
)

// Error types on the wire (the "error" field of an error body).
const (
	errTypeTrialNotFound      = "TrialNotFound"
	errTypeTableNotFound      = "TableNotFound"
	errTypeSnapshotNotFound   = "SnapshotNotFound"
	errTypeTrialAlreadyExists = "TrialAlreadyExists"
	errTypeVersionMismatch    = "VersionMismatch"
	errTypeDuplicateKey       = "DuplicateKey"
	errTypeInvalidJSON        = "InvalidJSON"
	errTypeInvalidOperation   = "InvalidOperation"
	errTypeInvalidTrialID     = "InvalidTrialID"
	errTypeValidation         = "ValidationError"
	errTypePayloadTooLarge    = "PayloadTooLarge"
	// errTypeLimitExceeded is a configured limit other than the body size: 422 when the
	// request would take its trial over a per-trial limit or asks for too large a
	// result, 507 when the process is full. details.limit names the limit.
	errTypeLimitExceeded = "LimitExceeded"
	// errTypeRequestTimeout is a body that did not arrive within the read timeout (408).
	errTypeRequestTimeout = "RequestTimeout"
	errTypeNotFound       = "NotFound"
	// errTypeUnauthenticated is a request without the trial's credential (401).
	errTypeUnauthenticated = "Unauthenticated"
	errTypeInternal        = "InternalError"
)

// Error is a request failure with its HTTP status and wire type.
type Error struct {
	Status  int
	Type    string
	Message string
	Details map[string]any
}

func (e *Error) Error() string { return e.Type + ": " + e.Message }

func newError(status int, typ string, details map[string]any, format string, args ...any) *Error {
	return &Error{Status: status, Type: typ, Message: fmt.Sprintf(format, args...), Details: details}
}

func errTrialNotFound(id string) *Error {
	return newError(http.StatusNotFound, errTypeTrialNotFound, map[string]any{"trial_id": id},
		"trial %q not found", id)
}

func errTableNotFound(id, table string) *Error {
	return newError(http.StatusNotFound, errTypeTableNotFound, map[string]any{"trial_id": id, "table": table},
		"table %q not found in trial %q", table, id)
}

func errSnapshotNotFound(id, name string) *Error {
	return newError(http.StatusNotFound, errTypeSnapshotNotFound, map[string]any{"trial_id": id, "snapshot_name": name},
		"snapshot %q not found in trial %q", name, id)
}

func errValidation(path, format string, args ...any) *Error {
	return newError(http.StatusBadRequest, errTypeValidation, map[string]any{"path": path},
		"%s: %s", path, fmt.Sprintf(format, args...))
}

func errInvalidOp(index int, format string, args ...any) *Error {
	return newError(http.StatusBadRequest, errTypeInvalidOperation, map[string]any{"index": index},
		"operations[%d]: %s", index, fmt.Sprintf(format, args...))
}
