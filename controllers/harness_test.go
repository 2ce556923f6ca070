package controllers_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/controllers"
	"tolokaforge.io/operator/controllers/host"
	"tolokaforge.io/operator/controllers/manager"
	"tolokaforge.io/operator/dbservice"
	"tolokaforge.io/operator/examples/shop"
	"tolokaforge.io/operator/runner"
	"tolokaforge.io/operator/runner/grading"
	"tolokaforge.io/operator/test/podsim"
)

// TestMain doubles as the shop's MCP server: the shop task's tools run as
// `tolokaforge mcp shop`, and the in-process runners resolve "tolokaforge" to
// this test binary.
func TestMain(m *testing.M) {
	if len(os.Args) >= 3 && os.Args[1] == "mcp" && os.Args[2] == "shop" {
		if err := shop.Main(context.Background(), os.Args[3:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// testImage is the --image of the test managers; the simulator maps every
// image to the in-process servers.
const testImage = "tolokaforge:test"

// assetsMissing says why the envtest suites cannot run, or "".
func assetsMissing() string {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		return "KUBEBUILDER_ASSETS is not set: the envtest suite needs kube-apiserver and etcd " +
			"(export KUBEBUILDER_ASSETS=$(hack/build-envtest.sh), an absolute path)"
	}
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return fmt.Sprintf("KUBEBUILDER_ASSETS=%s has no %s: %v", dir, b, err)
		}
	}
	return ""
}

// harness is a control plane, the pod simulator running our servers in
// process, and (started separately) a manager.
type harness struct {
	env     *envtest.Environment
	cfg     *rest.Config
	client  client.Client
	watcher client.WithWatch
	sim     *podsim.Simulator
	stopSim context.CancelFunc
	simDone chan error
	work    string
	self    string

	// runnerArgs: extra runner flags per namespace (the skew test's
	// --min-engine-protocol 3).
	runnerArgs sync.Map
	rpcs       *rpcLog
	gates      *gates
}

func startHarness(simWorkers int, probeEvery time.Duration) (*harness, error) {
	if runtime.GOOS != "linux" {
		return nil, errors.New("the pod simulator binds 127.0.0.x addresses, which needs Linux")
	}
	h := &harness{rpcs: &rpcLog{}, gates: &gates{m: map[types.NamespacedName]*gate{}, keys: map[types.NamespacedName]string{}}}
	var err error
	if h.self, err = os.Executable(); err != nil {
		return nil, err
	}
	if h.work, err = os.MkdirTemp("", "tolokaforge-controllers-"); err != nil {
		return nil, err
	}
	h.env = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	if h.cfg, err = h.env.Start(); err != nil {
		return nil, fmt.Errorf("start envtest: %w", err)
	}
	scheme, err := manager.Scheme()
	if err != nil {
		return nil, err
	}
	if h.watcher, err = client.NewWithWatch(h.cfg, client.Options{Scheme: scheme}); err != nil {
		return nil, err
	}
	h.client = h.watcher
	h.sim, err = podsim.New(podsim.Config{
		InProcess: map[string]podsim.InProcessFunc{
			"runner":    h.runRunner,
			"dbservice": h.runDBService,
		},
		Workers:       simWorkers,
		ProbeInterval: probeEvery,
		KillGrace:     2 * time.Second,
	}, h.cfg, logr.Discard())
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.stopSim, h.simDone = cancel, make(chan error, 1)
	go func() { h.simDone <- h.sim.Run(ctx) }()
	return h, nil
}

func (h *harness) stop() error {
	var errs []error
	if h.stopSim != nil {
		h.stopSim()
		errs = append(errs, <-h.simDone)
	}
	if h.env != nil {
		errs = append(errs, h.env.Stop())
	}
	if h.work != "" {
		errs = append(errs, os.RemoveAll(h.work))
	}
	return errors.Join(errs...)
}

// runRunner is the runner container: the pod's args, its --work-dir moved
// into the harness's directory (the pod's emptyDir path means nothing here).
func (h *harness) runRunner(ctx context.Context, args []string) error {
	pi, _ := podsim.PodFromContext(ctx)
	dir := filepath.Join(h.work, pi.Namespace, pi.Name)
	out := make([]string, 0, len(args)+4)
	for _, a := range args {
		if strings.HasPrefix(a, "--work-dir=") {
			a = "--work-dir=" + dir
		}
		out = append(out, a)
	}
	out = append(out, "--log-level=error", "--drain-timeout=1s")
	if extra, ok := h.runnerArgs.Load(pi.Namespace); ok {
		out = append(out, extra.([]string)...)
	}
	defer os.RemoveAll(dir)
	return runner.MainWith(ctx, out, runner.Config{Grader: grading.New(), SelfExecutable: h.self})
}

func (h *harness) runDBService(ctx context.Context, args []string) error {
	return dbservice.Main(ctx, append(args, "--log-level=error"))
}

// managerOptions are the test managers' options: the gated actors and the
// RPC log.
func (h *harness) managerOptions(maxTrials int) manager.Options {
	return manager.Options{
		Image:               testImage,
		MaxConcurrentTrials: maxTrials,
		Actors:              h.gates.actors,
		WrapRunner:          h.rpcs.wrap,
		ArtifactsDir:        filepath.Join(h.work, "artifacts"),
		Dial:                controllers.DialRunner(),
	}
}

// runningManager is a manager started in process.
type runningManager struct {
	cancel context.CancelFunc
	done   chan error
	pool   *controllers.Pool
}

func (h *harness) startManager(cfg *rest.Config, opts manager.Options) *runningManager {
	if cfg == nil {
		cfg = h.cfg
	}
	if opts.Pool == nil {
		opts.Pool = controllers.NewPool(max(opts.MaxConcurrentTrials, 1), controllers.DefaultMetrics(), logr.Discard())
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &runningManager{cancel: cancel, done: make(chan error, 1), pool: opts.Pool}
	go func() { m.done <- manager.Run(ctx, cfg, opts) }()
	return m
}

func (m *runningManager) stop() error {
	m.cancel()
	return <-m.done
}

// gates hold an attempt's agent at its first turn until the test lets go,
// so "mid-trial" is a point the test chooses, not a race it hopes to win.
type gates struct {
	mu sync.Mutex
	m  map[types.NamespacedName]*gate
	// keys records the API key each trial's agent was built with.
	keys map[types.NamespacedName]string
}

type gate struct {
	attempt int32
	reached chan struct{}
	once    sync.Once
	release chan struct{}
}

// hold gates attempt n of a trial.
func (g *gates) hold(key types.NamespacedName, n int32) *gate {
	g.mu.Lock()
	defer g.mu.Unlock()
	gt := &gate{attempt: n, reached: make(chan struct{}), release: make(chan struct{})}
	g.m[key] = gt
	return gt
}

func (g *gates) actors(ctx context.Context, req controllers.ActorRequest) (host.Actor, error) {
	a, err := controllers.DefaultActors(ctx, req)
	if err != nil {
		return nil, err
	}
	key := types.NamespacedName{Namespace: req.Trial.Namespace, Name: req.Trial.Name}
	g.mu.Lock()
	gt := g.m[key]
	if req.Role == controllers.ActorAgent {
		g.keys[key] = req.APIKey
	}
	g.mu.Unlock()
	if gt == nil || gt.attempt != req.Attempt || req.Role != controllers.ActorAgent {
		return a, nil
	}
	return &gatedActor{inner: a, gate: gt}, nil
}

type gatedActor struct {
	inner host.Actor
	gate  *gate
}

func (a *gatedActor) Next(ctx context.Context, conv []task.Message, tools []*runnerpb.ToolSchema) (host.Turn, error) {
	a.gate.once.Do(func() { close(a.gate.reached) })
	select {
	case <-a.gate.release:
	case <-ctx.Done():
		return host.Turn{}, context.Cause(ctx)
	}
	return a.inner.Next(ctx, conv, tools)
}

// rpcLog records every runner RPC the managers make, per trial and attempt.
type rpcLog struct {
	mu    sync.Mutex
	calls []rpcCall
}

type rpcCall struct {
	Trial   types.NamespacedName
	Attempt int32
	Method  string
	TrialID string
	OK      bool
}

func (l *rpcLog) add(c rpcCall) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, c)
}

