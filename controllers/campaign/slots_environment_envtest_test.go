package campaign_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers"
	"tolokaforge.io/operator/controllers/campaign"
	"tolokaforge.io/operator/test/envtest"
)

// terminalEnvtestTask is a terminal task whose environment is envtest's
// exec agent (envtest.EnvironmentImage) and whose tests write a reward of
// 1 from the tests' folder (the verifier's folder is its sibling, as in the
// runners' environment paths). The oracle has no solution to play: the
// tests alone grade, through the exec agent, with the attempt's token.
func terminalEnvtestTask(ns, name string) *evalv1.Task {
	GinkgoHelper()
	doc := map[string]any{
		"task_id": name, "name": name, "category": "terminal", "description": "d", "adapter_type": "terminal_bench",
		"system_prompt": "s", "agent_tools": []any{map[string]any{"name": "bash", "description": "b"}}, "user_tools": []any{},
		"tool_artifacts": map[string]any{"tests/test.sh": base64.StdEncoding.EncodeToString([]byte("echo 1 > ../logs/verifier/reward.txt\n"))},
		"environment":    map[string]any{"image": envtest.EnvironmentImage, "agent": map[string]any{}, "verifier": map[string]any{"tests": []any{"tests"}}},
		"grading":        map[string]any{"grading_method": "test_execution", "test_execution": map[string]any{"command": []any{"bash", "test.sh"}}},
	}
	raw, err := json.Marshal(doc)
	Expect(err).NotTo(HaveOccurred())
	return envtest.ShopTask(name, ns).Description(raw).InitialUserMessage("run the tests").Obj()
}

// labelWatch records the labels of every pod created in a namespace.
type labelWatch struct {
	mu   sync.Mutex
	pods map[string]map[string]string
	stop func()
}

func watchPodLabels(ns string) *labelWatch {
	GinkgoHelper()
	ctx, cancel := context.WithCancel(bg)
	wi, err := s.Client.Watch(ctx, &corev1.PodList{}, client.InNamespace(ns))
	Expect(err).NotTo(HaveOccurred())
	w := &labelWatch{pods: map[string]map[string]string{}}
	done := make(chan struct{})
	w.stop = func() { cancel(); wi.Stop(); <-done }
	go func() {
		defer close(done)
		for ev := range wi.ResultChan() {
			if pod, ok := ev.Object.(*corev1.Pod); ok && ev.Type == watch.Added {
				w.mu.Lock()
				w.pods[pod.Name] = pod.Labels
				w.mu.Unlock()
			}
		}
	}()
	return w
}

func (w *labelWatch) all() map[string]map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]map[string]string, len(w.pods))
	for k, v := range w.pods {
		out[k] = v
	}
	return out
}

func selects(sel *metav1.LabelSelector, lbls map[string]string) bool {
	GinkgoHelper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	Expect(err).NotTo(HaveOccurred())
	return s.Matches(labels.Set(lbls))
}

var _ = Describe("Campaign of a terminal task on warm slots", func() {
	It("runs each attempt's runner on a slot and in an environment pod of its own, fenced to that slot", func() {
		ns := newNamespace()
		create(terminalEnvtestTask(ns, "term"))
		pw := watchPodLabels(ns)
		c := newCampaign(ns, "termslots", 4, 2, "term").Agent("oracle", envtest.Oracle()).Obj()
		c.Spec.Slots = &evalv1.SlotPolicy{Mode: evalv1.SlotsEnabled}
		create(c)
		c = completed(client.ObjectKeyFromObject(c), evalv1.ReasonFinished)
		pw.stop()
		Expect(c.Status.Counts).To(Equal(evalv1.TrialCounts{Total: 4, Passed: 4}))

		pods := pw.all()
		slots := map[string]bool{}
		for name, l := range pods {
			if _, ok := l[evalv1.LabelSlotClass]; ok {
				Expect(l[evalv1.LabelSlot]).To(Equal(name), "slot pod %s is labelled with its own name", name)
				slots[name] = true
			}
		}
		Expect(len(slots)).To(BeNumerically("<=", 2), "slot pods ever created (maxParallel 2): %v", slots)

		slotPolicy := &networkingv1.NetworkPolicy{}
		Expect(s.Client.Get(bg, types.NamespacedName{Namespace: ns, Name: controllers.SlotPolicyName("termslots")}, slotPolicy)).To(Succeed())

		envPods := map[string]bool{}
		trials := trialsOf(ns, "termslots")
		Expect(trials).To(HaveLen(4))
		for _, tr := range trials {
			Expect(tr.Status.Phase).To(Equal(evalv1.PhasePassed), "trial %s", tr.Name)
			for _, a := range tr.Status.Attempts {
				what := []any{"trial %s attempt %d", tr.Name, a.Number}
				Expect(a.Slot).To(HavePrefix("termslots-slot-"), what...)
				Expect(slots).To(HaveKey(a.Slot), what...)
				Expect(a.RunnerPod).To(BeEmpty(), what...)
				Expect(a.DBServicePod).To(BeEmpty(), what...)
				Expect(a.EnvironmentPod).To(Equal(controllers.PodName(tr.Name, a.Number, evalv1.RoleEnvironment)), what...)
				envLabels, ok := pods[a.EnvironmentPod]
				Expect(ok).To(BeTrue(), "environment pod %s was never created", a.EnvironmentPod)
				Expect(envPods).NotTo(HaveKey(a.EnvironmentPod), "environment pod %s served two attempts", a.EnvironmentPod)
				envPods[a.EnvironmentPod] = true

				// The attempt's environment policy selects its pod and
				// admits the slot that ran it, by that slot's name label,
				// and no other slot.
				np := &networkingv1.NetworkPolicy{}
				Expect(s.Client.Get(bg, types.NamespacedName{Namespace: ns, Name: controllers.SlotEnvironmentPolicyName(tr.Name, a.Number)}, np)).To(Succeed(), what...)
				Expect(metav1.GetControllerOf(np).UID).To(Equal(tr.UID))
				Expect(selects(&np.Spec.PodSelector, envLabels)).To(BeTrue(), "the policy does not select %s", a.EnvironmentPod)
				Expect(np.Spec.Ingress).To(HaveLen(1))
				Expect(np.Spec.Ingress[0].From).To(HaveLen(1))
				from := np.Spec.Ingress[0].From[0].PodSelector
				Expect(from.MatchLabels).To(HaveKeyWithValue(evalv1.LabelSlot, a.Slot))
				for slot := range slots {
					Expect(selects(from, pods[slot])).To(Equal(slot == a.Slot), "admits slot %s", slot)
				}
				// The slots' own policy lets them out to it.
				out := false
				for _, e := range slotPolicy.Spec.Egress {
					for _, to := range e.To {
						out = out || (to.PodSelector != nil && selects(to.PodSelector, envLabels))
					}
				}
				Expect(out).To(BeTrue(), "the slot policy does not let the slots reach %s", a.EnvironmentPod)
			}
		}
		// Per attempt, one fresh environment pod; nothing else per attempt.
		for name, l := range pods {
			if _, slot := l[evalv1.LabelSlotClass]; !slot {
				Expect(envPods).To(HaveKey(name), "pod %s (role %s) is neither a slot nor an attempt's environment", name, l[evalv1.LabelRole])
			}
		}
	})
})

