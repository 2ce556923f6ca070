package kueue_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueuev1 "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/yaml"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers"
	"tolokaforge.io/operator/controllers/kueue"
	"tolokaforge.io/operator/test/envtest"
	"tolokaforge.io/operator/test/kueueenv"
)

// quotaFor is room for n Trials' attempts (runner and DB service requests).
func quotaFor(n int64) kueueenv.Quota {
	cpu, mem, eph := resource.Quantity{}, resource.Quantity{}, resource.Quantity{}
	for _, r := range controllers.AttemptResources(&evalv1.Trial{}) {
		cpu.Add(r.Requests[corev1.ResourceCPU])
		mem.Add(r.Requests[corev1.ResourceMemory])
		eph.Add(r.Requests[corev1.ResourceEphemeralStorage])
	}
	mul := func(q resource.Quantity) string {
		return resource.NewMilliQuantity(q.MilliValue()*n, q.Format).String()
	}
	return kueueenv.Quota{CPU: mul(cpu), Memory: mul(mem), EphemeralStorage: mul(eph)}
}

// queue makes ClusterQueue cq with room for n Trials and LocalQueue lq of ns into it.
func queue(ns, cq string, n int64) {
	GinkgoHelper()
	Expect(s.Client.Create(bg, kueueenv.ClusterQueue(cq, flavor, quotaFor(n)))).To(Succeed())
	Expect(s.Client.Create(bg, kueueenv.LocalQueue(ns, "lq", cq))).To(Succeed())
}

func setQuota(cq string, n int64) {
	GinkgoHelper()
	Eventually(func() error {
		c := &kueuev1.ClusterQueue{}
		if err := s.Client.Get(bg, types.NamespacedName{Name: cq}, c); err != nil {
			return err
		}
		kueueenv.SetQuota(c, flavor, quotaFor(n))
		return s.Client.Update(bg, c)
	}, 10*time.Second, pollEvery).Should(Succeed())
}

func scriptedUser() *evalv1.UserSimulatorSpec {
	return &evalv1.UserSimulatorSpec{Mode: evalv1.UserSimulatorScripted}
}

// runHeld creates Trial name (task shop, the oracle, a scripted user) in
// LocalQueue lq of ns, edited by edit when given, and waits until its first
// attempt is held at its gate: Kueue admitted it and its pods are up.
func (st *stack) runHeld(ns, name string, edit func(*evalv1.Trial)) *envtest.Gate {
	GinkgoHelper()
	gate := st.gates.Hold(types.NamespacedName{Namespace: ns, Name: name}, 1)
	tr := envtest.MakeTrial(name, ns).Task("shop").Agent(envtest.Oracle()).Obj()
	tr.Spec.UserSimulator = scriptedUser()
	tr.Labels = map[string]string{evalv1.LabelQueueName: "lq"}
	if edit != nil {
		edit(tr)
	}
	Expect(st.Client.Create(bg, tr)).To(Succeed())
	Eventually(gate.Reached, 60*time.Second).Should(BeClosed())
	return gate
}

func getTrial(ns, name string) *evalv1.Trial {
	GinkgoHelper()
	t := &evalv1.Trial{}
	Expect(s.Client.Get(bg, types.NamespacedName{Namespace: ns, Name: name}, t)).To(Succeed())
	return t
}

func podsOf(ns, trial string) int {
	GinkgoHelper()
	var pods corev1.PodList
	Expect(s.Client.List(bg, &pods, client.InNamespace(ns), client.MatchingLabels{evalv1.LabelTrial: evalv1.LabelValue(trial)})).To(Succeed())
	return len(pods.Items)
}

func reachedCount(gs map[string]*envtest.Gate) (n int, names []string) {
	for name, g := range gs {
		select {
		case <-g.Reached:
			n++
			names = append(names, name)
		default:
		}
	}
	return n, names
}

func terminal(t *evalv1.Trial) bool {
	return meta.IsStatusConditionTrue(t.Status.Conditions, evalv1.TrialCompleted)
}

