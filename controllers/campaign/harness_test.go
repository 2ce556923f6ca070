package campaign_test

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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers"
	"tolokaforge.io/operator/controllers/campaign"
	"tolokaforge.io/operator/controllers/host"
	"tolokaforge.io/operator/controllers/host/agents"
	"tolokaforge.io/operator/controllers/manager"
	"tolokaforge.io/operator/dbservice"
	"tolokaforge.io/operator/examples/shop"
	"tolokaforge.io/operator/runner"
	"tolokaforge.io/operator/runner/grading"
	"tolokaforge.io/operator/test/fakellm"
	"tolokaforge.io/operator/test/podsim"
)

// TestMain doubles as the shop's MCP server (the runner resolves
// "tolokaforge mcp shop" to this test binary) and stops the shared stack.
func TestMain(m *testing.M) {
	if len(os.Args) >= 3 && os.Args[1] == "mcp" && os.Args[2] == "shop" {
		if err := shop.Main(context.Background(), os.Args[3:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	if shared != nil {
		if err := shared.stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop the envtest stack:", err)
			code = 1
		}
	}
	os.Exit(code)
}

const testImage = "tolokaforge:test"

// assetsMissing says why the envtest tests cannot run, or "".
func assetsMissing() string {
	if runtime.GOOS != "linux" {
		return "the pod simulator binds 127.0.0.x addresses, which needs Linux"
	}
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		return "KUBEBUILDER_ASSETS is not set: the envtest tests need kube-apiserver and etcd " +
			"(export KUBEBUILDER_ASSETS=$(hack/build-envtest.sh))"
	}
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return fmt.Sprintf("KUBEBUILDER_ASSETS=%s has no %s: %v", dir, b, err)
		}
	}
	return ""
}

// stack is a control plane, the pod simulator running the runner and the
// DB service in process, a fake LLM, and a manager with the Campaign
// reconciler.
type stack struct {
	env     *envtest.Environment
	cfg     *rest.Config
	client  client.WithWatch
	sim     *podsim.Simulator
	llm     *fakellm.Server
	gates   *gates
	api     *apiCounter
	work    string
	self    string
	cancel  context.CancelFunc
	simDone chan error
	mgrDone chan error
}

var (
	shared     *stack
	sharedErr  error
	sharedOnce sync.Once
)

