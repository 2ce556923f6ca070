package kueue_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueuev1 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"tolokaforge.io/operator/api/runnerpb"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers"
	"tolokaforge.io/operator/controllers/kueue"
	"tolokaforge.io/operator/test/envtest"
	"tolokaforge.io/operator/test/kueueenv"
)

// dirtyCleanup makes the CleanupTrial of the Trials it holds refuse with the
// words of a slot runner's baseline check (the simulator's runners run
// without --slot, so their own check never fails).
type dirtyCleanup struct{ m sync.Map }

func (d *dirtyCleanup) set(key types.NamespacedName) { d.m.Store(key, true) }

func (d *dirtyCleanup) wrap(key types.NamespacedName, _ int32, c runnerpb.RunnerServiceClient) runnerpb.RunnerServiceClient {
	return &refusingCleanup{RunnerServiceClient: c, key: key, d: d}
}

type refusingCleanup struct {
	runnerpb.RunnerServiceClient
	key types.NamespacedName
	d   *dirtyCleanup
}

const leftover = "1 processes below the runner belong to no registered trial: 4242 (leftover)"

func (r *refusingCleanup) CleanupTrial(ctx context.Context, in *runnerpb.CleanupTrialRequest, opts ...grpc.CallOption) (*runnerpb.CleanupTrialResponse, error) {
	resp, err := r.RunnerServiceClient.CleanupTrial(ctx, in, opts...)
	if _, dirty := r.d.m.Load(r.key); dirty && err == nil {
		return &runnerpb.CleanupTrialResponse{Success: false, Error: fmt.Sprintf(
			"trial '%s' was cleaned up but the slot is not back to its baseline: %s", in.GetTrialId(), leftover)}, nil
	}
	return resp, err
}

// slotQuotaFor is room for n slotted Trials: their slot pods' requests, and
// n pods (a Workload reserving two pods per Trial would fit n/2).
func slotQuotaFor(n int64) kueueenv.Quota {
	q := quotaFor(n)
	q.Pods = fmt.Sprint(n)
	return q
}

// slotPodWatch follows a namespace's slot pods: the most alive (created, not
// being deleted) at once, and every one ever created.
type slotPodWatch struct {
	mu            sync.Mutex
	live, created map[string]bool
	maxLive       int
	stop          func()
}

func watchSlotPods(ns string) *slotPodWatch {
	GinkgoHelper()
	ctx, cancel := context.WithCancel(bg)
	wi, err := s.Client.Watch(ctx, &corev1.PodList{}, client.InNamespace(ns))
	Expect(err).NotTo(HaveOccurred())
	w := &slotPodWatch{live: map[string]bool{}, created: map[string]bool{}}
	done := make(chan struct{})
	w.stop = func() { cancel(); wi.Stop(); <-done }
	go func() {
		defer close(done)
		for ev := range wi.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			w.mu.Lock()
			if _, slot := pod.Labels[evalv1.LabelSlotClass]; !slot {
				// A per-attempt pod: counted apart, as a failure below.
				w.created["pod:"+pod.Name] = true
			} else {
				switch {
				case ev.Type == watch.Deleted || pod.DeletionTimestamp != nil:
					delete(w.live, pod.Name)
				case ev.Type == watch.Added:
					w.created[pod.Name] = true
					w.live[pod.Name] = true
				}
				w.maxLive = max(w.maxLive, len(w.live))
			}
			w.mu.Unlock()
		}
	}()
	return w
}

func (w *slotPodWatch) counts() (maxLive, created int, pods []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for name := range w.created {
		if strings.HasPrefix(name, "pod:") {
			pods = append(pods, name)
		} else {
			created++
		}
	}
	return w.maxLive, created, pods
}

// admissionWatch checks every version of a namespace's Trials it sees: an
// attempt names a slot while it runs only when the Trial is admitted, and
// (strict) a Trial not admitted has no attempt at all. It also keeps the
// most Trials running on slots at once.
type admissionWatch struct {
	mu         sync.Mutex
	onSlot     map[string]bool
	maxOnSlot  int
	violations []string
	stop       func()
}

