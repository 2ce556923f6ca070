// Package envtools implements a terminal task's agent tools (bash,
// read_file, write_file, list_dir: task.EnvironmentToolNames) in the task's
// own container, through its exec agent (api/execagentpb), never in the
// runner's filesystem. The runner chooses them instead of the builtins of
// the same names for every trial whose task has an environment.
//
// bash runs `bash -c command` from the environment's workdir with its env,
// as the agent's user, for timeout_s (default 120 s, at most 1800 s, and
// never past the call's own deadline), SIGTERM then SIGKILL after 2 s, each
// stream capped by the exec agent at 4 MiB. The model sees the exit code (or
// the signal, or the timeout) and then stdout and stderr, each cut to 16 KiB
// keeping its head and tail with a marker saying how many bytes were cut. A
// non-zero exit code is a successful call. An exec agent that does not
// answer is a tool error whose message starts with
// task.EnvironmentErrorPrefix and names the environment.
//
// Imports: api/execagentpb, api/task, runner/tools, the standard library and
// google.golang.org/grpc (status codes).
package envtools