// envStack starts the shared stack once, or skips the test.
func envStack(t testing.TB) *stack {
	t.Helper()
	if why := assetsMissing(); why != "" {
		if os.Getenv("CI") != "" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	sharedOnce.Do(func() {
		o := stackOptions{simWorkers: 8, maxTrials: 20}
		if os.Getenv("CAMPAIGN_TEST_LOG") != "" {
			o.log = zap.New(zap.UseDevMode(true))
		}
		logf.SetLogger(o.log)
		if o.log.GetSink() == nil {
			logf.SetLogger(logr.Discard())
		}
		shared, sharedErr = startStack(o)
	})
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return shared
}

type stackOptions struct {
	simWorkers int
	maxTrials  int
	// statusInterval of the campaign reconciler (0: every change at once).
	statusInterval time.Duration
	log            logr.Logger
}

func startStack(o stackOptions) (_ *stack, err error) {
	s := &stack{gates: &gates{m: map[string]*gate{}}, api: &apiCounter{}}
	defer func() {
		if err != nil {
			_ = s.stop()
		}
	}()
	if s.self, err = os.Executable(); err != nil {
		return nil, err
	}
	if s.work, err = os.MkdirTemp("", "tolokaforge-campaign-"); err != nil {
		return nil, err
	}
	s.env = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	if s.cfg, err = s.env.Start(); err != nil {
		return nil, fmt.Errorf("start envtest: %w", err)
	}
	scheme, err := manager.Scheme()
	if err != nil {
		return nil, err
	}
	if s.client, err = client.NewWithWatch(s.cfg, client.Options{Scheme: scheme}); err != nil {
		return nil, err
	}
	if s.llm, err = fakellm.New(fakellm.Config{Responder: responder}); err != nil {
		return nil, err
	}
	if err := s.llm.Start("127.0.0.1:0"); err != nil {
		return nil, err
	}
	s.sim, err = podsim.New(podsim.Config{
		InProcess:     map[string]podsim.InProcessFunc{"runner": s.runRunner, "dbservice": runDBService},
		Workers:       o.simWorkers,
		ProbeInterval: 50 * time.Millisecond,
		KillGrace:     time.Second,
	}, s.cfg, logr.Discard())
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.simDone, s.mgrDone = make(chan error, 1), make(chan error, 1)
	go func() { s.simDone <- s.sim.Run(ctx) }()

	log := o.log
	if log.GetSink() == nil {
		log = logr.Discard()
	}
	mgr, err := manager.New(counted(s.cfg, s.api), manager.Options{
		Image:               testImage,
		MaxConcurrentTrials: o.maxTrials,
		Actors:              s.gates.actors,
		Logger:              log,
		Campaign:            []campaign.Option{campaign.WithStatusInterval(o.statusInterval)},
	})
	if err != nil {
		return nil, err
	}
	go func() { s.mgrDone <- mgr.Start(ctx) }()
	return s, nil
}

func (s *stack) stop() error {
	var errs []error
	if s.cancel != nil {
		s.cancel()
		if s.mgrDone != nil {
			errs = append(errs, <-s.mgrDone)
		}
		errs = append(errs, <-s.simDone)
	}
	if s.llm != nil {
		errs = append(errs, s.llm.Close())
	}
	if s.env != nil {
		errs = append(errs, s.env.Stop())
	}
	if s.work != "" {
		errs = append(errs, os.RemoveAll(s.work))
	}
	return errors.Join(errs...)
}

// runRunner is the runner container, its work dir moved under the stack's.
func (s *stack) runRunner(ctx context.Context, args []string) error {
	pi, _ := podsim.PodFromContext(ctx)
	dir := filepath.Join(s.work, pi.Namespace, pi.Name)
	out := make([]string, 0, len(args)+2)
	for _, a := range args {
		if strings.HasPrefix(a, "--work-dir=") {
			a = "--work-dir=" + dir
		}
		out = append(out, a)
	}
	out = append(out, "--log-level=error", "--drain-timeout=1s")
	defer os.RemoveAll(dir)
	return runner.MainWith(ctx, out, runner.Config{Grader: grading.New(), SelfExecutable: s.self})
}

func runDBService(ctx context.Context, args []string) error {
	return dbservice.Main(ctx, append(args, "--log-level=error"))
}

// namespace makes a namespace of its own for one test.
func (s *stack) namespace(t testing.TB) string {
	t.Helper()
	ns := "c-" + rand.String(8)
	if err := s.client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	return ns
}

// gates hold a trial's first agent turn until the test lets go, so a pod
// loss lands mid-trial at a point the test chooses.
type gates struct {
	mu sync.Mutex
	m  map[string]*gate // by namespace/trial
}

type gate struct {
	reached chan struct{}
	once    sync.Once
	release chan struct{}
}

func (g *gates) hold(ns, trial string) *gate {
	g.mu.Lock()
	defer g.mu.Unlock()
	gt := &gate{reached: make(chan struct{}), release: make(chan struct{})}
	g.m[ns+"/"+trial] = gt
	return gt
}

// actors are the manager's actors: the oracle, and for provider openai an
// LLM agent talking to the model's base URL (the fake LLM).
func (g *gates) actors(ctx context.Context, req controllers.ActorRequest) (host.Actor, error) {
	var a host.Actor
	var err error
	if req.Role == controllers.ActorAgent && req.Model.Provider == evalv1.ProviderOpenAI {
		cfg := &task.ModelConfig{Provider: task.ProviderOpenAI, Model: req.Model.Model, BaseURL: req.Model.BaseURL}
		if p := req.Model.Pricing; p != nil {
			cfg.Pricing = &task.Pricing{InputUSDPerMTok: p.InputUSDPerMTok, OutputUSDPerMTok: p.OutputUSDPerMTok}
		}
		m, merr := agents.NewChatModel("agent", cfg, agents.Options{APIKey: req.APIKey})
		if merr != nil {
			return nil, merr
		}
		a = agents.NewLLMAgent(m)
	} else if a, err = controllers.DefaultActors(ctx, req); err != nil {
		return nil, err
	}
	g.mu.Lock()
	gt := g.m[req.Trial.Namespace+"/"+req.Trial.Name]
	g.mu.Unlock()
	if gt == nil || req.Role != controllers.ActorAgent || req.Attempt != 1 {
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

// apiCounter counts the manager's API requests.
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

func counted(cfg *rest.Config, c *apiCounter) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &countingTransport{next: rt, c: c} })
	return out
}
