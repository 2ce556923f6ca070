// Package execagentpb is the exec agent's protocol on the wire:
// execagent.proto (service tolokaforge.execagent.v1.ExecAgent: Exec,
// WriteFile, ReadFile, ListDir, PutTar, GetTar, ResetDir, KillAll, Health)
// and the Go that protoc generates from it (hack/generate-proto.sh; `make
// test` fails when it is stale). The agent (runner/execagent) runs as PID 1
// of a terminal task's container; the runner drives it with
// runner/execagent/client.
//
// Imports: the standard library, google.golang.org/grpc and
// google.golang.org/protobuf.
package execagentpb
