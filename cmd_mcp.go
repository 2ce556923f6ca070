package main

import (
	"context"
	"fmt"

	"tolokaforge.io/operator/examples/shop"
)

// runMCP serves the example MCP servers shipped in the binary, so a runner pod
// built from the same image can spawn them as `tolokaforge mcp <name>`.
func runMCP(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: tolokaforge mcp shop [--state FILE]")
	}
	switch args[0] {
	case "shop":
		return shop.Main(ctx, args[1:])
	default:
		return fmt.Errorf("unknown MCP server %q (available: shop)", args[0])
	}
}
