package runner

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"tolokaforge.io/operator/api/authn"
	"tolokaforge.io/operator/api/logging"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/api/telemetry"
	"tolokaforge.io/operator/runner/grading"
	"tolokaforge.io/operator/runner/grading/judge"
	"tolokaforge.io/operator/runner/proc"
)

// Main runs `tolokaforge runner`: it serves RunnerService and grpc.health.v1
// on --listen until ctx ends (SIGTERM in the binary), then drains. Flags:
// --listen (default 127.0.0.1:50051), --db-service-url, --min-engine-protocol
// (default task.EngineProtocolVersion), --work-dir (default the system temp
// dir), --drain-timeout (default 10s), --secrets-dir (default
// judge.DefaultSecretsDir: the judge's key files), --auth-token-file (the
// trial's credential, package authn; default none), --environment-token-env
// (the variable holding a terminal task's exec agent token, read and unset
// at start; default DefaultEnvironmentTokenEnv), --slot (a warm slot's runner:
// CleanupTrial checks the baseline, Config.Slot), --metrics-bind-address
// (Prometheus metrics at /metrics, behind the auth token when there is one;
// default not served), --metrics-token-file (a scraper's token /metrics
// accepts too, never RunnerService), --log-level (error, info, debug or a verbosity number;
// default info). OTEL_EXPORTER_OTLP_ENDPOINT turns tracing on (package
// telemetry). GradeTrial uses grading.New unless MainWith
// is given another Grader.
func Main(ctx context.Context, args []string) error {
	return MainWith(ctx, args, Config{})
}

// MainWith is Main with a base Config (the binary passes its Grader and
// Version); flags override the fields they name.
func MainWith(ctx context.Context, args []string, base Config) error {
	return run(ctx, args, base, os.Stderr, nil)
}

type flags struct {
	listen       string
	dbURL        string
	minProtocol  int
	workDir      string
	drainTimeout time.Duration
	maxTool      time.Duration
	logLevel     int
	secretsDir   string
	authFile     string
	envTokenFile string
	limits       proc.Limits
	launcher     string
	python       string
	envTokenEnv  string
	slot         bool
	metricsAddr  string
	metricsToken string
}

// FlagSet is the set of flags Main parses, for the binary's help and its
// generated reference; Main parses its own copy.
func FlagSet() *flag.FlagSet {
	fs, _ := newFlagSet(&flags{}, io.Discard)
	return fs
}

func parseFlags(args []string, out io.Writer) (*flags, error) {
	f := &flags{}
	fs, level := newFlagSet(f, out)
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("runner flags: %w", err)
	}
	return f.check(fs, *level)
}

// newFlagSet defines Main's flags on f; the level is --log-level's value.
func newFlagSet(f *flags, out io.Writer) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("runner", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&f.listen, "listen", defaultListen, "address to serve gRPC on (host:port; port 0 picks a free one)")
	fs.StringVar(&f.dbURL, "db-service-url", "", "DB service base URL, used when a trial spec names none (e.g. http://127.0.0.1:8000)")
	fs.IntVar(&f.minProtocol, "min-engine-protocol", task.EngineProtocolVersion, "lowest engine_protocol_version RegisterTrial accepts")
	fs.StringVar(&f.workDir, "work-dir", "", "directory for per-trial directories (default: the system temp dir)")
	fs.DurationVar(&f.drainTimeout, "drain-timeout", defaultDrainTimeout, "how long in-flight calls may finish on shutdown before they are cut")
	fs.DurationVar(&f.maxTool, "max-tool-timeout", defaultMaxToolTimeout, "cap on one tool call's budget, whatever the task or the call asks for")
	fs.StringVar(&f.secretsDir, "secrets-dir", judge.DefaultSecretsDir, "directory of mounted secret files; a trial's judge.api_key_env names the judge's key file in it (keys are never read from the environment)")
	fs.StringVar(&f.authFile, "auth-token-file", "", "file holding the trial's credential; every RunnerService call must carry it as 'authorization: Bearer <token>' and the DB client sends it (default: none, calls are not authenticated)")
	d := proc.DefaultLimits
	fs.Uint64Var(&f.limits.AddressSpace, "tool-rlimit-as", d.AddressSpace, "RLIMIT_AS (bytes of address space) of every MCP server process, the test_execution verifier, and their children; 0: unlimited")
	fs.Uint64Var(&f.limits.Processes, "tool-rlimit-nproc", d.Processes, "RLIMIT_NPROC of every MCP server process (counts all processes of the pod's user); 0: unlimited")
	fs.Uint64Var(&f.limits.OpenFiles, "tool-rlimit-nofile", d.OpenFiles, "RLIMIT_NOFILE of every MCP server process; 0: unlimited")
	fs.StringVar(&f.launcher, "tool-launcher", "", "the limits wrapper every tool process starts through: "+proc.LauncherName+", a ~2 MB binary that sets the --tool-rlimit-* limits and execs the tool in about a millisecond (default: "+proc.LauncherName+" beside this binary if there, else this binary itself, which costs ~100 ms of CPU and ~80 MB of memory per tool start); a path that is not an executable file is an error")
	fs.StringVar(&f.python, "python", "python3", "the Python interpreter that runs a pack's Python tools, .py MCP servers and Python custom checks (a name on PATH or a path)")
	fs.StringVar(&f.envTokenFile, "environment-token-file", "", "file holding the bearer token of a terminal task's exec agent (the manager mounts it from the attempt's Secret; it wins over --environment-token-env); never logged")
	fs.StringVar(&f.envTokenEnv, "environment-token-env", DefaultEnvironmentTokenEnv, "environment variable holding the bearer token of a terminal task's exec agent (its own container); read once at start and unset, never logged")
	fs.BoolVar(&f.slot, "slot", false, "serve many trials one after another (a warm slot): CleanupTrial then also checks the runner is back to its baseline (no process below it but other registered trials', no folder in --work-dir but theirs, the temp dir empty when none is left, the trial gone from its DB service) and answers success=false naming what remained")
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", "", "address to serve Prometheus metrics on at /metrics (host:port; default: not served); with --auth-token-file a scrape must carry the same bearer token")
	fs.StringVar(&f.metricsToken, "metrics-token-file", "", "file holding a second bearer token /metrics accepts besides the --auth-token-file one (a Prometheus scraper's, shared by all runners); RunnerService never accepts it; never logged")
	level := fs.String("log-level", "info", "log verbosity: error, info, debug, or a logr V-level number")
	return fs, level
}