// of returns the calls of one trial, optionally only one method.
func (l *rpcLog) of(key types.NamespacedName, method string) []rpcCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []rpcCall
	for _, c := range l.calls {
		if c.Trial == key && (method == "" || c.Method == method) {
			out = append(out, c)
		}
	}
	return out
}

func (l *rpcLog) wrap(key types.NamespacedName, attempt int32, c runnerpb.RunnerServiceClient) runnerpb.RunnerServiceClient {
	return &recordingRunner{RunnerServiceClient: c, log: l, key: key, attempt: attempt}
}

type recordingRunner struct {
	runnerpb.RunnerServiceClient
	log     *rpcLog
	key     types.NamespacedName
	attempt int32
}

func (r *recordingRunner) rec(method, trialID string, ok bool) {
	r.log.add(rpcCall{Trial: r.key, Attempt: r.attempt, Method: method, TrialID: trialID, OK: ok})
}

func (r *recordingRunner) RegisterTrial(ctx context.Context, in *runnerpb.RegisterTrialRequest, opts ...grpc.CallOption) (*runnerpb.RegisterTrialResponse, error) {
	resp, err := r.RunnerServiceClient.RegisterTrial(ctx, in, opts...)
	r.rec("RegisterTrial", in.GetTrialId(), err == nil && resp.GetSuccess())
	return resp, err
}

