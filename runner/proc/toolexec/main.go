// Command tolokaforge-toolexec is the runner's limits wrapper for tool
// processes (MCP servers, the test_execution verifier). The runner starts it
// in place of the tool with marker variables; package proc's init sets the
// rlimits and execs the tool, so main runs only when started by hand.
//
// It is a separate binary because the runner's own (which carries the same
// wrapper) pays all of its package inits, ~100 ms of CPU and ~80 MB of RSS,
// on every tool start; this one links package proc and little else.
package main

import (
	"fmt"
	"os"

	_ "tolokaforge.io/operator/runner/proc"
)

func main() {
	fmt.Fprintln(os.Stderr, "tolokaforge-toolexec: not started by a tolokaforge runner (no TOLOKAFORGE_PROC_RLIMITS): it applies a tool's resource limits and execs the tool, and does nothing on its own")
	os.Exit(127)
}