func watchAdmission(ns string, strict bool) *admissionWatch {
	GinkgoHelper()
	ctx, cancel := context.WithCancel(bg)
	wi, err := s.Client.Watch(ctx, &evalv1.TrialList{}, client.InNamespace(ns))
	Expect(err).NotTo(HaveOccurred())
	w := &admissionWatch{onSlot: map[string]bool{}}
	done := make(chan struct{})
	w.stop = func() { cancel(); wi.Stop(); <-done }
	go func() {
		defer close(done)
		for ev := range wi.ResultChan() {
			t, ok := ev.Object.(*evalv1.Trial)
			if !ok {
				continue
			}
			admitted := meta.IsStatusConditionTrue(t.Status.Conditions, evalv1.TrialAdmitted)
			running := false
			w.mu.Lock()
			for _, a := range t.Status.Attempts {
				if a.Outcome != evalv1.OutcomeRunning {
					continue
				}
				if a.Slot != "" {
					running = true
					if !admitted {
						w.violations = append(w.violations, fmt.Sprintf("attempt %d on slot %s while not admitted: %s", a.Number, a.Slot, describe(t)))
					}
				}
			}
			if strict && !admitted && len(t.Status.Attempts) > 0 {
				w.violations = append(w.violations, "an attempt while not admitted: "+describe(t))
			}
			w.onSlot[t.Name] = running && ev.Type != watch.Deleted
			n := 0
			for _, on := range w.onSlot {
				if on {
					n++
				}
			}
			w.maxOnSlot = max(w.maxOnSlot, n)
			w.mu.Unlock()
		}
	}()
	return w
}

func (w *admissionWatch) result() (maxOnSlot int, violations []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.maxOnSlot, append([]string(nil), w.violations...)
}

func liveSlotPods(ns string) []string {
	GinkgoHelper()
	var list corev1.PodList
	Expect(s.Client.List(bg, &list, client.InNamespace(ns), client.HasLabels{evalv1.LabelSlotClass})).To(Succeed())
	var out []string
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p.Name)
		}
	}
	return out
}

