package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

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
		opts, err := shopFlags(args[1:], os.Stderr)
		if err != nil {
			return err
		}
		return shop.Main(ctx, opts)
	default:
		return fmt.Errorf("unknown MCP server %q (available: shop)", args[0])
	}
}

// shopFlags parses `tolokaforge mcp shop`'s flags; usage and parse errors go
// to stderr, because stdout carries only the MCP protocol.
func shopFlags(args []string, stderr io.Writer) (shop.Options, error) {
	var opts shop.Options
	fs := flag.NewFlagSet("tolokaforge mcp shop", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&opts.StatePath, "state", "", "JSON file {products, customers, orders} to start from (default: empty until "+shop.SetStateTool+")")
	if err := fs.Parse(args); err != nil {
		return shop.Options{}, fmt.Errorf("mcp shop: %w", err)
	}
	if fs.NArg() > 0 {
		return shop.Options{}, fmt.Errorf("mcp shop: unexpected arguments %q", fs.Args())
	}
	return opts, nil
}
