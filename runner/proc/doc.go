// Package proc confines the processes a runner starts for a task (MCP
// servers): resource limits set before the tool's first instruction, and a
// teardown that finds and kills every process a trial left behind, including
// ones that detached with setsid and double-forked out of their process group.
//
// KillGroup kills and reaps a process group whose leader has exited (the
// test_execution verifier's), waiting until none of it runs.
//
// Supervise starts a tool under a supervisor instead: the wrapper stays as
// a child subreaper and runs the tool as its child, so whatever the tool
// starts stays below it, whatever it does to its environment, group or
// session; when the tool exits, or Stop sends SIGTERM, the supervisor kills
// and reaps everything below it and exits with the tool's status. The
// supervisor itself runs outside the tool's limits (a Go runtime needs more
// room than a tight RLIMIT_AS leaves, and must outlive a tool that hits
// one): its child, this wrapper again, sets them and Landlock before it
// execs the tool. The Python tool host, the Python checks, a trial's stdio
// MCP servers, the test_execution verifier and pack import's describe run
// under one. SetNotDumpable
// keeps same-user processes out of the caller's /proc files (environ, mem).
//
// Limits are applied by a wrapper the child starts as: this package's init
// sees the marker variables, calls setrlimit and execs the tool. Go's
// os/exec has no hook between fork and exec, and a prlimit(2) from the
// parent after Start would race the tool's first fork or allocation. Any
// binary importing this package (the runner, its tests) carries the
// wrapper, but the runner's own binary pays all its package inits on every
// tool start; the small tolokaforge-toolexec (runner/proc/toolexec), found
// beside it or named by SetLauncher, does the same work in a millisecond.
//
// Imports: the standard library, github.com/landlock-lsm/go-landlock
// (Landlock for a supervised tool) and golang.org/x/sys (unix).
package proc
