// Command fakellm serves a fake OpenAI-compatible provider (test/fakellm)
// replaying a script file until interrupted, printing its base URL once
// listening:
//
//	go run ./test/fakellm/cmd/fakellm --script replies.yaml [--listen ADDR]
//	    [--api-key-env VAR] [--lenient]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"

	"tolokaforge.io/operator/test/fakellm"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, logr.Discard()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer, log logr.Logger) error {
	fs := flag.NewFlagSet("fakellm", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on")
	script := fs.String("script", "", "script file (JSON or YAML); empty serves an empty script")
	apiKey := fs.String("api-key-env", "", "name of an environment variable holding the API key to require")
	lenient := fs.Bool("lenient", false, "accept conversations the real API rejects")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("fakellm: %w", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("fakellm: unexpected argument %q", fs.Arg(0))
	}
	var cfg fakellm.Config
	if *script != "" {
		sf, err := fakellm.LoadScript(*script)
		if err != nil {
			return fmt.Errorf("fakellm: %w", err)
		}
		cfg = sf.Config()
	}
	if *apiKey != "" {
		cfg.APIKey = os.Getenv(*apiKey)
		if cfg.APIKey == "" {
			return fmt.Errorf("fakellm: --api-key-env %s: variable is empty or unset", *apiKey)
		}
	}
	cfg.Lenient = *lenient
	cfg.Log = log
	return fakellm.Serve(ctx, cfg, *listen, stdout)
}
