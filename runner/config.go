package runner

import (
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel/trace"

	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner/grading"
	"tolokaforge.io/operator/runner/proc"
	"tolokaforge.io/operator/runner/tools/builtin"
)

// Config configures a runner. The zero value is usable: defaults are filled by
// New.
type Config struct {
	// DBServiceURL is used when a TrialSpec's env_endpoints.db_service_url is
	// empty, and is what HealthCheck probes.
	DBServiceURL string
	// MinEngineProtocol is the lowest engine_protocol_version RegisterTrial
	// accepts (default task.EngineProtocolVersion).
	MinEngineProtocol int32
	// WorkDir holds one directory per trial (default os.TempDir()).
	WorkDir string
	// Slot makes the runner a warm slot's (`--slot`): it serves many trials
	// one after another, so CleanupTrial, after the trial's teardown, also
	// checks the runner is back to its baseline (no process below it, no
	// folder in WorkDir and, with no trial left, nothing in TempDir that a
	// registered trial does not own; the trial gone from its DB service) and
	// answers success = false naming what remained: such a slot is replaced,
	// never reused.
	Slot bool
	// TempDir is the runner's temp directory the slot check wants empty once
	// no trial is registered (default os.TempDir(): /tmp in a pod).
	TempDir string
	// SelfExecutable replaces an MCP command's argv[0] "tolokaforge"
	// (default os.Executable()).
	SelfExecutable string
	// Grader computes grades; nil makes GradeTrial answer
	// "Grading error: no grader configured".
	Grader grading.Grader
	// Version is what HealthCheck reports (default "dev").
	Version string
	// DrainTimeout bounds GracefulStop on shutdown before in-flight RPCs are
	// cut (default 10 s).
	DrainTimeout time.Duration
	// DBConnectWait is how long a registration's first DB service requests
	// are retried while their connection is refused before it was sent: the
	// DB service is Ready, but a NetworkPolicy implementation may admit this
	// runner's connections to it a moment later (default 15 s; negative:
	// no wait).
	DBConnectWait time.Duration
	// MaxToolTimeout caps every tool call's budget, whatever the task's
	// timeout_s, the trial default or the call's override ask for (default
	// defaultMaxToolTimeout): a pack cannot hold a runner slot for a day.
	MaxToolTimeout time.Duration
	// ExtraBuiltins are compiled-in tools in addition to package builtin's; a
	// name here shadows a catalog tool of the same name. Embedders and tests
	// use it to add tools without an MCP server.
	ExtraBuiltins []builtin.Builtin
	// ToolLimits are the rlimits every stdio MCP server (and whatever it
	// starts) runs under; zero: none (the runner binary's flags default to
	// proc.DefaultLimits).
	ToolLimits proc.Limits
	// ToolLauncher is the small limits wrapper tools start through
	// (tolokaforge-toolexec); empty: the one beside the running binary, else
	// the running binary itself. A path that is not an executable file fails
	// New. It is process-wide (proc.SetLauncher): runners sharing a process
	// share it.
	ToolLauncher string
	// Python is the interpreter that runs pack Python (tau_sync / mcp_async
	// tools, a pack's .py MCP server, Python custom checks); empty: "python3"
	// on PATH. Tests point it at Debian's /usr/bin/python3.
	Python string
	// MCPEnv is added to every MCP server's minimal environment (KEY=VALUE),
	// before the tool source's own env.
	MCPEnv []string
	// testToolReadWrite are folders outside any trial that every stdio MCP
	// server may also write: set only by this package's tests
	// (export_test.go), whose fixtures report pids through a file that
	// must outlive a failed registration's trial folder.
	testToolReadWrite []string
	// HTTPClient talks to DB services (default: a pooled client sized for many
	// concurrent trials).
	HTTPClient *http.Client
	// Logger receives structured logs (default logr.Discard()).
	Logger logr.Logger
	// TracerProvider, when set, traces every RPC: a server span per call,
	// the child of the caller's span when the call's metadata carries W3C
	// trace context (the host sends it), and the judge's model calls under
	// GradeTrial's. Nil: no tracing and no per-call cost.
	TracerProvider trace.TracerProvider
	// LandlockABI says which Landlock ABI the kernel offers (nil:
	// proc.LandlockABI); the runner reports it on every registration
	// (runnerpb.ConfinementTrailer). Tests fake a kernel without Landlock.
	LandlockABI func() (int, error)
	// AuthToken is the trial's credential (package authn): every
	// RunnerService call must present it; grpc.health.v1 stays open. Empty
	// disables the check (a runner started by hand). Never logged.
	AuthToken string
	// DBAuthToken is what the runner presents to DB services; empty means
	// AuthToken (the one per-trial Secret is mounted into both pods).
	DBAuthToken string
	// MetricsToken is a second bearer token /metrics accepts besides
	// AuthToken: the scraper's, the same for every runner, which gRPC never
	// accepts (a PodMonitor cannot know each pod's AuthToken). Never logged.
	MetricsToken string
	// EnvironmentToken is the bearer token of a terminal task's exec agent
	// (distinct from AuthToken: the environment's pod is the agent's
	// container). Required to register a trial whose task has an
	// environment, unless its registration carries one in its metadata
	// (runnerpb.EnvironmentTokenMetadata), which wins; a Slot runner uses
	// only that. Never logged.
	EnvironmentToken string
	// EnvironmentPaths are the paths in a terminal task's container the
	// verifier uses (Harbor's /tests, /logs/verifier, /solution when
	// empty); tests whose exec agent runs on their own machine point them
	// at a temporary directory.
	EnvironmentPaths grading.EnvironmentPaths
	// EnvironmentWait bounds how long a registration waits for the exec
	// agent's Health when its context has no deadline (default 60 s).
	EnvironmentWait time.Duration
}