var _ = Describe("Campaign of a terminal task on warm slots, its environment killed", func() {
	// The environment is the attempt's: killed mid-trial, the attempt ends
	// InfraFailed and the retry gets a fresh environment pod of its own
	// (and its own fence), never the first one's.
	It("retries the attempt with a new environment pod", func() {
		ns := newNamespace()
		create(terminalEnvtestTask(ns, "term"))
		c := newCampaign(ns, "termkill", 1, 1, "term").Agent("oracle", envtest.Oracle()).Obj()
		c.Spec.Slots = &evalv1.SlotPolicy{Mode: evalv1.SlotsEnabled}
		victim := types.NamespacedName{Namespace: ns, Name: campaign.TrialName("termkill", "oracle", "term", 0)}
		g := s.gates.Hold(victim, 1)
		create(c)
		Eventually(g.Reached, waitLong).Should(BeClosed(), "trial %s never reached its agent", victim.Name)
		tr := &evalv1.Trial{}
		Expect(s.Client.Get(bg, victim, tr)).To(Succeed())
		Expect(tr.Status.Attempts).To(HaveLen(1))
		first := tr.Status.Attempts[0].EnvironmentPod
		Expect(first).To(Equal(controllers.PodName(victim.Name, 1, evalv1.RoleEnvironment)))
		Expect(s.Sim.Kill(ns, first)).To(Succeed())
		close(g.Release)

		c = completed(client.ObjectKeyFromObject(c), evalv1.ReasonFinished)
		Expect(c.Status.Counts).To(Equal(evalv1.TrialCounts{Total: 1, Passed: 1}))
		Expect(s.Client.Get(bg, victim, tr)).To(Succeed())
		Expect(tr.Status.Attempts).To(HaveLen(2), "attempts %+v", tr.Status.Attempts)
		a1, a2 := tr.Status.Attempts[0], tr.Status.Attempts[1]
		Expect(a1.Outcome).To(Equal(evalv1.OutcomeInfraFailed))
		// Whoever sees it first names it: the controller (the pod failed)
		// or the runner (its exec agent stopped answering).
		Expect(a1.Reason).To(BeElementOf(evalv1.ReasonPodFailed, evalv1.ReasonPodLost, evalv1.ReasonEnvironmentUnavailable), "attempt 1: %s", a1.Message)
		Expect(a2.Outcome).To(Equal(evalv1.OutcomePassed))
		Expect(a2.Slot).NotTo(BeEmpty())
		Expect(a2.EnvironmentPod).To(Equal(controllers.PodName(victim.Name, 2, evalv1.RoleEnvironment)))
		np := &networkingv1.NetworkPolicy{}
		Expect(s.Client.Get(bg, types.NamespacedName{Namespace: ns, Name: controllers.SlotEnvironmentPolicyName(victim.Name, 2)}, np)).To(Succeed())
		Expect(np.Spec.Ingress[0].From[0].PodSelector.MatchLabels).To(HaveKeyWithValue(evalv1.LabelSlot, a2.Slot))
	})
})
