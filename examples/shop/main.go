package shop

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Main serves the shop over MCP on stdin/stdout until stdin closes or ctx ends
// (`tolokaforge mcp shop [--state FILE]`). Without --state the tables are empty until
// the runner calls _tolokaforge_set_state_. Diagnostics go to stderr; stdout carries
// only the protocol.
func Main(ctx context.Context, args []string) error {
	return run(ctx, args, &mcp.StdioTransport{}, os.Stderr)
}

func run(ctx context.Context, args []string, transport mcp.Transport, stderr io.Writer) error {
	fs := flag.NewFlagSet("tolokaforge mcp shop", flag.ContinueOnError)
	fs.SetOutput(stderr)
	statePath := fs.String("state", "", "JSON file {products, customers, orders} to start from (default: empty until "+SetStateTool+")")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("mcp shop: %w", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("mcp shop: unexpected arguments %q", fs.Args())
	}
	var st State
	if *statePath != "" {
		data, err := os.ReadFile(*statePath)
		if err != nil {
			return fmt.Errorf("mcp shop: --state: %w", err)
		}
		if st, err = ParseState(data); err != nil {
			return fmt.Errorf("mcp shop: --state %s: %w", *statePath, err)
		}
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	sizes := st.tableSizes()
	fmt.Fprintf(stderr, "shop: serving MCP on stdio (products=%d customers=%d orders=%d)\n",
		sizes[tableProducts], sizes[tableCustomers], sizes[tableOrders])
	err := newServer(st, logger).Run(ctx, transport)
	switch {
	case err == nil, errors.Is(err, io.EOF):
		return nil // the client closed stdin: the normal end of a session
	case ctx.Err() != nil:
		return nil
	}
	return fmt.Errorf("mcp shop: %w", err)
}
