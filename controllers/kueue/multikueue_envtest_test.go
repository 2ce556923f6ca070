package kueue_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
	kueuev1 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/campaign"
	"tolokaforge.io/operator/controllers/kueue"
	"tolokaforge.io/operator/test/envtest"
	"tolokaforge.io/operator/test/kueueenv"
)

// MultiKueue: the suite's control plane is the manager cluster; a second
// control plane with its own Kueue, manager and pod simulator is the worker.
var _ = Describe("MultiKueue", Ordered, func() {
	var (
		worker *stack
		// clusters are the MultiKueueClusters made: deleted before the
		// worker stops, so the manager cluster's Kueue lets go of its
		// watches on the worker's API server, which would not stop in time.
		clusters []string
	)

	BeforeAll(func() {
		var err error
		worker, err = startStack(stackOptions{log: s.mgrLog, simWorkers: 4, maxTrials: 10, probe: 50 * time.Millisecond})
		Expect(err).NotTo(HaveOccurred())
		Expect(worker.Client.Create(bg, kueueenv.ResourceFlavor(flavor))).To(Succeed())
	})
	AfterAll(func() {
		for _, name := range clusters {
			Expect(client.IgnoreNotFound(s.Client.Delete(bg, &kueuev1.MultiKueueCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}))).To(Succeed())
			Eventually(func() bool {
				return apierrors.IsNotFound(s.Client.Get(bg, types.NamespacedName{Name: name}, &kueuev1.MultiKueueCluster{}))
			}, 30*time.Second, pollEvery).Should(BeTrue())
		}
		if worker != nil {
			failed := CurrentSpecReport().Failed()
			if failed && worker.kueue != nil {
				GinkgoWriter.Printf("worker kueue log (kept in %s):\n%s\n", worker.kueue.Work, worker.kueue.LogTail(60))
			}
			Expect(worker.stop(failed)).To(Succeed())
		}
	})

	It("runs a Campaign's Trials in the worker cluster and mirrors their status back", func() {
		ns := newNamespace()
		// The worker: the namespace, its Task, and a queue of the same name.
		Expect(worker.Client.Create(bg, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		Expect(worker.Client.Create(bg, envtest.ShopTask("shop", ns).Obj())).To(Succeed())
		Expect(worker.Client.Create(bg, kueueenv.ClusterQueue("cq-w-"+ns, flavor, quotaFor(4)))).To(Succeed())
		Expect(worker.Client.Create(bg, kueueenv.LocalQueue(ns, "lq", "cq-w-"+ns))).To(Succeed())

		// The manager cluster: the worker's kubeconfig, MultiKueue's
		// objects, and a ClusterQueue whose admission check is MultiKueue.
		user, err := worker.Control.AddUser(crenvtest.User{Name: "multikueue", Groups: []string{"system:masters"}}, worker.Config)
		Expect(err).NotTo(HaveOccurred())
		kc, err := user.KubeConfig()
		Expect(err).NotTo(HaveOccurred())
		name := "worker-" + ns
		Expect(s.Client.Create(bg, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: kueueenv.Namespace, Name: name},
			Data: map[string][]byte{kueuev1.MultiKueueConfigSecretKey: kc}})).To(Succeed())
		clusters = append(clusters, name)
		Expect(s.Client.Create(bg, &kueuev1.MultiKueueCluster{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: kueuev1.MultiKueueClusterSpec{ClusterSource: kueuev1.ClusterSource{
				KubeConfig: &kueuev1.KubeConfig{Location: name, LocationType: kueuev1.SecretLocationType}}}})).To(Succeed())
		Expect(s.Client.Create(bg, &kueuev1.MultiKueueConfig{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: kueuev1.MultiKueueConfigSpec{Clusters: []string{name}}})).To(Succeed())
		Expect(s.Client.Create(bg, &kueuev1.AdmissionCheck{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: kueuev1.AdmissionCheckSpec{ControllerName: kueuev1.MultiKueueControllerName,
				Parameters: &kueuev1.AdmissionCheckParametersReference{APIGroup: kueuev1.GroupVersion.Group, Kind: "MultiKueueConfig", Name: name}}})).To(Succeed())
		cq := kueueenv.ClusterQueue("cq-"+ns, flavor, quotaFor(4))
		cq.Spec.AdmissionChecksStrategy = &kueuev1.AdmissionChecksStrategy{AdmissionChecks: []kueuev1.AdmissionCheckStrategyRule{{Name: kueuev1.AdmissionCheckReference(name)}}}
		Expect(s.Client.Create(bg, cq)).To(Succeed())
		Expect(s.Client.Create(bg, kueueenv.LocalQueue(ns, "lq", cq.Name))).To(Succeed())
		Eventually(func(g Gomega) {
			c := &kueuev1.MultiKueueCluster{}
			g.Expect(s.Client.Get(bg, types.NamespacedName{Name: name}, c)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(c.Status.Conditions, kueuev1.MultiKueueClusterActive)).To(BeTrue(), "%+v", c.Status.Conditions)
		}, 60*time.Second, pollEvery).Should(Succeed())

		Expect(s.Client.Create(bg, envtest.ShopTask("shop", ns).Obj())).To(Succeed())
		const n = 3
		// The worker copies are held at their first attempt, so their
		// metadata can be read while they exist (MultiKueue deletes them
		// once the Trials finish).
		gates := map[string]*envtest.Gate{}
		for i := range int32(n) {
			name := campaign.TrialName("eval", "oracle", "shop", i)
			gates[name] = worker.gates.Hold(types.NamespacedName{Namespace: ns, Name: name}, 1)
		}
		c := envtest.MakeCampaign("eval", ns).Tasks("shop").TrialsPerTask(n).MaxParallel(n).Agent("oracle", envtest.Oracle()).Obj()
		c.Spec.UserSimulator = scriptedUser()
		c.Spec.TrialManagedBy = ptr.To(evalv1.ManagedByMultiKueue)
		c.Labels = map[string]string{evalv1.LabelQueueName: "lq"}
		Expect(s.Client.Create(bg, c)).To(Succeed())

		By("no Trial, here or in the worker, has an owner a worker's garbage collector would miss")
		for name, g := range gates {
			Eventually(g.Reached, 60*time.Second).Should(BeClosed(), "worker copy %s never started", name)
			cp := &evalv1.Trial{}
			Expect(worker.Client.Get(bg, types.NamespacedName{Namespace: ns, Name: name}, cp)).To(Succeed())
			Expect(cp.OwnerReferences).To(BeEmpty(), "worker copy %s", name)
			Expect(cp.Labels).To(HaveKeyWithValue(evalv1.LabelMultiKueueOrigin, Not(BeEmpty())))
			campName, campUID := evalv1.CampaignOf(cp)
			Expect(campName).To(Equal("eval"))
			Expect(campUID).To(Equal(c.UID))
			here := &evalv1.Trial{}
			Expect(s.Client.Get(bg, types.NamespacedName{Namespace: ns, Name: name}, here)).To(Succeed())
			Expect(here.OwnerReferences).To(BeEmpty(), name)
			close(g.Release)
		}

		By("each Trial completes with the status its worker copy earned")
		Eventually(func(g Gomega) {
			var trials evalv1.TrialList
			g.Expect(s.Client.List(bg, &trials, client.InNamespace(ns))).To(Succeed())
			g.Expect(trials.Items).To(HaveLen(n))
			for i := range trials.Items {
				t := &trials.Items[i]
				g.Expect(t.Spec.ManagedBy).To(Equal(ptr.To(evalv1.ManagedByMultiKueue)))
				g.Expect(terminal(t)).To(BeTrue(), describe(t))
			}
		}, 120*time.Second, pollEvery).Should(Succeed())
		var trials evalv1.TrialList
		Expect(s.Client.List(bg, &trials, client.InNamespace(ns))).To(Succeed())
		for i := range trials.Items {
			t := &trials.Items[i]
			Expect(t.Status.Phase).To(Equal(evalv1.PhasePassed), describe(t))
			Expect(t.Status.Grade).NotTo(BeNil(), describe(t))
			Expect(t.Status.Attempts).To(HaveLen(1), describe(t))
			// The attempt ran in the worker: its ID is the worker copy's
			// UID, not this Trial's.
			Expect(t.Status.Attempts[0].ID).NotTo(HavePrefix(string(t.UID)), describe(t))
			Expect(podsOf(ns, t.Name)).To(BeZero(), "the manager cluster ran pods for %s", t.Name)
			wl := &kueuev1.Workload{}
			Expect(s.Client.Get(bg, types.NamespacedName{Namespace: ns, Name: kueue.WorkloadName(t)}, wl)).To(Succeed())
			Expect(wl.Status.ClusterName).To(Equal(ptr.To(name)), "dispatched to the worker")
		}
		Eventually(func(g Gomega) {
			got := &evalv1.Campaign{}
			g.Expect(s.Client.Get(bg, client.ObjectKeyFromObject(c), got)).To(Succeed())
			g.Expect(got.Status.Counts.Passed).To(BeEquivalentTo(n))
			g.Expect(got.Finalizers).To(ContainElement(evalv1.FinalizerCampaignTrials))
		}, 30*time.Second, pollEvery).Should(Succeed())

		By("deleting the Campaign deletes its Trials (no garbage collector runs here, and none would: they have no owner)")
		Expect(s.Client.Delete(bg, c)).To(Succeed())
		Eventually(func(g Gomega) {
			var left evalv1.TrialList
			g.Expect(s.Client.List(bg, &left, client.InNamespace(ns))).To(Succeed())
			g.Expect(left.Items).To(BeEmpty())
			g.Expect(apierrors.IsNotFound(s.Client.Get(bg, client.ObjectKeyFromObject(c), &evalv1.Campaign{}))).To(BeTrue(), "the Campaign stays")
		}, 30*time.Second, pollEvery).Should(Succeed())
	})
})
