// Command fakellm serves a fake OpenAI-compatible provider (test/fakellm)
// replaying a script file until interrupted, printing its base URL once
// listening:
//
//	go run ./test/fakellm/cmd/fakellm --script replies.yaml [--listen ADDR]
//	    [--api-key-env VAR] [--lenient] [--otlp-listen ADDR]
//
// With --otlp-listen it also receives OpenTelemetry traces over OTLP/gRPC
// on ADDR (point a program's OTEL_EXPORTER_OTLP_ENDPOINT at
// http://<host>:<port>) and lists the spans it kept on the provider's own
// port at GET /otlp/traces[?trace_id=<32 hex digits>], as
// {"spans":[{"trace_id","span_id","parent_span_id","name","service_name"}]};
// it prints "fakellm OTLP receiver listening on <host:port>" first.
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
	otlpListen := fs.String("otlp-listen", "", "address of an OTLP/gRPC trace receiver whose spans GET /otlp/traces lists (default: none)")
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
	if *otlpListen != "" {
		sink := &fakellm.TraceSink{}
		if err := sink.Start(*otlpListen); err != nil {
			return fmt.Errorf("fakellm: --otlp-listen: %w", err)
		}
		defer sink.Close()
		_, _ = fmt.Fprintf(stdout, "fakellm OTLP receiver listening on %s\n", sink.Addr())
		cfg.Traces = sink
	}
	return fakellm.Serve(ctx, cfg, *listen, stdout)
}
