// Command shopbin stands in for the tolokaforge binary in grading's end-to-end test:
// the shop task's MCP command ["tolokaforge", "mcp", "shop"] resolves to it
// (runner.Config.SelfExecutable) and serves the shop domain over stdio.
package main

import (
	"context"
	"fmt"
	"os"

	"tolokaforge.io/operator/examples/shop"
)

func main() {
	args := os.Args[1:]
	if len(args) < 2 || args[0] != "mcp" || args[1] != "shop" {
		fmt.Fprintf(os.Stderr, "shopbin: usage: shopbin mcp shop [flags], got %q\n", args)
		os.Exit(2)
	}
	if err := shop.Main(context.Background(), args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "shopbin:", err)
		os.Exit(1)
	}
}
