// Package runnerpb is the runner protocol on the wire: runner.proto, kept
// byte-identical to the protocol spec's, and the Go that protoc generates
// from it (hack/generate-proto.sh; `make test` fails when either drifts),
// plus the hand-written gRPC trailers for what the spec's messages have no
// field for: a failed GradeTrial's judge spend (judge_trailer.go), whole tool
// and test outputs (tool_output_trailer.go) and the runner's confinement
// (confinement_trailer.go); and one request metadata, the trial's judge key
// on RegisterTrial (judge_key.go).
//
// Imports: the standard library, google.golang.org/grpc and
// google.golang.org/protobuf.
package runnerpb
