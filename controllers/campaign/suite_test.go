package campaign_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"tolokaforge.io/operator/controllers/campaign"
	"tolokaforge.io/operator/controllers/manager"
	"tolokaforge.io/operator/test/envtest"
	"tolokaforge.io/operator/test/fakellm"
	"tolokaforge.io/operator/test/mcpstandin"
)

// TestMain lets the test binary serve the shop task's tools: the in-process
// runners resolve "tolokaforge mcp shop" to it.
func TestMain(m *testing.M) { mcpstandin.Main(m) }

// The envtest suite: a real kube-apiserver and etcd, the manager with the
// Campaign reconciler in process, the pod simulator running the runner and
// the DB service in process (test/envtest), and a fake LLM.
func TestCampaignEnvtest(t *testing.T) {
	if why := envtest.AssetsMissing(); why != "" {
		if os.Getenv("CI") != "" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	RegisterFailHandler(Fail)
	RunSpecs(t, "campaign envtest suite")
}

// s is the suite's stack.
var s *stack

var _ = BeforeSuite(func() {
	// Live progress every second, so a Campaign spec sees a running Trial's
	// spend within seconds.
	o := stackOptions{simWorkers: 8, maxTrials: 20, progressInterval: time.Second, log: logr.Discard()}
	if os.Getenv("CAMPAIGN_TEST_LOG") != "" {
		o.log = zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true))
	}
	logf.SetLogger(o.log)
	var err error
	s, err = startStack(o)
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if s != nil {
		Expect(s.stop()).To(Succeed())
	}
})

// stack is the envtest Env, a fake LLM, and a manager with the Campaign
// reconciler whose API requests are counted.
type stack struct {
	*envtest.Env
	llm   *fakellm.Server
	gates *envtest.Gates
	api   envtest.APICounter
	mgr   *envtest.Manager
	// mgrOpts are the manager's options, for restartManager.
	mgrOpts manager.Options
}

type stackOptions struct {
	simWorkers int
	maxTrials  int
	// statusInterval of the campaign reconciler (0: every change at once).
	statusInterval time.Duration
	// progressInterval of the Trial reconciler's live progress (0: the
	// default, 15 s).
	progressInterval time.Duration
	// probeInterval of the pod simulator after readiness (0: 50ms).
	probeInterval time.Duration
	// smallMCP serves the shop tools from the small cmd/mcpstandin binary
	// instead of the re-executed test binary.
	smallMCP bool
	log      logr.Logger
}

func startStack(o stackOptions) (_ *stack, err error) {
	s := &stack{gates: envtest.NewGates(envtest.ModelActors)}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.stop())
		}
	}()
	probe := o.probeInterval
	if probe <= 0 {
		probe = 50 * time.Millisecond
	}
	if s.Env, err = envtest.Start(envtest.Options{SimWorkers: o.simWorkers, ProbeInterval: probe, KillGrace: time.Second}); err != nil {
		return nil, err
	}
	if o.smallMCP {
		if s.Self, err = mcpstandin.Build(s.Work); err != nil {
			return nil, err
		}
	}
	if s.llm, err = fakellm.New(fakellm.Config{Responder: responder}); err != nil {
		return nil, err
	}
	if err := s.llm.Start("127.0.0.1:0"); err != nil {
		return nil, err
	}
	log := o.log
	if log.GetSink() == nil {
		log = logr.Discard()
	}
	s.mgrOpts = manager.Options{
		Image:               envtest.Image,
		MaxConcurrentTrials: o.maxTrials,
		Actors:              s.gates.Actors,
		Logger:              log,
		Campaign:            []campaign.Option{campaign.WithStatusInterval(o.statusInterval)},
		// As installed: a gateway for judges (none of these Trials has one),
		// so the writes counted are those of a real manager's Trials.
		GatewayURL:       "http://tolokaforge-gateway.invalid:8081",
		ProgressInterval: o.progressInterval,
	}
	s.mgr, err = s.StartManager(envtest.Counted(s.Config, &s.api), s.mgrOpts)
	return s, err
}

// restartManager stops the manager and starts a new one (a new process's
// memory: no driver, no slot) with the same options.
func (s *stack) restartManager() error {
	if s.mgr != nil {
		if err := s.mgr.Stop(); err != nil {
			return err
		}
		s.mgr = nil
	}
	m, err := s.StartManager(envtest.Counted(s.Config, &s.api), s.mgrOpts)
	s.mgr = m
	return err
}

func (s *stack) stop() error {
	var errs []error
	if s.mgr != nil {
		errs = append(errs, s.mgr.Stop())
		s.mgr = nil
	}
	if s.Env != nil {
		errs = append(errs, s.Env.Stop())
		s.Env = nil
	}
	if s.llm != nil {
		errs = append(errs, s.llm.Close())
		s.llm = nil
	}
	return errors.Join(errs...)
}

// namespace makes a namespace of its own.
func (s *stack) namespace(ctx context.Context) (string, error) {
	ns := "c-" + rand.String(8)
	return ns, s.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
}
