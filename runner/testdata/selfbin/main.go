// Command selfbin stands in for the tolokaforge binary in the runner's tests:
// MCP commands ["tolokaforge", "mcp", NAME] resolve to it (Config.SelfExecutable).
// `mcp shop` serves the shop domain; `mcp testkit` serves testkit's tools for
// timeouts, errors, process groups and the state convention.
package main

import (
	"context"
	"fmt"
	"os"

	"tolokaforge.io/operator/examples/shop"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "selfbin:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) < 2 || args[0] != "mcp" {
		return fmt.Errorf("usage: selfbin mcp shop|testkit [flags], got %q", args)
	}
	ctx := context.Background()
	switch args[1] {
	case "shop":
		return shop.Main(ctx, args[2:])
	case "testkit":
		return testkit(ctx)
	}
	return fmt.Errorf("unknown MCP server %q", args[1])
}
