package dbservice

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"

	"tolokaforge.io/operator/api/logging"
)

// Main runs `tolokaforge dbservice`: it serves on --listen until ctx ends.
// Flags: --listen (default 127.0.0.1:8000), --max-body-bytes (default 64 MiB),
// --log-level (error, info, debug, or a logr verbosity number; default info).
func Main(ctx context.Context, args []string) error {
	return run(ctx, args, os.Stderr)
}

type config struct {
	listen   string
	maxBody  int64
	logLevel int
}

func parseFlags(args []string, out io.Writer) (*config, error) {
	fs := flag.NewFlagSet("dbservice", flag.ContinueOnError)
	fs.SetOutput(out)
	cfg := &config{}
	fs.StringVar(&cfg.listen, "listen", "127.0.0.1:8000", "address to serve HTTP on (host:port; port 0 picks a free one)")
	fs.Int64Var(&cfg.maxBody, "max-body-bytes", DefaultMaxBodyBytes, "largest accepted request body in bytes; larger bodies get 413")
	level := fs.String("log-level", "info", "log verbosity: error, info, debug, or a logr V-level number")
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("dbservice flags: %w", err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("dbservice flags: unexpected arguments %q", fs.Args())
	}
	if cfg.maxBody <= 0 {
		return nil, fmt.Errorf("dbservice flags: --max-body-bytes must be positive, got %d", cfg.maxBody)
	}
	v, err := logging.ParseLevel(*level)
	if err != nil {
		return nil, fmt.Errorf("dbservice flags: %w", err)
	}
	cfg.logLevel = v
	return cfg, nil
}

func run(ctx context.Context, args []string, logOut io.Writer) error {
	cfg, err := parseFlags(args, logOut)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	log := logging.New(logOut, cfg.logLevel).WithName("dbservice")
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return fmt.Errorf("dbservice: listen on %s: %w", cfg.listen, err)
	}
	srv := New(Options{MaxBodyBytes: cfg.maxBody, Logger: log})
	log.Info("serving", "address", ln.Addr().String(), "max_body_bytes", cfg.maxBody)
	if err := srv.Serve(ctx, ln); err != nil {
		return fmt.Errorf("dbservice: %w", err)
	}
	log.Info("stopped")
	return nil
}
