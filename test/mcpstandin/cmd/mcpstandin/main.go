// Command mcpstandin is the test stand-in MCP server as a small binary:
// `mcpstandin [mcp] shop|testkit [flags]`; no name serves the shop.
// The runner invokes a tool's ["tolokaforge", "mcp", ...] command with
// argv[0] replaced by its self executable, so both spellings are accepted.
// The shop's flags are `tolokaforge mcp shop`'s, parsed here because only
// package main parses a command line.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"tolokaforge.io/operator/examples/shop"
	"tolokaforge.io/operator/test/mcpstandin"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	words := args
	if len(words) > 0 && words[0] == "mcp" {
		words = words[1:]
	}
	if len(words) > 0 && !strings.HasPrefix(words[0], "-") {
		if words[0] != "shop" {
			return mcpstandin.Serve(ctx, args, shop.Options{}) // testkit, or refused by name
		}
		words = words[1:]
	}
	var opts shop.Options
	fs := flag.NewFlagSet("mcp shop", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&opts.StatePath, "state", "", "JSON file {products, customers, orders} to start from")
	if err := fs.Parse(words); err != nil {
		return fmt.Errorf("mcp shop: %w", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("mcp shop: unexpected arguments %q", fs.Args())
	}
	return mcpstandin.Serve(ctx, []string{"shop"}, opts)
}
