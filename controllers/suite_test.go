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
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/examples/shop"
)

// The envtest suite: a real kube-apiserver and etcd, the manager in process,
// and the pod simulator running runner.Main and dbservice.Main in process
// for every pod the manager creates.
func TestControllers(t *testing.T) {
	if why := assetsMissing(); why != "" {
		t.Skip(why)
	}
	RegisterFailHandler(Fail)
	RunSpecs(t, "controllers envtest suite")
}

var (
	h   *harness
	mgr *runningManager
	// ctx is the suite's context for API calls.
	ctx = context.Background()
)

const (
	waitLong  = 90 * time.Second
	pollEvery = 100 * time.Millisecond
)

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	var err error
	h, err = startHarness(8, 500*time.Millisecond)
	Expect(err).NotTo(HaveOccurred())
	mgr = h.startManager(nil, h.managerOptions(10))
})

var _ = AfterSuite(func() {
	if mgr != nil {
		Expect(mgr.stop()).To(Succeed())
	}
	if h != nil {
		Expect(h.stop()).To(Succeed())
	}
})

// newNamespace makes a namespace of its own for one spec.
func newNamespace() string {
	ns := "t-" + rand.String(8)
	Expect(h.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	return ns
}

// shopTask is the shop Task, optionally edited first.
func shopTask(ns, name string, edit func(map[string]any)) *evalv1.Task {
	t, err := buildShopTask(ns, name, edit)
	Expect(err).NotTo(HaveOccurred())
	return t
}

func buildShopTask(ns, name string, edit func(map[string]any)) (*evalv1.Task, error) {
	raw := shop.TaskJSON()
	if edit != nil {
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, err
		}
		edit(m)
		var err error
		if raw, err = json.Marshal(m); err != nil {
			return nil, err
		}
	}
	return &evalv1.Task{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: evalv1.TaskSpec{
			Description:        apiextensionsv1.JSON{Raw: raw},
			InitialUserMessage: "Hi! I'm customer C-101. I'd like 1 Wireless Headphones and 2 USB-C Hubs, paid from my balance.",
		},
	}, nil
}

// oracleTrial runs the oracle on a Task, with a fast retry policy.
func oracleTrial(ns, name, task string) *evalv1.Trial {
	return &evalv1.Trial{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: evalv1.TrialSpec{
			TaskRef: &evalv1.TaskReference{Name: task},
			Agent:   evalv1.ModelSpec{Provider: evalv1.ProviderOracle},
			RetryPolicy: evalv1.RetryPolicy{
				MaxAttempts: 3,
				Backoff:     &metav1.Duration{Duration: 200 * time.Millisecond},
			},
		},
	}
}

func getTrial(key types.NamespacedName) *evalv1.Trial {
	t := &evalv1.Trial{}
	Expect(h.client.Get(ctx, key, t)).To(Succeed())
	return t
}

// completed waits for the Completed condition to turn True.
func completed(key types.NamespacedName) *evalv1.Trial {
	var t *evalv1.Trial
	Eventually(func(g Gomega) {
		t = &evalv1.Trial{}
		g.Expect(h.client.Get(ctx, key, t)).To(Succeed())
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
	Expect(h.client.List(ctx, &pods, client.InNamespace(key.Namespace),
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
func waitGate(g *gate) {
	Eventually(g.reached, waitLong).Should(BeClosed())
}

func describeTrial(t *evalv1.Trial) string {
	b, _ := json.MarshalIndent(t.Status, "", "  ")
	return fmt.Sprintf("%s/%s status:\n%s", t.Namespace, t.Name, b)
}