func campaignEvents(ns, name string) []string {
	GinkgoHelper()
	var evs eventsv1.EventList
	Expect(s.Client.List(bg, &evs, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, e := range evs.Items {
		if e.Regarding.Kind == "Campaign" && e.Regarding.Name == name {
			out = append(out, fmt.Sprintf("%s/%s: %s", e.Type, e.Reason, e.Note))
		}
	}
	return out
}

func slotCampaign(ns, name string, n int32) *evalv1.Campaign {
	c := envtest.MakeCampaign(name, ns).Tasks("shop").TrialsPerTask(n).MaxParallel(n).Agent("oracle", envtest.Oracle()).Obj()
	c.Spec.UserSimulator = scriptedUser()
	c.Labels = map[string]string{evalv1.LabelQueueName: "lq"}
	// idleSeconds far off: only the Kueue bound deletes a free slot here.
	c.Spec.Slots = &evalv1.SlotPolicy{Mode: evalv1.SlotsEnabled, IdleSeconds: ptr.To[int32](300)}
	return c
}

var _ = Describe("Kueue with warm slots", func() {
	It("runs a slotted Campaign under room for 2: no slot before admission, never more than 2 slot pods, all pass", func() {
		ns := newNamespace()
		cq := "cq-" + ns
		Expect(s.Client.Create(bg, kueueenv.ClusterQueue(cq, flavor, slotQuotaFor(2)))).To(Succeed())
		Expect(s.Client.Create(bg, kueueenv.LocalQueue(ns, "lq", cq))).To(Succeed())
		Expect(s.Client.Create(bg, envtest.ShopTask("shop", ns).Obj())).To(Succeed())
		pods, adm := watchSlotPods(ns), watchAdmission(ns, true)
		defer pods.stop()
		defer adm.stop()

		const n = 6
		gates := map[string]*envtest.Gate{}
		for i := range n {
			name := fmt.Sprintf("warm-oracle-shop-%d", i)
			gates[name] = s.gates.Hold(types.NamespacedName{Namespace: ns, Name: name}, 1)
		}
		c := slotCampaign(ns, "warm", n)
		Expect(s.Client.Create(bg, c)).To(Succeed())

		By("two Trials run, one slot pod each: the quota on pods counts one per Trial")
		Eventually(func() int { r, _ := reachedCount(gates); return r }, 60*time.Second, pollEvery).Should(Equal(2))
		Consistently(func() int { r, _ := reachedCount(gates); return r }, 2*time.Second, pollEvery).Should(Equal(2))
		_, running := reachedCount(gates)
		Expect(liveSlotPods(ns)).To(HaveLen(2))
		for name := range gates {
			t := getTrial(ns, name)
			wl := &kueuev1.Workload{}
			Expect(s.Client.Get(bg, types.NamespacedName{Namespace: ns, Name: kueue.WorkloadName(t)}, wl)).To(Succeed())
			Expect(wl.Spec.PodSets).To(HaveLen(1), "workload of %s", name)
			ps := wl.Spec.PodSets[0]
			Expect(string(ps.Name)).To(Equal(controllers.SlotPodSet))
			Expect(ps.Count).To(BeEquivalentTo(1))
			if !slicesContains(running, name) {
				Expect(t.Status.Attempts).To(BeEmpty(), describe(t))
				Expect(meta.IsStatusConditionTrue(t.Status.Conditions, evalv1.TrialAdmitted)).To(BeFalse(), describe(t))
				continue
			}
			// What the Workload reserves is what the slot pod asks.
			Expect(t.Status.Attempts).To(HaveLen(1))
			slot := t.Status.Attempts[0].Slot
			Expect(slot).To(HavePrefix("warm-slot-"), describe(t))
			pod := &corev1.Pod{}
			Expect(s.Client.Get(bg, types.NamespacedName{Namespace: ns, Name: slot}, pod)).To(Succeed())
			Expect(len(pod.Spec.Containers)).To(Equal(len(ps.Template.Spec.Containers)))
			for i, ctr := range pod.Spec.Containers {
				Expect(ps.Template.Spec.Containers[i].Name).To(Equal(ctr.Name))
				for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
					want, got := ctr.Resources.Requests[r], ps.Template.Spec.Containers[i].Resources.Requests[r]
					Expect(got.Cmp(want)).To(BeZero(), "%s %s: workload %s, pod %s", ctr.Name, r, got.String(), want.String())
				}
			}
		}

		By("all six pass, two at a time, on warm slots")
		for _, g := range gates {
			close(g.Release)
		}
		Eventually(func(g Gomega) {
			for name := range gates {
				t := &evalv1.Trial{}
				g.Expect(s.Client.Get(bg, types.NamespacedName{Namespace: ns, Name: name}, t)).To(Succeed())
				g.Expect(terminal(t)).To(BeTrue(), describe(t))
			}
		}, 120*time.Second, pollEvery).Should(Succeed())
		served := map[string]int{}
		for name := range gates {
			t := getTrial(ns, name)
			Expect(t.Status.Phase).To(Equal(evalv1.PhasePassed), describe(t))
			Expect(t.Status.Attempts).To(HaveLen(1), describe(t))
			a := t.Status.Attempts[0]
			Expect(a.Slot).To(HavePrefix("warm-slot-"), describe(t))
			Expect(a.RunnerPod).To(BeEmpty(), describe(t))
			served[a.Slot]++
		}
		maxOnSlot, violations := adm.result()
		Expect(violations).To(BeEmpty())
		Expect(maxOnSlot).To(Equal(2), "Trials running on slots at once")
		maxLive, created, perAttempt := pods.counts()
		Expect(perAttempt).To(BeEmpty(), "per-attempt pods")
		Expect(maxLive).To(BeNumerically("<=", 2), "slot pods alive at once")
		Expect(len(served)).To(BeNumerically("<", n), "no slot served two Trials: %v", served)
		Eventually(func(g Gomega) {
			done := &evalv1.Campaign{}
			g.Expect(s.Client.Get(bg, client.ObjectKeyFromObject(c), done)).To(Succeed())
			g.Expect(done.Status.Counts.Passed).To(BeEquivalentTo(n))
		}, 30*time.Second, pollEvery).Should(Succeed())

		By("no admitted Trial left: the slots go long before idleSeconds (300)")
		Eventually(func() []string { return liveSlotPods(ns) }, 15*time.Second, pollEvery).Should(BeEmpty())
		Eventually(func(g Gomega) {
			q := &kueuev1.ClusterQueue{}
			g.Expect(s.Client.Get(bg, types.NamespacedName{Name: cq}, q)).To(Succeed())
			g.Expect(q.Status.ReservingWorkloads).To(BeZero())
		}, 30*time.Second, pollEvery).Should(Succeed())
		GinkgoWriter.Printf("kueue slots: %d Trials on %d slot pods (at most %d alive at once), served %v\n", n, created, maxLive, served)
	})

	for _, dirty := range []bool{false, true} {
		title := "frees the slot of an evicted attempt once CleanupTrial says it is clean, and Kueue's bound then deletes it"
		if dirty {
			title = "replaces the slot of an evicted attempt whose CleanupTrial finds it dirty, and never reuses it"
		}
		It(title, func() {
			ns := newNamespace()
			cq := "cq-" + ns
			Expect(s.Client.Create(bg, kueueenv.ClusterQueue(cq, flavor, slotQuotaFor(1)))).To(Succeed())
			Expect(s.Client.Create(bg, kueueenv.LocalQueue(ns, "lq", cq))).To(Succeed())
			Expect(s.Client.Create(bg, envtest.ShopTask("shop", ns).Obj())).To(Succeed())
			high := &kueuev1.WorkloadPriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high-" + ns}, Value: 1000}
			Expect(s.Client.Create(bg, high)).To(Succeed())
			adm := watchAdmission(ns, false)
			defer adm.stop()

			key := types.NamespacedName{Namespace: ns, Name: "ev-oracle-shop-0"}
			gate := s.gates.Hold(key, 1)
			c := slotCampaign(ns, "ev", 1)
			Expect(s.Client.Create(bg, c)).To(Succeed())
			Eventually(gate.Reached, 60*time.Second).Should(BeClosed())
			held := getTrial(ns, key.Name)
			Expect(held.Status.Attempts).To(HaveLen(1))
			slot := held.Status.Attempts[0].Slot
			Expect(slot).To(HavePrefix("ev-slot-"), describe(held))
			if dirty {
				s.dirty.set(key)
			}

			By("a higher-priority workload preempts the Trial mid-attempt")
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
				g.Expect(a.Slot).To(Equal(slot), describe(t))
				g.Expect(t.Status.Phase).To(Equal(evalv1.PhasePending), describe(t))
			}, 60*time.Second, pollEvery).Should(Succeed())

			By("the slot goes: replaced when dirty, else as one Kueue no longer counts for")
			Eventually(func() bool {
				pod := &corev1.Pod{}
				err := s.Client.Get(bg, types.NamespacedName{Namespace: ns, Name: slot}, pod)
				return apierrors.IsNotFound(err) || (err == nil && pod.DeletionTimestamp != nil)
			}, 30*time.Second, pollEvery).Should(BeTrue(), "slot %s outlives its Trial's admission", slot)
			replaced := func() []string {
				var out []string
				for _, e := range campaignEvents(ns, "ev") {
					if strings.HasPrefix(e, "Warning/"+evalv1.ReasonSlotReplaced+": ") {
						out = append(out, e)
					}
				}
				return out
			}
			if dirty {
				Eventually(replaced, 10*time.Second, pollEvery).Should(ConsistOf(And(
					ContainSubstring("slot "+slot+" is replaced after attempt 1 of trial "+key.Name),
					ContainSubstring("CleanupTrial refused"), ContainSubstring(leftover))))
			} else {
				Consistently(replaced, 2*time.Second, pollEvery).Should(BeEmpty(), "a clean slot was replaced")
			}
			// Quota means pods: while the urgent workload holds it, the
			// Trial has no slot and no attempt.
			Consistently(func(g Gomega) {
				g.Expect(liveSlotPods(ns)).To(BeEmpty())
				g.Expect(getTrial(ns, key.Name).Status.Attempts).To(HaveLen(1))
			}, 2*time.Second, pollEvery).Should(Succeed())

			By("the urgent workload finishes: readmitted, the Trial passes on another slot")
			s.dirty.m.Delete(key)
			Eventually(func() error {
				w := &kueuev1.Workload{}
				if err := s.Client.Get(bg, client.ObjectKeyFromObject(hp), w); err != nil {
					return err
				}
				meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: kueuev1.WorkloadFinished,
					Status: metav1.ConditionTrue, Reason: kueuev1.WorkloadFinishedReasonSucceeded, Message: "done"})
				return s.Client.Status().Update(bg, w)
			}, 10*time.Second, pollEvery).Should(Succeed())
			Eventually(func() bool { return terminal(getTrial(ns, key.Name)) }, 60*time.Second, pollEvery).Should(BeTrue())
			t := getTrial(ns, key.Name)
			Expect(t.Status.Phase).To(Equal(evalv1.PhasePassed), describe(t))
			Expect(t.Status.Attempts).To(HaveLen(2), describe(t))
			Expect(t.Status.Attempts[1].Slot).To(HavePrefix("ev-slot-"), describe(t))
			Expect(t.Status.Attempts[1].Slot).NotTo(Equal(slot), "the evicted attempt's slot was reused")
			_, violations := adm.result()
			Expect(violations).To(BeEmpty())
		})
	}
})
