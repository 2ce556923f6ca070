package envtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"tolokaforge.io/operator/controllers"
	"tolokaforge.io/operator/controllers/manager"
	"tolokaforge.io/operator/dbservice"
	"tolokaforge.io/operator/runner"
	"tolokaforge.io/operator/runner/grading"
	"tolokaforge.io/operator/test/envtest/controlplane"
	"tolokaforge.io/operator/test/podsim"
	"tolokaforge.io/operator/test/toollauncher"
)

// Image is the --image of the test managers; the simulator maps every image
// to the in-process servers.
const Image = "tolokaforge:test"

// EnvironmentImage is the image a terminal task's environment names in
// envtest: the simulator runs it as the real exec agent (built by Start) in
// a process of its own, so its KillAll reaches only what it started, never
// the control plane or the in-process runners. Its commands run on this
// machine; the runners point the verifier's paths at a directory of their
// own (runRunner), never at /tests.
const EnvironmentImage = "tolokaforge-envtest/environment:test"

// AssetsMissing says why an envtest suite cannot run here, or "".
func AssetsMissing() string {
	if runtime.GOOS != "linux" {
		return "the pod simulator binds 127.0.0.x addresses, which needs Linux"
	}
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		return "KUBEBUILDER_ASSETS is not set: the envtest suites need kube-apiserver and etcd " +
			"(export KUBEBUILDER_ASSETS=$(hack/build-envtest.sh), an absolute path)"
	}
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return fmt.Sprintf("KUBEBUILDER_ASSETS=%s has no %s: %v", dir, b, err)
		}
	}
	return ""
}

// Options shape an Env.
type Options struct {
	// CRDDir holds the CRDs (default: config/crd/bases of the module the
	// working directory is in).
	CRDDir string
	// APIServerFlags are extra kube-apiserver flags (controlplane.Options).
	APIServerFlags map[string]string
	// SimWorkers, ProbeInterval and KillGrace are the simulator's.
	SimWorkers    int
	ProbeInterval time.Duration
	KillGrace     time.Duration
	// Self is the runners' SelfExecutable: what an MCP command
	// ["tolokaforge", ...] runs. Default: the test binary, whose TestMain
	// serves `mcp shop` through test/mcpstandin.
	Self string
}

// Env is a control plane, a client of it, and the pod simulator running the
// runner and the DB service in process. Managers are started separately.
type Env struct {
	Control *crenvtest.Environment
	Config  *rest.Config
	Client  client.WithWatch
	Sim     *podsim.Simulator
	// Work holds the runners' work directories and the managers' artifacts.
	Work string
	// Self is the runners' SelfExecutable; set it before pods start.
	Self string
	// ToolLauncher is the runners' limits wrapper (tolokaforge-toolexec),
	// built into Work by Start: tools start as in production, not through a
	// re-executed 100 MB test binary, so benchmarks measure the real cost.
	ToolLauncher string
	// RunnerArgs holds extra runner flags per namespace ([]string; the
	// version-skew specs' --min-engine-protocol).
	RunnerArgs sync.Map

	stopSim context.CancelFunc
	simDone chan error
}

