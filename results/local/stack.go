package local

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel/trace"

	"tolokaforge.io/operator/api/authn"
	"tolokaforge.io/operator/dbservice"
	"tolokaforge.io/operator/runner"
	"tolokaforge.io/operator/runner/client"
	"tolokaforge.io/operator/runner/grading"
	"tolokaforge.io/operator/runner/pyenv"
)

// StackConfig configures the in-process services.
type StackConfig struct {
	// SelfExecutable resolves "tolokaforge" in MCP commands (default
	// os.Executable()).
	SelfExecutable string
	// WorkDir holds the runner's per-trial directories (default a fresh
	// temporary directory, removed by Stop).
	WorkDir string
	// MinEngineProtocol is the runner's version lock (0: the runner's default).
	MinEngineProtocol int32
	// ReadyTimeout bounds the wait for the runner's health (default 30s).
	ReadyTimeout time.Duration
	// SecretsDir is where the runner's judge reads its key file (TrialSpec.judge
	// .api_key_env names a file in it), as the runner pod's --secrets-dir; empty keeps
	// the grader's default.
	SecretsDir string
	// Python runs a pack's Python tools and checks (the runner's --python);
	// empty: $TOLOKAFORGE_PYTHON, else python3 on PATH when it has what `make
	// python-deps` provisions, else Debian's /usr/bin/python3 when that has it.
	Python string
	Log    logr.Logger
	// LandlockABI says which Landlock ABI the kernel offers (nil:
	// proc.LandlockABI); tests fake a kernel without it.
	LandlockABI func() (int, error)
	// TracerProvider traces the runner's RPCs (runner.Config.TracerProvider);
	// nil: untraced.
	TracerProvider trace.TracerProvider
}

// python is the interpreter the stack's runner uses: --python, else
// $TOLOKAFORGE_PYTHON, else the first of python3 on PATH and Debian's that has
// what `make python-deps` provisions (runner/pyenv.Choose).
func (cfg StackConfig) python() string {
	return pyenv.Choose(context.Background(), cfg.Python, os.Getenv(PythonEnv), pyenv.Provisioned)
}

// PythonEnv names the environment variable that picks the local stack's
// Python when no --python is given: CI and tests point it at Debian's
// interpreter, whose packages (pydantic, yaml) pack tools import.
const PythonEnv = "TOLOKAFORGE_PYTHON"

// Stack is a DB service and a runner served on loopback, with a client
// connected to the runner.
type Stack struct {
	DBServiceURL string
	RunnerAddr   string
	Runner       *client.Client
	// Python is the interpreter the stack's runner runs a pack's Python with.
	Python string
	// Token is the stack's credential: the runner and the DB service refuse
	// calls without it (Runner already sends it).
	Token string
	// Warnings are what the runner cannot enforce on this machine (no
	// Landlock: runner.ConfinementWarning), for the CLI to show its user.
	Warnings []string

	stopOnce sync.Once
	stop     func() error
	stopErr  error
}

// StartStack serves a DB service and a runner (with the grading engine) on
// 127.0.0.1 ports the kernel picks, and waits until the runner is SERVING.
// Stop ends both and waits for them.
func StartStack(ctx context.Context, cfg StackConfig) (*Stack, error) {
	log := cfg.Log
	if log.GetSink() == nil {
		log = logr.Discard()
	}
	cfg, removeWork, err := withStackDefaults(cfg)
	if err != nil {
		return nil, err
	}
	cfg.Python = cfg.python() // chosen once, probing at most two interpreters
	sv := newServices(ctx, cfg.WorkDir, removeWork)
	fail := func(err error) (*Stack, error) {
		sv.abort()
		return nil, err
	}

	// The in-process stack authenticates like a cluster attempt does (a
	// fresh token, held in memory only), so `trial run` exercises the same
	// code path and other local users cannot drive its loopback ports.
	token, err := authn.NewToken()
	if err != nil {
		return fail(fmt.Errorf("start stack: %w", err))
	}
	dbURL, err := sv.serveDB(log, token)
	if err != nil {
		return fail(err)
	}
	addr, err := sv.serveRunner(cfg, dbURL, token, log)
	if err != nil {
		return fail(err)
	}
	c, err := connectRunner(ctx, addr, token, cfg.ReadyTimeout)
	if err != nil {
		return fail(err)
	}
	s := &Stack{DBServiceURL: dbURL, RunnerAddr: addr, Runner: c, Token: token, Python: cfg.Python}
	if w := runner.ConfinementWarning(cfg.LandlockABI); w != "" {
		s.Warnings = append(s.Warnings, w)
	}
	s.stop = func() error { return sv.shutdown(c) }
	return s, nil
}

