package campaign_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/results/report"
	"tolokaforge.io/operator/test/envtest"
)

var _ = Describe("Campaign task selection", func() {
	// A label selector picks Tasks, and a Task labelled later joins the run.
	It("selects Tasks by label, including one labelled later", func() {
		ns := newNamespace()
		other := shopTask(ns, "other", "o")
		other.Labels = map[string]string{"suite": "elsewhere"}
		create(shopTask(ns, "shop-a", "a"), other)
		c := newCampaign(ns, "sel", 1, 4).Agent("oracle", envtest.Oracle()).
			TaskSelector(&metav1.LabelSelector{MatchLabels: map[string]string{"suite": "shop"}}).Obj()
		create(c)
		key := client.ObjectKeyFromObject(c)
		c = completed(key, evalv1.ReasonFinished)
		Expect(c.Status.TaskCount).To(BeEquivalentTo(1), "status %+v", c.Status.Counts)
		Expect(c.Status.Counts.Passed).To(BeEquivalentTo(1), "status %+v", c.Status.Counts)
		create(shopTask(ns, "shop-b", "b"))
		eventually(waitLong, func() error {
			cur := getCampaign(key)
			if cur.Status.TaskCount != 2 || cur.Status.Counts.Passed != 2 {
				return fmt.Errorf("tasks %d, counts %+v", cur.Status.TaskCount, cur.Status.Counts)
			}
			return nil
		})
		for _, tr := range trialsOf(ns, "sel") {
			Expect(tr.Spec.TaskRef.Name).NotTo(Equal("other"), "trial %s runs an unselected task", tr.Name)
		}
	})

	// A listed Task that does not exist holds completion and is named; its
	// Trials start once it is created.
	It("waits for a missing Task and names it", func() {
		ns := newNamespace()
		create(shopTask(ns, "shop-a", "a"))
		c := newCampaign(ns, "wait", 1, 4, "shop-a", "later").Agent("oracle", envtest.Oracle()).Obj()
		create(c)
		key := client.ObjectKeyFromObject(c)
		eventually(waitLong, func() error {
			cur := getCampaign(key)
			r := meta.FindStatusCondition(cur.Status.Conditions, evalv1.CampaignTasksResolved)
			if r == nil || r.Status != metav1.ConditionFalse || r.Reason != evalv1.ReasonTaskNotFound ||
				r.Message != "Task later not found in namespace "+ns+"; its Trials are created once it exists" {
				return fmt.Errorf("TasksResolved %+v", r)
			}
			if cur.Status.Counts.Passed != 1 {
				return fmt.Errorf("counts %+v", cur.Status.Counts)
			}
			if done := meta.FindStatusCondition(cur.Status.Conditions, evalv1.CampaignCompleted); done == nil || done.Status != metav1.ConditionFalse {
				return fmt.Errorf("completed while a task is missing: %+v", done)
			}
			return nil
		})
		create(shopTask(ns, "later", "l"))
		c = completed(key, evalv1.ReasonFinished)
		Expect(c.Status.Counts.Passed).To(BeEquivalentTo(2), "counts %+v", c.Status.Counts)
		Expect(c.Status.Counts.Total).To(BeEquivalentTo(2), "counts %+v", c.Status.Counts)
	})

	// `tolokaforge report CAMPAIGN --kubeconfig ... --html` against the API
	// server writes the page and an aggregate.json that count each Trial once.
	It("reports a Campaign from the cluster with the report command", func() {
		ns := newNamespace()
		create(shopTask(ns, "shop", "ok"))
		c := newCampaign(ns, "rep", 3, 3, "shop").Agent("llm", llmModel()).Obj()
		create(c)
		completed(client.ObjectKeyFromObject(c), evalv1.ReasonFinished)

		user, err := s.Control.AddUser(crenvtest.User{Name: "report-reader", Groups: []string{"system:masters"}}, nil)
		Expect(err).NotTo(HaveOccurred())
		kc, err := user.KubeConfig()
		Expect(err).NotTo(HaveOccurred())
		dir := GinkgoT().TempDir()
		kcPath := filepath.Join(dir, "kubeconfig")
		Expect(os.WriteFile(kcPath, kc, 0o600)).To(Succeed())
		// What `tolokaforge report rep --kubeconfig ...` reads (the command's
		// flags are tested at the root).
		rep, err := report.FromKubeconfig(context.Background(), nil, kcPath, ns, "rep")
		Expect(err).NotTo(HaveOccurred())
		var buf bytes.Buffer
		Expect(rep.WriteAggregate(&buf)).To(Succeed())
		raw := buf.Bytes()
		var agg map[string]any
		Expect(json.Unmarshal(raw, &agg)).To(Succeed())
		for k, want := range map[string]float64{
			"total_trials": 3, "measured_trials": 3, "successful_trials": 3, "total_cost_usd": 3 * usdPerTrial,
			"total_tokens": 3 * tokensPerTrial, "pass_hat@3_macro": 1, "k": 3,
		} {
			Expect(agg[k]).To(Equal(want), "aggregate %s", k)
		}
		_, err = report.FromKubeconfig(context.Background(), nil, kcPath, ns, "nope")
		Expect(err).To(MatchError(`get campaign ` + ns + `/nope: campaigns.eval.tolokaforge.io "nope" not found`))
	})
})
