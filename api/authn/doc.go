// Package authn is the per-trial credential shared by the manager, the runner
// and the DB service: a random bearer token the manager puts in a per-attempt
// Secret mounted into both pods as a file. The runner's gRPC server and the DB
// service's HTTP server refuse every call that does not present it (health
// checks excepted); the manager's runner client and the runner's DB client
// send it.
//
// A token is a credential: it is never logged, put in an event, a status or
// an error message.
//
// Imports: the standard library.
package authn