func (r *recordingRunner) ExecuteTool(ctx context.Context, in *runnerpb.ExecuteToolRequest, opts ...grpc.CallOption) (*runnerpb.ExecuteToolResponse, error) {
	resp, err := r.RunnerServiceClient.ExecuteTool(ctx, in, opts...)
	r.rec("ExecuteTool", in.GetTrialId(), err == nil && resp.GetStatus() == runnerpb.ExecutionStatus_EXECUTION_STATUS_SUCCESS)
	return resp, err
}

func (r *recordingRunner) GradeTrial(ctx context.Context, in *runnerpb.GradeTrialRequest, opts ...grpc.CallOption) (*runnerpb.GradeTrialResponse, error) {
	resp, err := r.RunnerServiceClient.GradeTrial(ctx, in, opts...)
	r.rec("GradeTrial", in.GetTrialId(), err == nil && resp.GetSuccess())
	return resp, err
}

func (r *recordingRunner) CleanupTrial(ctx context.Context, in *runnerpb.CleanupTrialRequest, opts ...grpc.CallOption) (*runnerpb.CleanupTrialResponse, error) {
	resp, err := r.RunnerServiceClient.CleanupTrial(ctx, in, opts...)
	r.rec("CleanupTrial", in.GetTrialId(), err == nil && resp.GetSuccess())
	return resp, err
}

// apiCounter counts API requests by whether they change something.
type apiCounter struct {
	writes atomic.Int64
	reads  atomic.Int64
}

type countingTransport struct {
	next http.RoundTripper
	c    *apiCounter
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		t.c.writes.Add(1)
	default:
		t.c.reads.Add(1)
	}
	return t.next.RoundTrip(req)
}

// counted returns a copy of cfg whose every transport (client-go builds
// several: clients, watches, the event broadcaster) is counted by c.
func counted(cfg *rest.Config, c *apiCounter) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &countingTransport{next: rt, c: c}
	})
	return out
}

// agentKey is the API key the trial's agent was last built with.
func (g *gates) agentKey(key types.NamespacedName) (string, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	k, ok := g.keys[key]
	return k, ok
}
