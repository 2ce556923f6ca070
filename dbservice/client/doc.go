// Package client is the Go client of the DB service (package dbservice), used by the
// runner and by tests.
//
// Errors from the service come back as *APIError, which matches the sentinel errors
// (ErrTrialNotFound, ErrVersionMismatch, ...) under errors.Is. Every call honours its
// context's deadline. Only idempotent reads (GET) are retried, on transport errors and
// 5xx responses; POST, PATCH and DELETE are sent once, because a retry of a request the
// server did apply would apply it twice.
//
// State data is returned as json.RawMessage per table, so number literals keep their
// int/float form (300.0 stays 300.0); parse it with package canonical to hash or compare.
//
// Imports: api/authn, api/task, the standard library and github.com/go-logr/logr. It
// never
// imports the server.
package client
