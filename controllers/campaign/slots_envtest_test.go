package campaign_test

import (
	"context"
	"fmt"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers"
	"tolokaforge.io/operator/controllers/campaign"
	"tolokaforge.io/operator/test/envtest"
)

// podWatch records every pod created in a namespace, by name, split into
// slot pods and the per-attempt pods of Trials.
type podWatch struct {
	mu          sync.Mutex
	slots, pods map[string]bool
	stop        func()
	done        chan struct{}
}

func watchPods(ns string) *podWatch {
	GinkgoHelper()
	ctx, cancel := context.WithCancel(bg)
	wi, err := s.Client.Watch(ctx, &corev1.PodList{}, client.InNamespace(ns))
	Expect(err).NotTo(HaveOccurred())
	w := &podWatch{slots: map[string]bool{}, pods: map[string]bool{}, done: make(chan struct{})}
	w.stop = func() { cancel(); wi.Stop(); <-w.done }
	go func() {
		defer close(w.done)
		for ev := range wi.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type != watch.Added {
				continue
			}
			w.mu.Lock()
			if _, slot := pod.Labels[evalv1.LabelSlotClass]; slot {
				w.slots[pod.Name] = true
			} else {
				w.pods[pod.Name] = true
			}
			w.mu.Unlock()
		}
	}()
	return w
}

func (w *podWatch) counts() (slots, pods int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.slots), len(w.pods)
}

// writesOf counts the manager's writes by kind between two snapshots, with
// events (core and events.k8s.io) apart.
func writesOf(before, after map[string]int64) (total, events int64, kinds map[string]int64) {
	kinds = map[string]int64{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			kinds[k] = d
			total += d
			if strings.Contains(k, " events") {
				events += d
			}
		}
	}
	return total, events, kinds
}

