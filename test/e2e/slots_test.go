package e2e

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// slotSpecs: a Campaign on warm slots on the real node (docs/warm-slots.md):
// one pod per slot, the DB service on its loopback, the runner in --slot
// mode checking its baseline after every Trial. Every Trial passes on at most
// maxParallel slots, none is replaced (a baseline the node's pod does not
// meet would replace every slot after every Trial), and the slots go once
// idle.
func slotSpecs() {
	It("runs a Campaign's Trials on warm slots: 8 Trials Passed on at most 2 slot pods, none replaced, and the slots deleted once idle", func() {
		ctx := context.Background()
		c := oracleCampaign(ns, "slotted", 8, 2, slotsIdleAfter(5), "shop-orders-02")
		Expect(k8s.Create(ctx, c)).To(Succeed())
		start := time.Now()
		Eventually(func() string {
			var got evalv1.Campaign
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(c), &got); err != nil {
				return err.Error()
			}
			return fmt.Sprintf("passed=%d failed=%d infra=%d invalid=%d", got.Status.Counts.Passed,
				got.Status.Counts.Failed, got.Status.Counts.InfraFailed, got.Status.Counts.Invalid)
		}).WithTimeout(5*time.Minute).WithPolling(time.Second).Should(Equal("passed=8 failed=0 infra=0 invalid=0"),
			func() string { return campaignReport(ctx, c.Name) })
		GinkgoWriter.Printf("8-Trial Campaign on slots completed in %s\n", time.Since(start).Round(time.Second))

		var trials evalv1.TrialList
		Expect(k8s.List(ctx, &trials, client.InNamespace(ns), client.MatchingLabels{evalv1.LabelCampaign: "slotted"})).To(Succeed())
		Expect(trials.Items).To(HaveLen(8))
		slots := map[string]int{}
		for _, t := range trials.Items {
			Expect(t.Status.Attempts).To(HaveLen(1), "%s: %s", t.Name, describe(&t))
			a := t.Status.Attempts[0]
			Expect(a.Slot).NotTo(BeEmpty(), "%s ran on no slot: %+v", t.Name, a)
			Expect(a.RunnerPod).To(BeEmpty(), "%s has a runner pod of its own: %+v", t.Name, a)
			slots[a.Slot]++
		}
		GinkgoWriter.Printf("Trials per slot: %v\n", slots)
		Expect(len(slots)).To(BeNumerically("<=", 2), "slots used: %v", slots)
		Expect(slotReplacements(ctx)).To(BeEmpty(), "a slot was replaced")

		// Idle slots go (idleSeconds 5), their Secrets with them.
		Eventually(func() []string {
			var pods corev1.PodList
			_ = k8s.List(ctx, &pods, client.InNamespace(ns), client.HasLabels{evalv1.LabelSlotClass})
			var names []string
			for _, p := range pods.Items {
				names = append(names, p.Name)
			}
			return names
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(BeEmpty())
		mustKubectl("", "-n", ns, "delete", "campaign", "slotted", "--wait=true", "--timeout=2m")
	})
}

// slotReplacements are the SlotReplaced warnings of the namespace, as
// "object: message".
func slotReplacements(ctx context.Context) []string {
	var evs corev1.EventList
	Expect(k8s.List(ctx, &evs, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, e := range evs.Items {
		if e.Reason == evalv1.ReasonSlotReplaced {
			out = append(out, e.InvolvedObject.Name+": "+e.Message)
		}
	}
	return out
}

// campaignReport says what the slots and the Campaign's Trials are doing,
// for a failure message.
func campaignReport(ctx context.Context, campaign string) string {
	var sb strings.Builder
	var pods corev1.PodList
	_ = k8s.List(ctx, &pods, client.InNamespace(ns), client.HasLabels{evalv1.LabelSlotClass})
	for _, p := range pods.Items {
		fmt.Fprintf(&sb, "slot pod %s: %s\n", p.Name, p.Status.Phase)
	}
	for _, r := range slotReplacements(ctx) {
		fmt.Fprintf(&sb, "replaced: %s\n", r)
	}
	var trials evalv1.TrialList
	_ = k8s.List(ctx, &trials, client.InNamespace(ns), client.MatchingLabels{evalv1.LabelCampaign: campaign})
	for _, t := range trials.Items {
		fmt.Fprintf(&sb, "%s: %s", t.Name, describe(&t))
	}
	return sb.String()
}