// withStackDefaults fills what cfg leaves out; removeWork says the work
// directory is the stack's own, to remove when it stops.
func withStackDefaults(cfg StackConfig) (_ StackConfig, removeWork bool, _ error) {
	if cfg.SelfExecutable == "" {
		exe, err := os.Executable()
		if err != nil {
			return cfg, false, fmt.Errorf("start stack: resolve own executable: %w", err)
		}
		cfg.SelfExecutable = exe
	}
	if cfg.WorkDir == "" {
		dir, err := os.MkdirTemp("", "tolokaforge-trial-")
		if err != nil {
			return cfg, false, fmt.Errorf("start stack: %w", err)
		}
		cfg.WorkDir, removeWork = dir, true
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = 30 * time.Second
	}
	return cfg, removeWork, nil
}

// services are the stack's serving goroutines: they live until end, which
// is detached from the caller's ctx so a canceled trial still shuts its
// stack down in order.
type services struct {
	life       context.Context
	end        context.CancelFunc
	wg         sync.WaitGroup
	errs       chan error
	workDir    string
	removeWork bool
}

func newServices(ctx context.Context, workDir string, removeWork bool) *services {
	life, end := context.WithCancel(context.WithoutCancel(ctx))
	return &services{life: life, end: end, errs: make(chan error, 2), workDir: workDir, removeWork: removeWork}
}

// serve runs one server on ln until the stack ends; its error is reported
// by shutdown.
func (sv *services) serve(name string, ln net.Listener, serve func(context.Context, net.Listener) error) {
	sv.wg.Add(1)
	go func() {
		defer sv.wg.Done()
		if err := serve(sv.life, ln); err != nil {
			sv.errs <- fmt.Errorf("%s: %w", name, err)
		}
	}()
}

// serveDB starts the DB service and returns its URL.
func (sv *services) serveDB(log logr.Logger, token string) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("start stack: DB service listen: %w", err)
	}
	db := dbservice.New(dbservice.Options{Logger: log.WithName("dbservice"), AuthToken: token})
	sv.serve("DB service", ln, db.Serve)
	return "http://" + ln.Addr().String(), nil
}

// serveRunner starts the runner with the grading engine and returns its
// address.
func (sv *services) serveRunner(cfg StackConfig, dbURL, token string, log logr.Logger) (string, error) {
	gradingOpts := []grading.Option{grading.WithLogger(log.WithName("grading"))}
	if cfg.SecretsDir != "" {
		gradingOpts = append(gradingOpts, grading.WithSecretsDir(cfg.SecretsDir))
	}
	srv, err := runner.New(runner.Config{
		DBServiceURL:      dbURL,
		MinEngineProtocol: cfg.MinEngineProtocol,
		WorkDir:           cfg.WorkDir,
		SelfExecutable:    cfg.SelfExecutable,
		Grader:            grading.New(gradingOpts...),
		Version:           "local",
		Logger:            log.WithName("runner"),
		AuthToken:         token,
		Python:            cfg.python(),
		LandlockABI:       cfg.LandlockABI,
		TracerProvider:    cfg.TracerProvider,
	})
	if err != nil {
		return "", fmt.Errorf("start stack: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("start stack: runner listen: %w", err)
	}
	sv.serve("runner", ln, srv.Serve)
	return ln.Addr().String(), nil
}

// connectRunner dials the runner and waits until it is SERVING.
func connectRunner(ctx context.Context, addr, token string, ready time.Duration) (*client.Client, error) {
	c, err := client.Dial(ctx, addr, client.WithToken(token))
	if err != nil {
		return nil, fmt.Errorf("start stack: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, ready)
	defer cancel()
	if err := c.WaitReady(wctx); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("start stack: %w", err)
	}
	return c, nil
}

// abort ends a stack that did not start.
func (sv *services) abort() {
	sv.end()
	sv.wg.Wait()
	if sv.removeWork {
		_ = os.RemoveAll(sv.workDir)
	}
}

// shutdown closes the client, ends the servers, waits for them and
// collects every error on the way.
func (sv *services) shutdown(c *client.Client) error {
	cerr := c.Close()
	sv.end()
	sv.wg.Wait()
	close(sv.errs)
	var all []error
	for e := range sv.errs {
		all = append(all, e)
	}
	if sv.removeWork {
		if err := os.RemoveAll(sv.workDir); err != nil {
			all = append(all, err)
		}
	}
	if cerr != nil {
		all = append(all, fmt.Errorf("close runner client: %w", cerr))
	}
	return errors.Join(all...)
}

// Stop shuts the runner (which cleans up its trials) and the DB service
// down and waits for them. Safe to call more than once.
func (s *Stack) Stop() error {
	s.stopOnce.Do(func() { s.stopErr = s.stop() })
	return s.stopErr
}