// check validates the parsed flags.
func (f *flags) check(fs *flag.FlagSet, level string) (*flags, error) {
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("runner flags: unexpected arguments %q", fs.Args())
	}
	if f.minProtocol < 1 || f.minProtocol > 1<<30 {
		return nil, fmt.Errorf("runner flags: --min-engine-protocol must be >= 1, got %d", f.minProtocol)
	}
	if f.drainTimeout <= 0 {
		return nil, fmt.Errorf("runner flags: --drain-timeout must be positive, got %s", f.drainTimeout)
	}
	if f.maxTool <= 0 {
		return nil, fmt.Errorf("runner flags: --max-tool-timeout must be positive, got %s", f.maxTool)
	}
	if l := f.limits; (l.AddressSpace != 0 && l.AddressSpace < 32<<20) || (l.OpenFiles != 0 && l.OpenFiles < 16) || (l.Processes != 0 && l.Processes < 8) {
		return nil, fmt.Errorf("runner flags: tool limits too small to start a tool (%s); want 0 (unlimited) or at least RLIMIT_AS=%d RLIMIT_NPROC=8 RLIMIT_NOFILE=16", l, 32<<20)
	}
	if f.dbURL != "" && !strings.HasPrefix(f.dbURL, "http://") && !strings.HasPrefix(f.dbURL, "https://") {
		return nil, fmt.Errorf("runner flags: --db-service-url %q: want an http:// or https:// URL", f.dbURL)
	}
	v, err := logging.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("runner flags: %w", err)
	}
	f.logLevel = v
	return f, nil
}

// run is Main with its outputs injectable; ready, when non-nil, receives the
// bound address once the server listens.
func run(ctx context.Context, args []string, base Config, logOut io.Writer, ready chan<- string) error {
	f, err := parseFlags(args, logOut)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	cfg := base
	cfg.DBServiceURL = f.dbURL
	cfg.MinEngineProtocol = int32(f.minProtocol)
	cfg.WorkDir = f.workDir
	cfg.Slot = cfg.Slot || f.slot
	cfg.DrainTimeout = f.drainTimeout
	cfg.MaxToolTimeout = f.maxTool
	cfg.ToolLimits = f.limits
	if f.launcher != "" {
		cfg.ToolLauncher = f.launcher
	}
	if cfg.Python == "" {
		cfg.Python = f.python
	}
	if cfg.Logger.GetSink() == nil {
		cfg.Logger = logging.New(logOut, f.logLevel).WithName("runner")
	}
	if f.envTokenEnv != "" {
		// The exec agent's token comes in the environment; no child of the
		// runner (tools, verifier) may inherit it.
		if tok := os.Getenv(f.envTokenEnv); tok != "" && cfg.EnvironmentToken == "" {
			cfg.EnvironmentToken = tok
		}
		if err := os.Unsetenv(f.envTokenEnv); err != nil {
			return fmt.Errorf("runner: unset %s: %w", f.envTokenEnv, err)
		}
	}
	if f.envTokenFile != "" {
		tok, err := authn.ReadTokenFile(f.envTokenFile)
		if err != nil {
			return fmt.Errorf("runner: --environment-token-file: %w", err)
		}
		cfg.EnvironmentToken = tok
	}
	if f.authFile != "" {
		tok, err := authn.ReadTokenFile(f.authFile)
		if err != nil {
			return fmt.Errorf("runner: --auth-token-file: %w", err)
		}
		cfg.AuthToken = tok
	}
	if f.metricsToken != "" {
		tok, err := authn.ReadTokenFile(f.metricsToken)
		if err != nil {
			return fmt.Errorf("runner: --metrics-token-file: %w", err)
		}
		cfg.MetricsToken = tok
	}
	if cfg.Grader == nil {
		cfg.Grader = grading.New(grading.WithLogger(cfg.Logger.WithName("grading")), grading.WithSecretsDir(f.secretsDir), grading.WithVerifierLimits(f.limits))
	}
	if cfg.TracerProvider == nil {
		// OTEL_EXPORTER_OTLP_ENDPOINT turns tracing on; unset, nothing is traced.
		tp, shutdown, err := telemetry.Tracing(ctx, "tolokaforge-runner")
		if err != nil {
			return fmt.Errorf("runner: %w", err)
		}
		defer flushTraces(shutdown, cfg.Logger)
		if tp != nil {
			cfg.TracerProvider = tp
		}
	}
	srv, err := New(cfg)
	if err != nil {
		return fmt.Errorf("runner: %w", err)
	}
	if f.metricsAddr != "" {
		stop, err := serveMetrics(f.metricsAddr, srv.MetricsHandler(), cfg.Logger)
		if err != nil {
			return fmt.Errorf("runner: %w", err)
		}
		defer stop()
	}
	lis, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("runner: listen on %s: %w", f.listen, err)
	}
	if ready != nil {
		ready <- lis.Addr().String()
	}
	if err := srv.Serve(ctx, lis); err != nil {
		return fmt.Errorf("runner: %w", err)
	}
	return nil
}
