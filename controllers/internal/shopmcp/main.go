// Command shopmcp serves the shop domain's MCP server on stdio, as
// `tolokaforge mcp shop` does. The envtest benchmark points its in-process
// runners at this small binary rather than re-executing the test binary for
// every trial's tool server.
package main

import (
	"context"
	"fmt"
	"os"

	"tolokaforge.io/operator/examples/shop"
)

func main() {
	args := os.Args[1:]
	// Accept both `shopmcp` and `shopmcp mcp shop ...`: the runner invokes the
	// tool's command with argv[0] replaced.
	if len(args) >= 2 && args[0] == "mcp" && args[1] == "shop" {
		args = args[2:]
	}
	if err := shop.Main(context.Background(), args); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
