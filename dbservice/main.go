package dbservice

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"

	"tolokaforge.io/operator/api/authn"
	"tolokaforge.io/operator/api/logging"
)

// Main runs `tolokaforge dbservice`: it serves on --listen until ctx ends.
// Flags: --listen (default 127.0.0.1:8000), --auth-token-file (the trial's
// credential, package authn; default none), --log-level (error, info, debug, or a logr
// verbosity number; default info), and one flag per field of Limits (--max-body-bytes,
// --max-number-digits, ...; defaults in DefaultLimits).
func Main(ctx context.Context, args []string) error {
	return run(ctx, args, os.Stderr)
}

type config struct {
	listen   string
	authFile string
	limits   Limits
	logLevel int
}

// FlagSet is the set of flags Main parses, for the binary's help and its
// generated reference; Main parses its own copy.
func FlagSet() *flag.FlagSet {
	fs, _ := newFlagSet(&config{}, io.Discard)
	return fs
}

func parseFlags(args []string, out io.Writer) (*config, error) {
	cfg := &config{}
	fs, level := newFlagSet(cfg, out)
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("dbservice flags: %w", err)
	}
	return cfg.check(fs, *level)
}

// newFlagSet defines Main's flags on cfg; the level is --log-level's value.
func newFlagSet(cfg *config, out io.Writer) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("dbservice", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&cfg.listen, "listen", "127.0.0.1:8000", "address to serve HTTP on (host:port; port 0 picks a free one)")
	d, l := defaultLimits, &cfg.limits
	fs.Int64Var(&l.MaxBodyBytes, "max-body-bytes", d.MaxBodyBytes, "largest accepted request body in bytes; larger bodies get 413")
	fs.IntVar(&l.MaxNumberDigits, "max-number-digits", d.MaxNumberDigits, "most digits in one number literal of a request body")
	fs.IntVar(&l.MaxOpsPerPatch, "max-operations-per-patch", d.MaxOpsPerPatch, "most operations in one PATCH")
	fs.Int64Var(&l.MaxQueryResponseBytes, "max-query-response-bytes", d.MaxQueryResponseBytes, "largest query response in bytes")
	fs.IntVar(&l.MaxTablesPerTrial, "max-tables-per-trial", d.MaxTablesPerTrial, "most tables in one trial")
	fs.IntVar(&l.MaxRecordsPerTrial, "max-records-per-trial", d.MaxRecordsPerTrial, "most records in one trial's current state")
	fs.Int64Var(&l.MaxTrialBytes, "max-trial-bytes", d.MaxTrialBytes, "most canonical record bytes in one trial's current state")
	fs.IntVar(&l.MaxSnapshotsPerTrial, "max-snapshots-per-trial", d.MaxSnapshotsPerTrial, "most named snapshots in one trial")
	fs.IntVar(&l.MaxTrials, "max-trials", d.MaxTrials, "most trials held by the process")
	fs.Int64Var(&l.MaxTotalBytes, "max-total-bytes", d.MaxTotalBytes, "most canonical record bytes held by all trials together (current, initial and snapshot states)")
	fs.DurationVar(&l.ReadHeaderTimeout, "read-header-timeout", d.ReadHeaderTimeout, "time allowed to read a request's headers")
	fs.DurationVar(&l.BodyReadTimeout, "body-read-timeout", d.BodyReadTimeout, "time allowed to read a request's body; slower bodies get 408")
	fs.StringVar(&cfg.authFile, "auth-token-file", "", "file holding the trial's credential; every request but GET /health must carry it as 'Authorization: Bearer <token>' (default: none, requests are not authenticated)")
	level := fs.String("log-level", "info", "log verbosity: error, info, debug, or a logr V-level number")
	return fs, level
}

// check validates the parsed flags.
func (cfg *config) check(fs *flag.FlagSet, level string) (*config, error) {
	l := &cfg.limits
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("dbservice flags: unexpected arguments %q", fs.Args())
	}
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"max-body-bytes", l.MaxBodyBytes}, {"max-number-digits", int64(l.MaxNumberDigits)},
		{"max-operations-per-patch", int64(l.MaxOpsPerPatch)}, {"max-query-response-bytes", l.MaxQueryResponseBytes},
		{"max-tables-per-trial", int64(l.MaxTablesPerTrial)}, {"max-records-per-trial", int64(l.MaxRecordsPerTrial)},
		{"max-trial-bytes", l.MaxTrialBytes}, {"max-snapshots-per-trial", int64(l.MaxSnapshotsPerTrial)},
		{"max-trials", int64(l.MaxTrials)}, {"max-total-bytes", l.MaxTotalBytes},
		{"read-header-timeout", int64(l.ReadHeaderTimeout)}, {"body-read-timeout", int64(l.BodyReadTimeout)},
	} {
		if f.v <= 0 {
			return nil, fmt.Errorf("dbservice flags: --%s must be positive, got %d", f.name, f.v)
		}
	}
	v, err := logging.ParseLevel(level)
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
	var token string
	if cfg.authFile != "" {
		if token, err = authn.ReadTokenFile(cfg.authFile); err != nil {
			return fmt.Errorf("dbservice: --auth-token-file: %w", err)
		}
	}
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return fmt.Errorf("dbservice: listen on %s: %w", cfg.listen, err)
	}
	srv := New(Options{Limits: cfg.limits, Logger: log, AuthToken: token})
	l := cfg.limits
	log.Info("serving", "address", ln.Addr().String(), "authenticated", token != "", "max_body_bytes", l.MaxBodyBytes,
		"max_number_digits", l.MaxNumberDigits, "max_operations_per_patch", l.MaxOpsPerPatch,
		"max_query_response_bytes", l.MaxQueryResponseBytes, "max_tables_per_trial", l.MaxTablesPerTrial,
		"max_records_per_trial", l.MaxRecordsPerTrial, "max_trial_bytes", l.MaxTrialBytes,
		"max_snapshots_per_trial", l.MaxSnapshotsPerTrial, "max_trials", l.MaxTrials,
		"max_total_bytes", l.MaxTotalBytes, "read_header_timeout", l.ReadHeaderTimeout.String(),
		"body_read_timeout", l.BodyReadTimeout.String())
	if err := srv.Serve(ctx, ln); err != nil {
		return fmt.Errorf("dbservice: %w", err)
	}
	log.Info("stopped")
	return nil
}
