package shop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options shape a served shop. The command line that fills them
// (`tolokaforge mcp shop [--state FILE]`) is parsed by the binary's root, so
// the messages below still name the flag a user typed.
type Options struct {
	// StatePath is a JSON file {products, customers, orders} to start from;
	// empty starts with empty tables until the runner calls SetStateTool.
	StatePath string
}

// Main serves the shop over MCP on stdin/stdout until stdin closes or ctx ends
// (`tolokaforge mcp shop [--state FILE]`). Without a state file the tables are
// empty until the runner calls _tolokaforge_set_state_. Diagnostics go to
// stderr; stdout carries only the protocol.
func Main(ctx context.Context, opts Options) error {
	return run(ctx, opts, &mcp.StdioTransport{}, os.Stderr)
}

func run(ctx context.Context, opts Options, transport mcp.Transport, stderr io.Writer) error {
	var st State
	if opts.StatePath != "" {
		data, err := os.ReadFile(opts.StatePath)
		if err != nil {
			return fmt.Errorf("mcp shop: --state: %w", err)
		}
		if st, err = parseState(data); err != nil {
			return fmt.Errorf("mcp shop: --state %s: %w", opts.StatePath, err)
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