// DBToken is the credential the runner's DB client sends.
func (c *Config) DBToken() string {
	if c.DBAuthToken != "" {
		return c.DBAuthToken
	}
	return c.AuthToken
}

// Defaults.
const (
	defaultListen       = "127.0.0.1:50051"
	defaultDrainTimeout = 10 * time.Second
	// defaultDBConnectWait covers kube-router's lag in e2e with room.
	defaultDBConnectWait = 15 * time.Second
	// defaultMaxToolTimeout is the longest one tool call may run.
	defaultMaxToolTimeout = 10 * time.Minute
	// defaultEnvironmentWait bounds waiting for a terminal task's exec agent.
	defaultEnvironmentWait = 60 * time.Second
	// maxMessageBytes matches the Python runner's 50 MiB gRPC limit with room
	// for large initial states.
	maxMessageBytes = 64 << 20
)

func (c *Config) withDefaults() (Config, error) {
	out := *c
	if out.MinEngineProtocol == 0 {
		out.MinEngineProtocol = task.EngineProtocolVersion
	}
	if out.MinEngineProtocol < 0 {
		return out, fmt.Errorf("minimum engine protocol must be >= 0, got %d", out.MinEngineProtocol)
	}
	if out.WorkDir == "" {
		out.WorkDir = os.TempDir()
	}
	if err := os.MkdirAll(out.WorkDir, 0o755); err != nil {
		return out, fmt.Errorf("work dir: %w", err)
	}
	if out.TempDir == "" {
		out.TempDir = os.TempDir()
	}
	if out.SelfExecutable == "" {
		exe, err := os.Executable()
		if err != nil {
			return out, fmt.Errorf("resolve own executable: %w", err)
		}
		out.SelfExecutable = exe
	}
	if out.Version == "" {
		out.Version = "dev"
	}
	if out.DrainTimeout <= 0 {
		out.DrainTimeout = defaultDrainTimeout
	}
	if out.DBConnectWait == 0 {
		out.DBConnectWait = defaultDBConnectWait
	}
	if out.MaxToolTimeout <= 0 {
		out.MaxToolTimeout = defaultMaxToolTimeout
	}
	if out.HTTPClient == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		// One runner drives many trials against one DB service; the default
		// two idle connections per host would churn sockets under load.
		t.MaxIdleConns = 512
		t.MaxIdleConnsPerHost = 256
		out.HTTPClient = &http.Client{Transport: t, Timeout: 60 * time.Second}
	}
	if out.Logger.GetSink() == nil {
		out.Logger = logr.Discard()
	}
	out.EnvironmentPaths = out.EnvironmentPaths.WithDefaults()
	if out.EnvironmentWait <= 0 {
		out.EnvironmentWait = defaultEnvironmentWait
	}
	return out, nil
}
