// Command shopserver is the shop MCP server as a standalone binary for the
// mcpclient tests (the runner binary wires the same shop.Main as `tolokaforge mcp shop`).
package main

import (
	"context"
	"fmt"
	"os"

	"tolokaforge.io/operator/examples/shop"
)

func main() {
	if err := shop.Main(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
