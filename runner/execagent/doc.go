// Package execagent is the exec agent's server: the static binary
// tolokaforge-execagent (cmd/tolokaforge-execagent) runs it as PID 1 of a
// terminal task's container, and the runner drives it over gRPC
// (api/execagentpb, client in runner/execagent/client) for the agent's bash
// and file tools, the oracle's solution upload and the verifier. No command
// goes through the Kubernetes API server's exec endpoint.
//
// Every RPC but Health needs the bearer token (api/authn); the token never
// reaches a child's environment. Each command runs in its own process group
// with its output in files under the private state directory, so a
// background child holding stdout open never holds the reply. Children are
// started and waited through one reaper that dispatches exit statuses by
// pid: with Options.ReapAll (the binary: PID 1 and child subreaper) it also
// collects every orphan with wait4(-1); without it (a library in a test
// process) it waits only for the pids it started.
//
// PutTar and ResetDir never follow a symbolic link on disk: every
// component of the destination is lstat'ed; PutTar without replace refuses
// a component that is a symbolic link or not a directory, naming it, while
// PutTar with replace and ResetDir remove such a component (the link
// itself, never its target) and create a real directory in its place.
// Entries are written through os.Root below the destination, and each
// entry's parent components are lstat'ed too. The checks are lstat-based,
// so the verifier's upload is meant to follow KillAll (nothing of the agent
// left running to race them); os.Root keeps writes below the destination
// even then.
//
// The agent does not use runner/proc: that package's init is a limits
// wrapper and its KillGroup waits for specific pids, which would race the
// central reaper; the two prctl calls it needs are here.
//
// Imports: api/authn, api/execagentpb, the standard library,
// golang.org/x/sys (unix) and google.golang.org/grpc.
package execagent
