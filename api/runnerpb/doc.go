// Package runnerpb is the runner protocol on the wire: runner.proto, kept
// byte-identical to the protocol spec's, and the Go that protoc generates
// from it (hack/generate-proto.sh; `make test` fails when either drifts),
// plus judge_trailer.go, the one hand-written file: the gRPC trailer that
// carries a failed GradeTrial's judge spend.
//
// Imports: the standard library, google.golang.org/grpc and
// google.golang.org/protobuf.
package runnerpb
