package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/test/envtest"
	"tolokaforge.io/operator/test/mcpstandin"
)

// TestMain lets the test binary serve the shop task's tools: the in-process
// runners resolve "tolokaforge mcp shop" to it.
func TestMain(m *testing.M) { mcpstandin.Main(m) }

// The envtest suite: a real kube-apiserver and etcd, the manager in process,
// and the pod simulator running runner.Main and dbservice.Main in process
// for every pod the manager creates (test/envtest).
func TestControllers(t *testing.T) {
	if why := envtest.AssetsMissing(); why != "" {
		t.Skip(why)
	}
	RegisterFailHandler(Fail)
	RunSpecs(t, "controllers envtest suite")
}

var (
	h *envtest.Env
	// gates hold chosen attempts' agents; rpcs logs every runner RPC.
	gates = envtest.NewGates(nil)
	rpcs  = &envtest.RPCLog{}
	mgr   *envtest.Manager
	// ctx is the suite's context for API calls.
	ctx = context.Background()
)

const (
	waitLong  = 90 * time.Second
	pollEvery = 100 * time.Millisecond
	// progressInterval is the suite manager's ProgressInterval.
	progressInterval = 2 * time.Second
)

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	var err error
	h, err = envtest.Start(envtest.Options{SimWorkers: 8, ProbeInterval: 500 * time.Millisecond, KillGrace: 2 * time.Second})
	Expect(err).NotTo(HaveOccurred())
	mgr = startManager(10)
})

var _ = AfterSuite(func() {
	if mgr != nil {
		Expect(mgr.Stop()).To(Succeed())
	}
	if h != nil {
		Expect(h.Stop()).To(Succeed())
	}
})

// startManager starts a manager with the gated actors and the RPC log.
// testGatewayURL is the suite's --gateway-url.
const testGatewayURL = "http://127.0.0.1:9/v1"

func startManager(maxTrials int) *envtest.Manager {
	opts := h.ManagerOptions(maxTrials)
	opts.Actors, opts.WrapRunner = gates.Actors, rpcs.Wrap
	// Trials with a judge get a gateway token Secret; nothing here calls it.
	opts.GatewayURL = testGatewayURL
	// Live progress every 2 s rather than 15, so a spec sees it move within
	// a ten-second Trial.
	opts.ProgressInterval = progressInterval
	// Python packs run their tools with Debian's interpreter: the runner
	// runs in process, so the "image" only has to be named.
	opts.PythonImage, opts.Python = envtest.Image+"-python", "/usr/bin/python3"
	m, err := h.StartManager(nil, opts)
	Expect(err).NotTo(HaveOccurred())
	return m
}

// newNamespace makes a namespace of its own for one spec.
func newNamespace() string {
	ns := "t-" + rand.String(8)
	Expect(h.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	return ns
}

// shopTask is the shop Task, optionally edited first.
func shopTask(ns, name string, edit func(map[string]any)) *evalv1.Task {
	raw, err := envtest.ShopDescription(edit)
	Expect(err).NotTo(HaveOccurred())
	return envtest.ShopTask(name, ns).Description(raw).Obj()
}

// oracleTrial runs the oracle on a Task, with a fast retry policy.
func oracleTrial(ns, name, task string) *evalv1.Trial {
	return envtest.MakeTrial(name, ns).Task(task).Agent(envtest.Oracle()).Retry(3, 200*time.Millisecond).Obj()
}

func getTrial(key types.NamespacedName) *evalv1.Trial {
	t := &evalv1.Trial{}
	Expect(h.Client.Get(ctx, key, t)).To(Succeed())
	return t
}

// completed waits for the Completed condition to turn True.
func completed(key types.NamespacedName) *evalv1.Trial {
	var t *evalv1.Trial
	Eventually(func(g Gomega) {
		t = &evalv1.Trial{}
		g.Expect(h.Client.Get(ctx, key, t)).To(Succeed())
		c := findCond(t.Status.Conditions, evalv1.TrialCompleted)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "Completed: %s: %s", c.Reason, c.Message)
	}, waitLong, pollEvery).Should(Succeed())
	return t
}

func findCond(cs []metav1.Condition, typ string) *metav1.Condition {
	for i := range cs {
		if cs[i].Type == typ {
			return &cs[i]
		}
	}
	return nil
}

// podsOf lists the pods of a trial (any attempt).
func podsOf(key types.NamespacedName) []corev1.Pod {
	var pods corev1.PodList
	Expect(h.Client.List(ctx, &pods, client.InNamespace(key.Namespace),
		client.MatchingLabels{evalv1.LabelTrial: evalv1.LabelValue(key.Name)})).To(Succeed())
	return pods.Items
}

func expectNoPods(key types.NamespacedName) {
	Eventually(func() []string {
		var names []string
		for _, p := range podsOf(key) {
			names = append(names, p.Name)
		}
		return names
	}, waitLong, pollEvery).Should(BeEmpty())
}

// waitGate waits until the gated attempt's agent is at its first turn.
func waitGate(g *envtest.Gate) {
	Eventually(g.Reached, waitLong).Should(BeClosed())
}

func describeTrial(t *evalv1.Trial) string {
	b, _ := json.MarshalIndent(t.Status, "", "  ")
	return fmt.Sprintf("%s/%s status:\n%s", t.Namespace, t.Name, b)
}