func describe(t *evalv1.Trial) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: phase %s suspend %v", t.Name, t.Status.Phase, t.Spec.Suspend)
	for _, c := range t.Status.Conditions {
		fmt.Fprintf(&b, "\n  %s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)
	}
	for _, a := range t.Status.Attempts {
		fmt.Fprintf(&b, "\n  attempt %d %s %s: %s", a.Number, a.Outcome, a.Reason, a.Message)
	}
	return b.String()
}

var _ = Describe("Kueue", func() {
	It("admits 2 of a 10-Trial Campaign at a time, admits more when the quota grows, and grades each Trial once", func() {
		ns := newNamespace()
		cq := "cq-" + ns
		queue(ns, cq, 2)
		Expect(s.Client.Create(bg, envtest.ShopTask("shop", ns).Obj())).To(Succeed())

		const n = 10
		gates := map[string]*envtest.Gate{}
		for i := range n {
			name := fmt.Sprintf("eval-oracle-shop-%d", i)
			gates[name] = s.gates.Hold(types.NamespacedName{Namespace: ns, Name: name}, 1)
		}
		c := envtest.MakeCampaign("eval", ns).Tasks("shop").TrialsPerTask(n).MaxParallel(n).Agent("oracle", envtest.Oracle()).Obj()
		c.Spec.UserSimulator = scriptedUser()
		// Per-attempt pods, whose two pod sets this spec reads (slots under
		// a queue are slots_envtest_test.go's).
		c.Spec.Slots = &evalv1.SlotPolicy{Mode: evalv1.SlotsDisabled}
		c.Labels = map[string]string{evalv1.LabelQueueName: "lq"}
		Expect(s.Client.Create(bg, c)).To(Succeed())

		By("two Trials run; eight wait in the queue with no pod")
		Eventually(func() int { r, _ := reachedCount(gates); return r }, 60*time.Second, pollEvery).Should(Equal(2))
		_, running := reachedCount(gates)
		Eventually(func(g Gomega) {
			queued := 0
			for name := range gates {
				t := &evalv1.Trial{}
				g.Expect(s.Client.Get(bg, types.NamespacedName{Namespace: ns, Name: name}, t)).To(Succeed())
				g.Expect(t.Labels[evalv1.LabelQueueName]).To(Equal("lq"), "the Campaign passes its queue down")
				a := meta.FindStatusCondition(t.Status.Conditions, evalv1.TrialAdmitted)
				g.Expect(a).NotTo(BeNil(), describe(t))
				if a.Status == metav1.ConditionTrue {
					g.Expect(a.Reason).To(Equal(evalv1.ReasonAdmitted))
					g.Expect(a.Message).To(HavePrefix("admitted by ClusterQueue "+cq+" (LocalQueue lq, workload "), describe(t))
					continue
				}
				queued++
				g.Expect(a.Reason).To(Equal(evalv1.ReasonQueued), describe(t))
				g.Expect(a.Message).To(ContainSubstring("waits for quota in LocalQueue lq"), describe(t))
				g.Expect(t.Status.Phase).To(Equal(evalv1.PhasePending), describe(t))
				g.Expect(t.Status.Attempts).To(BeEmpty(), describe(t))
				g.Expect(t.Spec.Suspend).To(BeNil(), "Kueue's admission is the gate; nothing writes suspend: %s", describe(t))
				g.Expect(podsOf(ns, name)).To(BeZero(), "a queued Trial has pods: %s", describe(t))
				wl := &kueuev1.Workload{}
				g.Expect(s.Client.Get(bg, types.NamespacedName{Namespace: ns, Name: kueue.WorkloadName(t)}, wl)).To(Succeed())
				g.Expect(wl.Spec.PodSets).To(HaveLen(2))
				g.Expect(meta.IsStatusConditionTrue(wl.Status.Conditions, kueuev1.WorkloadQuotaReserved)).To(BeFalse())
			}
			g.Expect(queued).To(Equal(n - 2))
		}, 30*time.Second, pollEvery).Should(Succeed())
		Consistently(func() int { r, _ := reachedCount(gates); return r }, 2*time.Second, pollEvery).Should(Equal(2))
		// What `kubectl get trials` prints: the Queue column.
		Expect(queueColumn(ns)).To(Equal(map[string]int{evalv1.ReasonAdmitted: 2, evalv1.ReasonQueued: n - 2}))

		By("the two finish; their quota admits the next two")
		for _, name := range running {
			close(gates[name].Release)
		}
		for _, name := range running {
			Eventually(func() bool { return terminal(getTrial(ns, name)) }, 60*time.Second, pollEvery).Should(BeTrue())
		}
		Eventually(func() int { r, _ := reachedCount(gates); return r }, 60*time.Second, pollEvery).Should(Equal(4))
		Consistently(func() int { r, _ := reachedCount(gates); return r }, 2*time.Second, pollEvery).Should(Equal(4))

		By("raising the quota to 6 admits four more, nothing restarted")
		setQuota(cq, 6)
		Eventually(func() int { r, _ := reachedCount(gates); return r }, 60*time.Second, pollEvery).Should(Equal(8))
		Consistently(func() int { r, _ := reachedCount(gates); return r }, time.Second, pollEvery).Should(Equal(8))

		By("all ten complete, each graded once")
		for name, g := range gates {
			if !slicesContains(running, name) {
				close(g.Release)
			}
		}
		Eventually(func(g Gomega) {
			for name := range gates {
				t := &evalv1.Trial{}
				g.Expect(s.Client.Get(bg, types.NamespacedName{Namespace: ns, Name: name}, t)).To(Succeed())
				g.Expect(terminal(t)).To(BeTrue(), describe(t))
			}
		}, 90*time.Second, pollEvery).Should(Succeed())
		for name := range gates {
			t := getTrial(ns, name)
			Expect(t.Status.Phase).To(Equal(evalv1.PhasePassed), describe(t))
			Expect(t.Status.Attempts).To(HaveLen(1), describe(t))
			Expect(t.Status.Grade).NotTo(BeNil(), describe(t))
			Expect(t.Status.Grade.Attempt).To(BeEquivalentTo(1), describe(t))
			Expect(t.Status.Grade.BinaryPass).To(BeTrue(), describe(t))
			wl := &kueuev1.Workload{}
			Eventually(func(g Gomega) {
				g.Expect(s.Client.Get(bg, types.NamespacedName{Namespace: ns, Name: kueue.WorkloadName(t)}, wl)).To(Succeed())
				f := meta.FindStatusCondition(wl.Status.Conditions, kueuev1.WorkloadFinished)
				g.Expect(f).NotTo(BeNil())
				g.Expect(f.Status).To(Equal(metav1.ConditionTrue))
				g.Expect(f.Reason).To(Equal(kueuev1.WorkloadFinishedReasonSucceeded))
				g.Expect(f.Message).To(HavePrefix("trial Passed: attempt 1 graded: score 1, pass true"))
			}, 10*time.Second, pollEvery).Should(Succeed())
		}
		done := &evalv1.Campaign{}
		Eventually(func(g Gomega) {
			g.Expect(s.Client.Get(bg, client.ObjectKeyFromObject(c), done)).To(Succeed())
			g.Expect(done.Status.Counts.Passed).To(BeEquivalentTo(n))
		}, 30*time.Second, pollEvery).Should(Succeed())
		// The quota is free again: nothing stays reserved.
		Eventually(func(g Gomega) {
			q := &kueuev1.ClusterQueue{}
			g.Expect(s.Client.Get(bg, types.NamespacedName{Name: cq}, q)).To(Succeed())
			g.Expect(q.Status.ReservingWorkloads).To(BeZero())
		}, 30*time.Second, pollEvery).Should(Succeed())
	})

	It("ends a preempted Trial's attempt InfraFailed (Preempted), uncounted, and passes it once readmitted", func() {
		ns := newNamespace()
		cq := "cq-" + ns
		queue(ns, cq, 1)
		Expect(s.Client.Create(bg, envtest.ShopTask("shop", ns).Obj())).To(Succeed())
		high := &kueuev1.WorkloadPriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high-" + ns}, Value: 1000}
		Expect(s.Client.Create(bg, high)).To(Succeed())

		key := types.NamespacedName{Namespace: ns, Name: "victim"}
		// maxAttempts 1: the preempted attempt must not use it up.
		s.runHeld(ns, "victim", func(tr *evalv1.Trial) { tr.Spec.RetryPolicy = evalv1.RetryPolicy{MaxAttempts: 1} })

		By("a higher-priority workload takes the quota")
		hp := &kueuev1.Workload{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "urgent"},
			Spec: kueuev1.WorkloadSpec{
				QueueName:        "lq",
				PriorityClassRef: &kueuev1.PriorityClassRef{Group: kueuev1.WorkloadPriorityClassGroup, Kind: kueuev1.WorkloadPriorityClassKind, Name: high.Name},
				Priority:         ptr.To(high.Value),
				PodSets: []kueuev1.PodSet{{Name: "main", Count: 1, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(quotaFor(1).CPU)}}}},
				}}}},
			},
		}
		Expect(s.Client.Create(bg, hp)).To(Succeed())

		Eventually(func(g Gomega) {
			t := &evalv1.Trial{}
			g.Expect(s.Client.Get(bg, key, t)).To(Succeed())
			g.Expect(t.Status.Attempts).NotTo(BeEmpty())
			a := t.Status.Attempts[0]
			g.Expect(a.Outcome).To(Equal(evalv1.OutcomeInfraFailed), describe(t))
			g.Expect(a.Reason).To(Equal(evalv1.ReasonPreempted), describe(t))
			g.Expect(a.Message).To(HavePrefix("attempt 1: Kueue preempted workload "+kueue.WorkloadName(t)+": Preempted to accommodate"), describe(t))
			g.Expect(t.Status.Phase).To(Equal(evalv1.PhasePending), describe(t))
			g.Expect(t.Status.Grade).To(BeNil(), describe(t))
			adm := meta.FindStatusCondition(t.Status.Conditions, evalv1.TrialAdmitted)
			g.Expect(adm).NotTo(BeNil(), describe(t))
			g.Expect(adm.Status).To(Equal(metav1.ConditionFalse), describe(t))
			g.Expect(adm.Reason).To(Equal(evalv1.ReasonPreempted), describe(t))
			g.Expect(podsOf(ns, "victim")).To(BeZero(), describe(t))
		}, 60*time.Second, pollEvery).Should(Succeed())
		Eventually(func(g Gomega) {
			w := &kueuev1.Workload{}
			g.Expect(s.Client.Get(bg, client.ObjectKeyFromObject(hp), w)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(w.Status.Conditions, kueuev1.WorkloadAdmitted)).To(BeTrue())
		}, 30*time.Second, pollEvery).Should(Succeed())
		Consistently(func() int { return len(getTrial(ns, "victim").Status.Attempts) }, time.Second, pollEvery).Should(Equal(1),
			"the preempted Trial starts no attempt while the quota is taken")

		By("the urgent workload finishes; the Trial is readmitted and passes")
		Eventually(func() error {
			w := &kueuev1.Workload{}
			if err := s.Client.Get(bg, client.ObjectKeyFromObject(hp), w); err != nil {
				return err
			}
			meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: kueuev1.WorkloadFinished,
				Status: metav1.ConditionTrue, Reason: kueuev1.WorkloadFinishedReasonSucceeded, Message: "done"})
			return s.Client.Status().Update(bg, w)
		}, 10*time.Second, pollEvery).Should(Succeed())
		Eventually(func() bool { return terminal(getTrial(ns, "victim")) }, 60*time.Second, pollEvery).Should(BeTrue())
		t := getTrial(ns, "victim")
		Expect(t.Status.Phase).To(Equal(evalv1.PhasePassed), describe(t))
		Expect(t.Status.Attempts).To(HaveLen(2), describe(t))
		Expect(t.Status.Attempts[1].Outcome).To(Equal(evalv1.OutcomePassed), describe(t))
		Expect(t.Status.Grade).NotTo(BeNil(), describe(t))
		Expect(t.Status.Grade.Attempt).To(BeEquivalentTo(2), describe(t))
		adm := meta.FindStatusCondition(t.Status.Conditions, evalv1.TrialAdmitted)
		Expect(adm).NotTo(BeNil())
		Expect(adm.Reason).To(Equal(evalv1.ReasonAdmitted), describe(t))
		Expect(adm.Message).To(ContainSubstring("ClusterQueue "+cq), describe(t))
	})

	It("runs config/samples/kueue's queued Campaign under its queues", func() {
		ns := newNamespace()
		applySample("kueue/kueue_queues.yaml", ns)
		for _, f := range []string{"configmap_shop_orders_02_state.yaml", "eval_v1alpha1_task_shop.yaml", "kueue/eval_v1alpha1_campaign_shop_queued.yaml"} {
			applySample(f, ns)
		}
		key := types.NamespacedName{Namespace: ns, Name: "shop-oracle-queued"}
		Eventually(func(g Gomega) {
			c := &evalv1.Campaign{}
			g.Expect(s.Client.Get(bg, key, c)).To(Succeed())
			g.Expect(c.Status.Counts.Total).To(BeEquivalentTo(12))
			g.Expect(c.Status.Counts.Passed).To(BeEquivalentTo(12), "counts %+v", c.Status.Counts)
		}, 120*time.Second, pollEvery).Should(Succeed())
		var trials evalv1.TrialList
		Expect(s.Client.List(bg, &trials, client.InNamespace(ns))).To(Succeed())
		Expect(trials.Items).To(HaveLen(12))
		for i := range trials.Items {
			t := &trials.Items[i]
			Expect(t.Labels[evalv1.LabelQueueName]).To(Equal("evals"))
			adm := meta.FindStatusCondition(t.Status.Conditions, evalv1.TrialAdmitted)
			Expect(adm).NotTo(BeNil(), describe(t))
			Expect(adm.Message).To(HavePrefix("admitted by ClusterQueue tolokaforge (LocalQueue evals"), describe(t))
		}
	})

	It("gives a deleted Trial's quota back (no garbage collector runs here)", func() {
		ns := newNamespace()
		cq := "cq-" + ns
		queue(ns, cq, 1)
		Expect(s.Client.Create(bg, envtest.ShopTask("shop", ns).Obj())).To(Succeed())
		s.runHeld(ns, "doomed", nil)
		wlKey := types.NamespacedName{Namespace: ns, Name: kueue.WorkloadName(getTrial(ns, "doomed"))}
		Expect(s.Client.Delete(bg, getTrial(ns, "doomed"))).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(s.Client.Get(bg, wlKey, &kueuev1.Workload{}))
		}, 30*time.Second, pollEvery).Should(BeTrue(), "the deleted Trial's Workload stays")
		Eventually(func(g Gomega) {
			q := &kueuev1.ClusterQueue{}
			g.Expect(s.Client.Get(bg, types.NamespacedName{Name: cq}, q)).To(Succeed())
			g.Expect(q.Status.ReservingWorkloads).To(BeZero())
		}, 30*time.Second, pollEvery).Should(Succeed())
		Eventually(func() int { return podsOf(ns, "doomed") }, 30*time.Second, pollEvery).Should(BeZero())
	})

	It("runs no Trial under another Trial's admission, whatever Workload its labels name", func() {
		ns := newNamespace()
		queue(ns, "cq-"+ns, 1)
		Expect(s.Client.Create(bg, envtest.ShopTask("shop", ns).Obj())).To(Succeed())
		gate := s.runHeld(ns, "victim", nil)
		victimWL := kueue.WorkloadName(getTrial(ns, "victim"))

		By("a Trial made by hand naming the admitted Workload as its prebuilt one")
		h := envtest.MakeTrial("hijacker", ns).Task("shop").Agent(envtest.Oracle()).Obj()
		h.Spec.UserSimulator = scriptedUser()
		h.Labels = map[string]string{evalv1.LabelQueueName: "lq", kueue.PrebuiltWorkloadLabel: victimWL}
		Expect(s.Client.Create(bg, h)).To(Succeed())
		Eventually(func(g Gomega) {
			t := getTrial(ns, "hijacker")
			adm := meta.FindStatusCondition(t.Status.Conditions, evalv1.TrialAdmitted)
			g.Expect(adm).NotTo(BeNil(), describe(t))
			g.Expect(adm.Status).To(Equal(metav1.ConditionFalse), describe(t))
			g.Expect(adm.Message).To(ContainSubstring("workload "+victimWL+" belongs to Trial victim, not to this Trial"), describe(t))
		}, 30*time.Second, pollEvery).Should(Succeed())
		Consistently(func(g Gomega) {
			t := getTrial(ns, "hijacker")
			g.Expect(t.Status.Attempts).To(BeEmpty(), describe(t))
			g.Expect(podsOf(ns, "hijacker")).To(BeZero())
		}, 2*time.Second, pollEvery).Should(Succeed())
		wl := &kueuev1.Workload{}
		Expect(s.Client.Get(bg, types.NamespacedName{Namespace: ns, Name: victimWL}, wl)).To(Succeed())
		Expect(wl.OwnerReferences).To(HaveLen(1))
		Expect(wl.OwnerReferences[0].Name).To(Equal("victim"))

		By("the victim runs to its end on its own admission")
		close(gate.Release)
		Eventually(func() bool { return terminal(getTrial(ns, "victim")) }, 60*time.Second, pollEvery).Should(BeTrue())
		Expect(getTrial(ns, "victim").Status.Phase).To(Equal(evalv1.PhasePassed))
		Consistently(func() int { return podsOf(ns, "hijacker") }, time.Second, pollEvery).Should(BeZero())
	})

	It("places a Trial's pods on the nodes of the ResourceFlavor Kueue admitted it into", func() {
		ns := newNamespace()
		spotTol := corev1.Toleration{Key: "pool", Operator: corev1.TolerationOpEqual, Value: "spot", Effect: corev1.TaintEffectNoSchedule}
		rf := kueueenv.ResourceFlavor("spot-" + ns)
		rf.Spec.NodeLabels = map[string]string{"pool": "spot"}
		rf.Spec.Tolerations = []corev1.Toleration{spotTol}
		Expect(s.Client.Create(bg, rf)).To(Succeed())
		Expect(s.Client.Create(bg, kueueenv.ClusterQueue("cq-"+ns, rf.Name, quotaFor(1)))).To(Succeed())
		Expect(s.Client.Create(bg, kueueenv.LocalQueue(ns, "lq", "cq-"+ns))).To(Succeed())
		Expect(s.Client.Create(bg, envtest.ShopTask("shop", ns).Obj())).To(Succeed())
		gate := s.runHeld(ns, "placed", func(tr *evalv1.Trial) {
			tr.Spec.Runner.NodeSelector = map[string]string{"pool": "on-demand", "zone": "a"}
		})
		var pods corev1.PodList
		Expect(s.Client.List(bg, &pods, client.InNamespace(ns), client.MatchingLabels{evalv1.LabelTrial: "placed"})).To(Succeed())
		Expect(pods.Items).To(HaveLen(2))
		for _, p := range pods.Items {
			want := map[string]string{"pool": "spot"}
			if p.Labels[evalv1.LabelRole] == evalv1.RoleRunner {
				want["zone"] = "a" // the Trial's own key stays; the flavor's wins "pool"
			}
			Expect(p.Spec.NodeSelector).To(Equal(want), p.Name)
			Expect(p.Spec.Tolerations).To(ContainElement(spotTol), p.Name)
		}
		// Its pods are ready: Kueue's waitForPodsReady would not evict it.
		Eventually(func(g Gomega) {
			wl := &kueuev1.Workload{}
			g.Expect(s.Client.Get(bg, types.NamespacedName{Namespace: ns, Name: kueue.WorkloadName(getTrial(ns, "placed"))}, wl)).To(Succeed())
			c := meta.FindStatusCondition(wl.Status.Conditions, kueuev1.WorkloadPodsReady)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(kueuev1.WorkloadStarted))
		}, 30*time.Second, pollEvery).Should(Succeed())
		close(gate.Release)
		Eventually(func() bool { return terminal(getTrial(ns, "placed")) }, 60*time.Second, pollEvery).Should(BeTrue())
		Expect(getTrial(ns, "placed").Status.Phase).To(Equal(evalv1.PhasePassed))
	})

	It("says a Trial waits for its missing WorkloadPriorityClass, and runs it once the class exists", func() {
		ns := newNamespace()
		queue(ns, "cq-"+ns, 1)
		Expect(s.Client.Create(bg, envtest.ShopTask("shop", ns).Obj())).To(Succeed())
		class := "later-" + ns
		tr := envtest.MakeTrial("classy", ns).Task("shop").Agent(envtest.Oracle()).Obj()
		tr.Spec.UserSimulator = scriptedUser()
		tr.Labels = map[string]string{evalv1.LabelQueueName: "lq", evalv1.LabelPriorityClass: class}
		Expect(s.Client.Create(bg, tr)).To(Succeed())
		Eventually(func(g Gomega) {
			t := getTrial(ns, "classy")
			adm := meta.FindStatusCondition(t.Status.Conditions, evalv1.TrialAdmitted)
			g.Expect(adm).NotTo(BeNil(), describe(t))
			g.Expect(adm.Message).To(Equal(fmt.Sprintf(
				"waiting for its workload in LocalQueue lq to be created: WorkloadPriorityClass %q (label %s) does not exist", class, evalv1.LabelPriorityClass)), describe(t))
		}, 30*time.Second, pollEvery).Should(Succeed())
		Expect(s.Client.Create(bg, &kueuev1.WorkloadPriorityClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Value: 10})).To(Succeed())
		Eventually(func() bool { return terminal(getTrial(ns, "classy")) }, 60*time.Second, pollEvery).Should(BeTrue())
		t := getTrial(ns, "classy")
		Expect(t.Status.Phase).To(Equal(evalv1.PhasePassed), describe(t))
	})

	It("never holds a Trial without a queue label", func() {
		ns := newNamespace()
		Expect(s.Client.Create(bg, envtest.ShopTask("shop", ns).Obj())).To(Succeed())
		tr := envtest.MakeTrial("free", ns).Task("shop").Agent(envtest.Oracle()).Obj()
		tr.Spec.UserSimulator = scriptedUser()
		Expect(s.Client.Create(bg, tr)).To(Succeed())
		Eventually(func() bool { return terminal(getTrial(ns, "free")) }, 60*time.Second, pollEvery).Should(BeTrue())
		t := getTrial(ns, "free")
		Expect(t.Status.Phase).To(Equal(evalv1.PhasePassed), describe(t))
		Expect(t.Spec.Suspend).To(BeNil())
		Expect(meta.FindStatusCondition(t.Status.Conditions, evalv1.TrialAdmitted)).To(BeNil(), describe(t))
		var wls kueuev1.WorkloadList
		Expect(s.Client.List(bg, &wls, client.InNamespace(ns))).To(Succeed())
		Expect(wls.Items).To(BeEmpty())
	})
})

