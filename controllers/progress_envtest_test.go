package controllers_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/host"
	"tolokaforge.io/operator/test/envtest"
)

var _ = Describe("Live progress", func() {
	It("shows the running attempt's turn rising, written at most once per progress interval, then the final figures", func() {
		ns := newNamespace()
		Expect(h.Client.Create(ctx, shopTask(ns, "shop", nil))).To(Succeed())
		key := types.NamespacedName{Namespace: ns, Name: "slow"}
		const extra, usdPerTurn = 8, 0.01
		gates.SetPace(key, envtest.Pace{Delay: time.Second, Extra: extra,
			Usage: host.Usage{Calls: 1, PromptTokens: 1000, CompletionTokens: 100, CostUSD: usdPerTurn}})
		Expect(h.Client.Create(ctx, oracleTrial(ns, key.Name, "shop"))).To(Succeed())

		// Every distinct progress the API server showed, while the Trial ran.
		var seen []evalv1.TrialProgress
		var final *evalv1.Trial
		deadline := time.Now().Add(waitLong)
		for final == nil {
			Expect(time.Now().Before(deadline)).To(BeTrue(), "trial did not complete; progress seen: %+v", seen)
			t := getTrial(key)
			if c := findCond(t.Status.Conditions, evalv1.TrialCompleted); c != nil && c.Status == metav1.ConditionTrue {
				final = t
				break
			}
			if pr := t.Status.Progress; pr != nil && (len(seen) == 0 || !pr.UpdateTime.Equal(seen[len(seen)-1].UpdateTime)) {
				Expect(t.Status.Phase).To(Equal(evalv1.PhaseRunning))
				seen = append(seen, *pr)
			}
			time.Sleep(pollEvery)
		}

		// Ten turns of a second each against a 2 s interval: the turn is
		// seen rising several times, never falling, with the spend of the
		// turns taken.
		Expect(len(seen)).To(BeNumerically(">=", 3), "progress seen: %+v", seen)
		GinkgoWriter.Printf("live progress seen: %+v\n", seen)
		for i, pr := range seen {
			Expect(pr.Attempt).To(Equal(int32(1)))
			Expect(pr.Usage.Agent.Calls).To(Equal(int64(pr.Turn)))
			Expect(pr.Usage.Agent.PromptTokens).To(Equal(1000 * int64(pr.Turn)))
			Expect(pr.Usage.TotalCostUSD).To(BeNumerically("~", usdPerTurn*float64(pr.Turn), 1e-9))
			if i == 0 {
				continue
			}
			prev := seen[i-1]
			Expect(pr.Turn).To(BeNumerically(">", prev.Turn), "progress seen: %+v", seen)
			Expect(pr.ToolCalls).To(BeNumerically(">=", prev.ToolCalls))
			// The throttle: no two progress writes closer than the interval.
			Expect(pr.UpdateTime.Sub(prev.UpdateTime.Time)).To(BeNumerically(">=", progressInterval), "progress seen: %+v", seen)
		}

		// Ended: the figures are in turns and usage, progress is gone.
		Expect(final.Status.Phase).To(Equal(evalv1.PhasePassed), describeTrial(final))
		Expect(final.Status.Progress).To(BeNil())
		Expect(final.Status.Turns).To(Equal(int32(extra + 2)))
		Expect(final.Status.Usage).NotTo(BeNil())
		Expect(final.Status.Usage.Agent.Calls).To(Equal(int64(extra + 2)))
		Expect(final.Status.Usage.TotalCostUSD).To(BeNumerically("~", usdPerTurn*(extra+2), 1e-9))
	})
})
