package kueue_test

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

	"tolokaforge.io/operator/controllers/manager"
	"tolokaforge.io/operator/test/envtest"
	"tolokaforge.io/operator/test/kueueenv"
	"tolokaforge.io/operator/test/mcpstandin"
)

// TestMain lets the test binary serve the shop task's tools.
func TestMain(m *testing.M) { mcpstandin.Main(m) }

// The Kueue suite: a real kube-apiserver and etcd, the real Kueue v0.17.0
// (test/kueueenv, a subprocess), the manager with the Kueue integration on,
// and the pod simulator running every runner and DB service in process.
func TestKueueEnvtest(t *testing.T) {
	why := envtest.AssetsMissing()
	if why == "" {
		why = kueueenv.Missing()
	}
	if why != "" {
		if os.Getenv("CI") != "" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	RegisterFailHandler(Fail)
	RunSpecs(t, "kueue envtest suite")
}

var (
	bg = context.Background()
	s  *stack
)

const (
	pollEvery = 100 * time.Millisecond
	// flavor is the suite's one ResourceFlavor.
	flavor = "default"
)

var _ = BeforeSuite(func() {
	log := logr.Discard()
	if os.Getenv("KUEUE_TEST_LOG") != "" {
		log = zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true))
	}
	logf.SetLogger(log)
	var err error
	s, err = startStack(stackOptions{log: log, simWorkers: 8, maxTrials: 20, probe: 50 * time.Millisecond})
	Expect(err).NotTo(HaveOccurred())
	GinkgoWriter.Printf("kueue ready in %s\n", s.kueueStart.Round(time.Millisecond))
	Expect(s.Client.Create(bg, kueueenv.ResourceFlavor(flavor))).To(Succeed())
})

var _ = AfterSuite(func() {
	if s != nil {
		failed := CurrentSpecReport().Failed()
		if failed && s.kueue != nil {
			GinkgoWriter.Printf("kueue log (kept in %s):\n%s\n", s.kueue.Work, s.kueue.LogTail(80))
		}
		Expect(s.stop(failed)).To(Succeed())
	}
})

// stack is the envtest Env, Kueue, and a manager running the integration.
type stack struct {
	*envtest.Env
	mgrLog     logr.Logger
	kueue      *kueueenv.Kueue
	kueueStart time.Duration
	gates      *envtest.Gates
	mgr        *envtest.Manager
	// dirty makes the slot runner's CleanupTrial of the Trials it names
	// refuse, as the runner's baseline check does when a trial left
	// something behind (dirtyCleanup).
	dirty *dirtyCleanup
}

type stackOptions struct {
	log        logr.Logger
	simWorkers int
	maxTrials  int
	probe      time.Duration
	// smallMCP serves the shop tools from the small mcpstandin binary.
	smallMCP bool
	// podsReady turns on Kueue's waitForPodsReady with this timeout.
	podsReady time.Duration
}

func startStack(o stackOptions) (_ *stack, err error) {
	s := &stack{gates: envtest.NewGates(nil), dirty: &dirtyCleanup{}}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.stop(true))
		}
	}()
	if s.Env, err = envtest.Start(envtest.Options{SimWorkers: o.simWorkers, ProbeInterval: o.probe,
		KillGrace: time.Second, APIServerFlags: kueueenv.APIServerFlags}); err != nil {
		return nil, err
	}
	if o.smallMCP {
		if s.Self, err = mcpstandin.Build(s.Work); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	if s.kueue, err = kueueenv.Start(bg, s.Control, s.Config, kueueenv.Options{WaitForPodsReady: o.podsReady}); err != nil {
		return nil, err
	}
	s.kueueStart = time.Since(start)
	opts := s.ManagerOptions(o.maxTrials)
	opts.Actors = s.gates.Actors
	opts.WrapRunner = s.dirty.wrap
	opts.Logger = o.log
	s.mgrLog = o.log
	opts.Kueue = manager.KueueOn
	s.mgr, err = s.StartManager(nil, opts)
	return s, err
}

// stop stops everything; keepKueue keeps Kueue's work dir (its log).
func (s *stack) stop(keepKueue bool) error {
	var errs []error
	if s.mgr != nil {
		errs = append(errs, s.mgr.Stop())
		s.mgr = nil
	}
	if s.kueue != nil {
		errs = append(errs, s.kueue.Stop(keepKueue))
		s.kueue = nil
	}
	if s.Env != nil {
		errs = append(errs, s.Env.Stop())
		s.Env = nil
	}
	return errors.Join(errs...)
}

func newNamespace() string {
	GinkgoHelper()
	ns := "k-" + rand.String(8)
	Expect(s.Client.Create(bg, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	return ns
}