// applySample creates every object of config/samples/<file>, namespaced ones in ns.
func applySample(file, ns string) []*unstructured.Unstructured {
	GinkgoHelper()
	f, err := os.Open(filepath.Join("..", "..", "config", "samples", file))
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	var out []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(f))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		Expect(err).NotTo(HaveOccurred(), file)
		u := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal(doc, &u.Object)).To(Succeed(), file)
		if len(u.Object) == 0 {
			continue
		}
		switch u.GetKind() {
		case "ResourceFlavor", "ClusterQueue", "WorkloadPriorityClass":
		default:
			u.SetNamespace(ns)
		}
		Expect(s.Client.Create(bg, u)).To(Succeed(), "%s: %s %s", file, u.GetKind(), u.GetName())
		out = append(out, u)
	}
}

// queueColumn counts the values of the Queue column the API server prints
// for ns's Trials (the Table kubectl asks for).
func queueColumn(ns string) map[string]int {
	GinkgoHelper()
	cs, err := kubernetes.NewForConfig(s.Config)
	Expect(err).NotTo(HaveOccurred())
	raw, err := cs.RESTClient().Get().AbsPath("/apis", evalv1.GroupVersion.Group, evalv1.GroupVersion.Version, "namespaces", ns, "trials").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(bg)
	Expect(err).NotTo(HaveOccurred())
	var table metav1.Table
	Expect(json.Unmarshal(raw, &table)).To(Succeed())
	col := -1
	for i, c := range table.ColumnDefinitions {
		if c.Name == "Queue" {
			col = i
		}
	}
	Expect(col).NotTo(Equal(-1), "no Queue column in %+v", table.ColumnDefinitions)
	out := map[string]int{}
	for _, r := range table.Rows {
		v, _ := r.Cells[col].(string)
		out[v]++
	}
	return out
}

func slicesContains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
