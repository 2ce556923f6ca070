package campaign_test

import (
	"fmt"
	"testing"

	dto "github.com/prometheus/client_model/go"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers"
)

// progressWrites is the manager's count of Trial status writes made for
// live progress alone (process-wide; callers take differences).
func progressWrites(tb testing.TB) float64 {
	var m dto.Metric
	if err := controllers.DefaultMetrics().ProgressWrites.Write(&m); err != nil {
		tb.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

var _ = Describe("Live progress in the Campaign", func() {
	// Two slow LLM Trials, one at a time: while the first runs, the
	// Campaign counts it running and the other queued, and its cost so far
	// is the running Trial's spend (one $0.25 call of two), before any
	// Trial has ended.
	It("counts running and queued Trials and the cost spent so far while one runs", func() {
		ns := newNamespace()
		create(shopTask(ns, "shop", "slow"))
		c := newCampaign(ns, "live", 2, 1, "shop").Agent("llm", llmModel()).Obj()
		create(c)
		key := client.ObjectKeyFromObject(c)

		eventually(waitLong, func() error {
			st := getCampaign(key).Status
			half := evalv1.Spend{Tokens: tokensPerCall, CostUSD: usdPerTrial / 2}
			if st.Counts != (evalv1.TrialCounts{Total: 2, Queued: 1, Running: 1}) || st.Progress != "0/2" ||
				st.Spent != half || st.Overall.CostUSD != half.CostUSD {
				return fmt.Errorf("counts %+v progress %s spent %+v overall cost %g", st.Counts, st.Progress, st.Spent, st.Overall.CostUSD)
			}
			return nil
		})

		st := completed(key, evalv1.ReasonFinished).Status
		Expect(st.Counts).To(Equal(evalv1.TrialCounts{Total: 2, Passed: 2}))
		Expect(st.Spent.CostUSD).To(BeNumerically("~", 2*usdPerTrial, 1e-9), "spent %+v", st.Spent)
		Expect(st.Spent.Tokens).To(BeEquivalentTo(2*tokensPerTrial), "spent %+v", st.Spent)
	})
})
