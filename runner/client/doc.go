// Package client is the host's gRPC client of a runner: Dial opens one
// long-lived channel with keepalive and reconnect backoff suited to a pod that
// may restart, WaitReady blocks until the runner's grpc.health.v1 reports
// SERVING, and the generated runnerpb.RunnerServiceClient is embedded.
//
// Imports: api/authn, api/runnerpb, the standard library and
// google.golang.org/grpc. It never imports the runner itself.
package client