// Start starts the control plane and the simulator. On error everything
// started is stopped again.
func Start(o Options) (_ *Env, err error) {
	if why := AssetsMissing(); why != "" {
		return nil, errors.New(why)
	}
	e := &Env{Self: o.Self}
	defer func() {
		if err != nil {
			err = errors.Join(err, e.Stop())
		}
	}()
	if e.Self == "" {
		if e.Self, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("envtest: the test binary: %w", err)
		}
	}
	if e.Work, err = os.MkdirTemp("", "tolokaforge-envtest-"); err != nil {
		return nil, fmt.Errorf("envtest: work dir: %w", err)
	}
	if e.ToolLauncher, err = toollauncher.Build(e.Work); err != nil {
		return nil, fmt.Errorf("envtest: %w", err)
	}
	cp, err := controlplane.Start(controlplane.Options{CRDs: true, CRDDir: o.CRDDir, APIServerFlags: o.APIServerFlags})
	if err != nil {
		return nil, fmt.Errorf("start envtest: %w", err)
	}
	e.Control, e.Config = cp.Environment, cp.Config
	scheme, err := manager.Scheme()
	if err != nil {
		return nil, err
	}
	if e.Client, err = client.NewWithWatch(e.Config, client.Options{Scheme: scheme}); err != nil {
		return nil, fmt.Errorf("envtest: client: %w", err)
	}
	environment, err := buildEnvironment(e.Work)
	if err != nil {
		return nil, fmt.Errorf("envtest: %w", err)
	}
	e.Sim, err = podsim.New(podsim.Config{
		InProcess: map[string]podsim.InProcessFunc{
			"runner":    e.runRunner,
			"dbservice": runDBService,
		},
		Binaries:      map[string]string{EnvironmentImage: environment},
		Workers:       o.SimWorkers,
		ProbeInterval: o.ProbeInterval,
		KillGrace:     o.KillGrace,
	}, e.Config, logr.Discard())
	if err != nil {
		return nil, fmt.Errorf("envtest: pod simulator: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.stopSim, e.simDone = cancel, make(chan error, 1)
	go func() { e.simDone <- e.Sim.Run(ctx) }()
	return e, nil
}

// Stop stops the simulator and the control plane and removes the work dir.
func (e *Env) Stop() error {
	var errs []error
	if e.stopSim != nil {
		e.stopSim()
		errs = append(errs, <-e.simDone)
		e.stopSim = nil
	}
	if e.Control != nil {
		errs = append(errs, e.Control.Stop())
		e.Control = nil
	}
	if e.Work != "" {
		errs = append(errs, os.RemoveAll(e.Work))
		e.Work = ""
	}
	return errors.Join(errs...)
}

// runRunner is the runner container: the pod's args, its --work-dir moved
// into the Env's directory (the pod's emptyDir path means nothing here).
func (e *Env) runRunner(ctx context.Context, args []string) error {
	pi, _ := podsim.PodFromContext(ctx)
	dir := filepath.Join(e.Work, pi.Namespace, pi.Name)
	args, slot, tokenFile := slotRunnerArgs(args, pi.IP)
	if slot {
		dbCtx, stop := context.WithCancel(ctx)
		wait := runSlotDB(dbCtx, pi.IP, tokenFile)
		defer wait()
		defer stop()
	}
	out := make([]string, 0, len(args)+4)
	for _, a := range args {
		if strings.HasPrefix(a, "--work-dir=") {
			a = "--work-dir=" + dir
		}
		out = append(out, a)
	}
	out = append(out, "--log-level=error", "--drain-timeout=1s")
	if extra, ok := e.RunnerArgs.Load(pi.Namespace); ok {
		out = append(out, extra.([]string)...)
	}
	defer os.RemoveAll(dir)
	// A terminal task's verifier writes where this runner's environments
	// (exec agents on this machine) are told: beside its work directory, so
	// a slot's baseline never sees it, and one runner's trials at a time.
	envDir := dir + "-environment"
	defer os.RemoveAll(envDir)
	paths := grading.EnvironmentPaths{Tests: filepath.Join(envDir, "tests"), Verifier: filepath.Join(envDir, "logs", "verifier"),
		Solution: filepath.Join(envDir, "solution")}
	return runner.MainWith(ctx, out, runner.Config{Grader: grading.New(), SelfExecutable: e.Self, ToolLauncher: e.ToolLauncher,
		EnvironmentPaths: paths})
}

// buildEnvironment compiles the exec agent into dir and writes the script
// that stands in for EnvironmentImage: the agent with its state under the
// simulated container's HOME (a directory of its own) instead of /.
func buildEnvironment(dir string) (string, error) {
	bin := filepath.Join(dir, "tolokaforge-execagent")
	b, err := exec.Command("go", "build", "-o", bin, "tolokaforge.io/operator/cmd/tolokaforge-execagent").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build the exec agent: %w\n%s", err, b)
	}
	script := filepath.Join(dir, "environment.sh")
	body := "#!/bin/sh\nexec '" + bin + "' --state-dir=\"$HOME/execagent-state\" \"$@\"\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		return "", fmt.Errorf("write %s: %w", script, err)
	}
	return script, nil
}

func runDBService(ctx context.Context, args []string) error {
	return dbservice.Main(ctx, append(args, "--log-level=error"))
}

// ManagerOptions are a test manager's defaults: the test image, at most
// maxTrials trials at once, artifacts under the work dir.
func (e *Env) ManagerOptions(maxTrials int) manager.Options {
	return manager.Options{
		Image:               Image,
		MaxConcurrentTrials: maxTrials,
		ArtifactsDir:        filepath.Join(e.Work, "artifacts"),
		Dial:                controllers.DialRunner(),
	}
}

// Manager is a manager running in process.
type Manager struct {
	// Pool is the manager's trial pool (specs inspect it).
	Pool   *controllers.Pool
	cancel context.CancelFunc
	done   chan error
}

// StartManager builds a manager against cfg (nil: the Env's) and starts it
// until Stop. A nil opts.Pool gets a pool of its own, so the spec can
// inspect it.
func (e *Env) StartManager(cfg *rest.Config, opts manager.Options) (*Manager, error) {
	if cfg == nil {
		cfg = e.Config
	}
	if opts.Pool == nil {
		log := opts.Logger
		if log.GetSink() == nil {
			log = logr.Discard()
		}
		opts.Pool = controllers.NewPool(max(opts.MaxConcurrentTrials, 1), controllers.DefaultMetrics(), log.WithName("pool"))
	}
	if opts.Dial == nil {
		opts.Dial = controllers.DialRunner()
	}
	opts.Dial = slotDial(opts.Dial)
	mgr, err := manager.New(cfg, opts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Manager{Pool: opts.Pool, cancel: cancel, done: make(chan error, 1)}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			m.done <- fmt.Errorf("manager: %w", err)
			return
		}
		m.done <- nil
	}()
	return m, nil
}

// Stop stops the manager and returns what Run returned.
func (m *Manager) Stop() error {
	m.cancel()
	return <-m.done
}
