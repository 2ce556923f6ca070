package main

import (
	"os"
	"testing"
)

// TestMain lets the test binary stand in for the tolokaforge binary when the
// code under test starts it as a subprocess (the runner spawns MCP servers as
// `tolokaforge mcp shop` with its SelfExecutable pointed at os.Args[0]).
func TestMain(m *testing.M) {
	if len(os.Args) >= 2 && os.Args[1] == "mcp" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}
