// Package mcpstandin is the one stand-in MCP server of the tests: it serves
// what `tolokaforge mcp shop` serves (the shop domain) and `mcp testkit`, a
// small stateful server whose tools exercise what the runner must survive
// (timeouts, errors, crashes, process groups, the state convention).
//
// Tests reach it in one of two ways. A TestMain calls Main (or ServeIfAsked)
// so the test binary itself serves when re-executed as
// `TESTBINARY mcp shop ...`; that is what the runner does when a tool's
// command is ["tolokaforge", "mcp", ...] and Config.SelfExecutable is the
// test binary. Or a test builds the small binary of cmd/mcpstandin once
// (Build) where a re-executed 100 MB test binary per tool server costs too
// much, or where the command must be a binary that is not the test's.
//
// Test code only: production code never imports it.
//
// Imports: examples/shop, the standard library and
// github.com/modelcontextprotocol/go-sdk.
package mcpstandin

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"tolokaforge.io/operator/examples/shop"
)

// Serve serves the MCP server args name on stdio until stdin closes:
// [mcp] shop or [mcp] testkit; no name serves the shop. The shop's flags
// come parsed as opts (cmd/mcpstandin parses them, as the root parses
// `tolokaforge mcp shop`'s): a library parses no command line.
func Serve(ctx context.Context, args []string, opts shop.Options) error {
	if len(args) > 0 && args[0] == "mcp" {
		args = args[1:]
	}
	if len(args) == 0 {
		return shop.Main(ctx, opts)
	}
	switch args[0] {
	case "shop":
		if len(args) > 1 {
			return fmt.Errorf("mcpstandin: mcp shop takes its flags as shop.Options, got %q (cmd/mcpstandin parses them)", args[1:])
		}
		return shop.Main(ctx, opts)
	case "testkit":
		if len(args) > 1 {
			return fmt.Errorf("mcpstandin: mcp testkit takes no arguments, got %q", args[1:])
		}
		return testkit(ctx)
	}
	return fmt.Errorf("mcpstandin: unknown MCP server %q: want shop or testkit", args[0])
}

// asked reports whether the process was started as `BINARY mcp shop|testkit`.
func asked(args []string) bool {
	return len(args) >= 3 && args[1] == "mcp" && (args[2] == "shop" || args[2] == "testkit")
}

// ServeIfAsked serves and exits when the test binary was re-executed as an
// MCP server; otherwise it returns and the TestMain goes on. It serves the
// shop without flags: a test that needs --state runs the binary of Build.
func ServeIfAsked() {
	if !asked(os.Args) {
		return
	}
	if err := Serve(context.Background(), os.Args[1:], shop.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// Main is a whole TestMain: serve when re-executed as an MCP server, else
// run the tests.
func Main(m *testing.M) {
	ServeIfAsked()
	os.Exit(m.Run())
}

// Build compiles cmd/mcpstandin into dir and returns the binary's path.
func Build(dir string) (string, error) {
	out := filepath.Join(dir, "mcpstandin")
	b, err := exec.Command("go", "build", "-o", out, "tolokaforge.io/operator/test/mcpstandin/cmd/mcpstandin").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build the MCP stand-in: %w\n%s", err, b)
	}
	return out, nil
}
