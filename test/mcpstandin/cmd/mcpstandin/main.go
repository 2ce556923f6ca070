// Command mcpstandin is the test stand-in MCP server as a small binary:
// `mcpstandin [mcp] shop|testkit [flags]`; no name serves the shop.
// The runner invokes a tool's ["tolokaforge", "mcp", ...] command with
// argv[0] replaced by its self executable, so both spellings are accepted.
package main

import (
	"context"
	"fmt"
	"os"

	"tolokaforge.io/operator/test/mcpstandin"
)

func main() {
	if err := mcpstandin.Serve(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
