package kueue_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kueuev1 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/kueue"
	"tolokaforge.io/operator/test/envtest"
	"tolokaforge.io/operator/test/kueueenv"
)

// A cluster that turns on Kueue's waitForPodsReady evicts an admitted
// Workload whose PodsReady condition is not True within the timeout: a Trial
// whose pods are up must say so, or every attempt longer than the timeout
// ends Evicted. A control plane of its own, whose Kueue has a 2 s timeout.
var _ = Describe("waitForPodsReady", Ordered, func() {
	const timeout = 2 * time.Second
	var st *stack

	BeforeAll(func() {
		var err error
		st, err = startStack(stackOptions{log: s.mgrLog, simWorkers: 2, maxTrials: 4, probe: 50 * time.Millisecond, podsReady: timeout})
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Client.Create(bg, kueueenv.ResourceFlavor(flavor))).To(Succeed())
	})
	AfterAll(func() {
		if st != nil {
			failed := CurrentSpecReport().Failed()
			if failed && st.kueue != nil {
				GinkgoWriter.Printf("kueue log (kept in %s):\n%s\n", st.kueue.Work, st.kueue.LogTail(60))
			}
			Expect(st.stop(failed)).To(Succeed())
		}
	})

	It("keeps a Trial whose pods are ready admitted past the timeout", func() {
		ns := newNamespace()
		Expect(st.Client.Create(bg, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		Expect(st.Client.Create(bg, envtest.ShopTask("shop", ns).Obj())).To(Succeed())
		Expect(st.Client.Create(bg, kueueenv.ClusterQueue("cq-"+ns, flavor, quotaFor(1)))).To(Succeed())
		Expect(st.Client.Create(bg, kueueenv.LocalQueue(ns, "lq", "cq-"+ns))).To(Succeed())
		key := types.NamespacedName{Namespace: ns, Name: "slow"}
		gate := st.runHeld(ns, "slow", nil)

		get := func() *evalv1.Trial {
			t := &evalv1.Trial{}
			Expect(st.Client.Get(bg, key, t)).To(Succeed())
			return t
		}
		// Three timeouts with the attempt running: not evicted.
		Consistently(func(g Gomega) {
			t := get()
			g.Expect(t.Status.Attempts).To(HaveLen(1), describe(t))
			g.Expect(t.Status.Attempts[0].Outcome).To(Equal(evalv1.OutcomeRunning), describe(t))
			wl := &kueuev1.Workload{}
			g.Expect(st.Client.Get(bg, types.NamespacedName{Namespace: ns, Name: kueue.WorkloadName(t)}, wl)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(wl.Status.Conditions, kueuev1.WorkloadEvicted)).To(BeFalse(), "%+v", wl.Status.Conditions)
		}, 3*timeout, 200*time.Millisecond).Should(Succeed())

		close(gate.Release)
		Eventually(func() bool { return terminal(get()) }, 60*time.Second, pollEvery).Should(BeTrue())
		t := get()
		Expect(t.Status.Phase).To(Equal(evalv1.PhasePassed), describe(t))
		Expect(t.Status.Attempts).To(HaveLen(1), describe(t))
	})
})