var _ = Describe("Campaign on warm slots", func() {
	It("runs 6 Trials at maxParallel 2 on at most 2 slot pods, every attempt naming its slot", func() {
		ns := newNamespace()
		create(shopTask(ns, "shop-a", "a"))
		pw := watchPods(ns)
		w0 := s.api.WritesByKind()
		c := newCampaign(ns, "warm", 6, 2, "shop-a").Agent("oracle", envtest.Oracle()).Obj()
		c.Spec.Slots = &evalv1.SlotPolicy{Mode: evalv1.SlotsEnabled, IdleSeconds: ptr.To[int32](1)}
		create(c)
		c = completed(client.ObjectKeyFromObject(c), evalv1.ReasonFinished)
		total, events, kinds := writesOf(w0, s.api.WritesByKind())

		Expect(c.Status.Counts).To(Equal(evalv1.TrialCounts{Total: 6, Passed: 6}))
		trials := trialsOf(ns, "warm")
		Expect(trials).To(HaveLen(6))
		for _, tr := range trials {
			Expect(tr.Spec.Slots.Enabled()).To(BeTrue(), "trial %s spec.slots", tr.Name)
			Expect(tr.Status.Phase).To(Equal(evalv1.PhasePassed), "trial %s", tr.Name)
			for _, a := range tr.Status.Attempts {
				Expect(a.Slot).To(HavePrefix("warm-slot-"), "trial %s attempt %d", tr.Name, a.Number)
				Expect(a.RunnerPod).To(BeEmpty(), "trial %s attempt %d", tr.Name, a.Number)
			}
		}
		// One event per Trial, at its end: none for its intermediate states.
		eventually(waitLong, func() error {
			var evs eventsv1.EventList
			if err := s.Client.List(bg, &evs, client.InNamespace(ns)); err != nil {
				return err
			}
			per := map[string][]string{}
			for _, e := range evs.Items {
				if e.Regarding.Kind == "Trial" {
					per[e.Regarding.Name] = append(per[e.Regarding.Name], e.Type+"/"+e.Reason)
				}
			}
			for _, tr := range trials {
				if got := per[tr.Name]; len(got) != 1 || got[0] != "Normal/Passed" {
					return fmt.Errorf("trial %s events %v, want [Normal/Passed]", tr.Name, got)
				}
			}
			return nil
		})
		slots, pods := pw.counts()
		Expect(slots).To(BeNumerically(">=", 1))
		Expect(slots).To(BeNumerically("<=", 2), "slot pods ever created (maxParallel 2)")
		Expect(pods).To(BeZero(), "per-attempt pods")
		// Secrets are written for slots only: a Trial without a judge has no
		// gateway Secret to revoke, so its end deletes none (a DELETE
		// answered 404 is still a write).
		Expect(kinds["DELETE secrets"]).To(BeNumerically("<=", slots), "secret deletions: %v", kinds)

		// The Campaign owns the slots' objects; its one slot policy exists.
		np := &networkingv1.NetworkPolicy{}
		Expect(s.Client.Get(bg, types.NamespacedName{Namespace: ns, Name: controllers.SlotPolicyName("warm")}, np)).To(Succeed())
		Expect(metav1.GetControllerOf(np).UID).To(Equal(c.UID))

		// idleSeconds 1: with no Trial left to wait, the slots go.
		eventually(waitLong, func() error {
			var list corev1.PodList
			if err := s.Client.List(bg, &list, client.InNamespace(ns), client.HasLabels{evalv1.LabelSlotClass}); err != nil {
				return err
			}
			for _, p := range list.Items {
				if p.DeletionTimestamp == nil {
					return fmt.Errorf("slot pod %s still there", p.Name)
				}
			}
			return nil
		})
		pw.stop()
		GinkgoWriter.Printf("slots: %d slot pods for 6 Trials; manager API writes %.1f/Trial, events %.1f/Trial; by kind: %v\n",
			slots, float64(total)/6, float64(events)/6, kinds)
	})

	// A slot pod killed mid-trial: the attempt ends InfraFailed (as with a
	// per-attempt pod), its slot is replaced with one
	// Warning on the Campaign naming it, and the retry runs on another slot.
	It("replaces a slot killed mid-trial and retries the attempt on another", func() {
		ns := newNamespace()
		create(shopTask(ns, "shop", "ok"))
		c := newCampaign(ns, "fault", 3, 2, "shop").Agent("oracle", envtest.Oracle()).Obj()
		c.Spec.Slots = &evalv1.SlotPolicy{Mode: evalv1.SlotsEnabled}
		victim := types.NamespacedName{Namespace: ns, Name: campaign.TrialName("fault", "oracle", "shop", 1)}
		g := s.gates.Hold(victim, 1)
		create(c)
		Eventually(g.Reached, waitLong).Should(BeClosed(), "trial %s never reached its agent", victim.Name)
		tr := &evalv1.Trial{}
		Expect(s.Client.Get(bg, victim, tr)).To(Succeed())
		Expect(tr.Status.Attempts).To(HaveLen(1))
		killed := tr.Status.Attempts[0].Slot
		Expect(killed).NotTo(BeEmpty(), "the running attempt names no slot")
		Expect(s.Sim.Kill(ns, killed)).To(Succeed())
		close(g.Release)

		c = completed(client.ObjectKeyFromObject(c), evalv1.ReasonFinished)
		Expect(c.Status.Counts).To(Equal(evalv1.TrialCounts{Total: 3, Passed: 3}))
		Expect(s.Client.Get(bg, victim, tr)).To(Succeed())
		Expect(tr.Status.Attempts).To(HaveLen(2), "attempts %+v", tr.Status.Attempts)
		first, second := tr.Status.Attempts[0], tr.Status.Attempts[1]
		Expect(first.Outcome).To(Equal(evalv1.OutcomeInfraFailed))
		// Whoever sees it first names it: the controller (the pod failed)
		// or the driver (its runner stopped answering).
		Expect(first.Reason).To(BeElementOf(evalv1.ReasonPodFailed, evalv1.ReasonPodLost, evalv1.ReasonRunnerUnavailable), "attempt 1: %s", first.Message)
		Expect(second.Slot).NotTo(BeEmpty())
		Expect(second.Slot).NotTo(Equal(killed), "the retry ran on the killed slot")
		for _, other := range trialsOf(ns, "fault") {
			if other.Name != victim.Name {
				Expect(other.Status.Attempts).To(HaveLen(1), "trial %s", other.Name)
			}
		}
		eventually(waitLong, func() error {
			var replaced []string
			for _, e := range eventsOf(ns, "fault") {
				if strings.HasPrefix(e, "Warning/"+evalv1.ReasonSlotReplaced+": ") {
					replaced = append(replaced, e)
				}
			}
			if len(replaced) != 1 || !strings.Contains(replaced[0], killed) {
				return fmt.Errorf("SlotReplaced events %v, want one naming %s", replaced, killed)
			}
			return nil
		})
	})

	// A new manager cannot vouch for the slots of the one before it: it
	// deletes them, ends the orphaned attempt ManagerRestarted once, and
	// runs the retry on a slot of its own.
	It("replaces every slot after a manager restart", func() {
		ns := newNamespace()
		create(shopTask(ns, "shop", "ok"))
		c := newCampaign(ns, "restart", 2, 2, "shop").Agent("oracle", envtest.Oracle()).Obj()
		c.Spec.Slots = &evalv1.SlotPolicy{Mode: evalv1.SlotsEnabled}
		victim := types.NamespacedName{Namespace: ns, Name: campaign.TrialName("restart", "oracle", "shop", 0)}
		g := s.gates.Hold(victim, 1)
		create(c)
		Eventually(g.Reached, waitLong).Should(BeClosed(), "trial %s never reached its agent", victim.Name)
		tr := &evalv1.Trial{}
		Expect(s.Client.Get(bg, victim, tr)).To(Succeed())
		old := tr.Status.Attempts[0].Slot
		Expect(old).NotTo(BeEmpty())

		Expect(s.restartManager()).To(Succeed())
		close(g.Release)
		c = completed(client.ObjectKeyFromObject(c), evalv1.ReasonFinished)
		Expect(c.Status.Counts).To(Equal(evalv1.TrialCounts{Total: 2, Passed: 2}))
		Expect(s.Client.Get(bg, victim, tr)).To(Succeed())
		Expect(tr.Status.Attempts).To(HaveLen(2), "attempts %+v", tr.Status.Attempts)
		Expect(tr.Status.Attempts[0].Reason).To(Equal(evalv1.ReasonManagerRestarted))
		Expect(tr.Status.Attempts[1].Outcome).To(Equal(evalv1.OutcomePassed))
		Expect(tr.Status.Attempts[1].Slot).NotTo(Equal(old))
		eventually(waitLong, func() error {
			pod := &corev1.Pod{}
			err := s.Client.Get(bg, types.NamespacedName{Namespace: ns, Name: old}, pod)
			if err == nil && pod.DeletionTimestamp == nil {
				return fmt.Errorf("the old manager's slot %s is still there", old)
			}
			return client.IgnoreNotFound(err)
		})
	})
})
