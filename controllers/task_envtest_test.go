package controllers_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// validCond waits for the Task's Valid condition to have status s.
func validCond(key types.NamespacedName, s metav1.ConditionStatus) (*evalv1.Task, *metav1.Condition) {
	var t *evalv1.Task
	var c *metav1.Condition
	Eventually(func(g Gomega) {
		t = &evalv1.Task{}
		g.Expect(h.Client.Get(ctx, key, t)).To(Succeed())
		c = findCond(t.Status.Conditions, evalv1.TaskValid)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(s), "%s: %s", c.Reason, c.Message)
	}, waitLong, pollEvery).Should(Succeed())
	return t, c
}

var _ = Describe("Task", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("reports what a valid description holds", func() {
		Expect(h.Client.Create(ctx, shopTask(ns, "shop", nil))).To(Succeed())
		t, c := validCond(types.NamespacedName{Namespace: ns, Name: "shop"}, metav1.ConditionTrue)
		Expect(c.Reason).To(Equal(evalv1.ReasonTaskValid))
		Expect(t.Status.TaskID).To(Equal("shop_orders_02"))
		Expect(t.Status.Category).To(Equal("tool_use"))
		Expect(t.Status.AgentTools).To(Equal(int32(4)))
		Expect(t.Status.UserTools).To(Equal(int32(0)))
		Expect(t.Status.GoldenActions).To(Equal(int32(2)))
		Expect(t.Status.ObservedGeneration).To(Equal(t.Generation))
	})

	It("names the path of an unknown key", func() {
		Expect(h.Client.Create(ctx, shopTask(ns, "bad", func(m map[string]any) {
			m["grading"].(map[string]any)["state_checks"].(map[string]any)["hash_enabeld"] = true
		}))).To(Succeed())
		t, c := validCond(types.NamespacedName{Namespace: ns, Name: "bad"}, metav1.ConditionFalse)
		Expect(c.Reason).To(Equal(evalv1.ReasonInvalidDescription))
		Expect(c.Message).To(Equal("spec.description.grading.state_checks.hash_enabeld: unknown key"))
		Expect(t.Status.TaskID).To(BeEmpty())
	})

	It("refuses a grading block that could only fail after the agent's budget is spent", func() {
		// The shop task folds its hash and JSONPath checks by hash_weight; without it
		// every trial would fail grading, so admission says so first.
		Expect(h.Client.Create(ctx, shopTask(ns, "no-share", func(m map[string]any) {
			delete(m["grading"].(map[string]any)["state_checks"].(map[string]any), "hash_weight")
		}))).To(Succeed())
		_, c := validCond(types.NamespacedName{Namespace: ns, Name: "no-share"}, metav1.ConditionFalse)
		Expect(c.Reason).To(Equal(evalv1.ReasonInvalidDescription))
		Expect(c.Message).To(Equal("spec.description.grading.state_checks.hash_weight: required when hash_enabled is true and jsonpaths is not empty: " +
			"the hash verdict and the JSONPath score are both real and nothing says how to fold them, so every trial would fail grading after " +
			"the agent's budget is spent; declare state_checks.hash_weight in [0, 1] (the hash verdict's share)"))
	})

	It("loads gzip-compressed tables from a ConfigMap, heals when the ConfigMap appears, and runs on them", func() {
		var tables json.RawMessage
		task := shopTask(ns, "big", func(m map[string]any) {
			st := m["initial_state"].(map[string]any)
			var err error
			tables, err = json.Marshal(st["tables"])
			Expect(err).NotTo(HaveOccurred())
			delete(st, "tables")
		})
		task.Spec.InitialStateFrom = &evalv1.InitialStateSource{ConfigMapKeyRef: evalv1.ConfigMapKeyRef{
			Name: "shop-state", Key: "tables.json.gz", Gzip: true,
		}}
		Expect(h.Client.Create(ctx, task)).To(Succeed())
		key := types.NamespacedName{Namespace: ns, Name: "big"}
		_, c := validCond(key, metav1.ConditionFalse)
		Expect(c.Reason).To(Equal(evalv1.ReasonInitialStateUnavailable))
		Expect(c.Message).To(ContainSubstring("configMap not found"))

		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		_, err := zw.Write(tables)
		Expect(err).NotTo(HaveOccurred())
		Expect(zw.Close()).To(Succeed())
		Expect(h.Client.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop-state"},
			BinaryData: map[string][]byte{"tables.json.gz": gz.Bytes()},
		})).To(Succeed())
		t, _ := validCond(key, metav1.ConditionTrue)
		Expect(t.Status.TaskID).To(Equal("shop_orders_02"))

		// The tables reach the runner: every JSONPath check over them passes.
		trialKey := types.NamespacedName{Namespace: ns, Name: "on-big"}
		Expect(h.Client.Create(ctx, oracleTrial(ns, trialKey.Name, "big"))).To(Succeed())
		tr := completed(trialKey)
		Expect(findCond(tr.Status.Conditions, evalv1.TrialCompleted).Reason).To(Equal("Passed"), describeTrial(tr))
		Expect(tr.Status.Grade.Reasons).To(ContainSubstring("JSONPath: all 7 checks passed"))
	})

	It("emits events with the reasons of the conditions", func() {
		Expect(h.Client.Create(ctx, shopTask(ns, "shop", nil))).To(Succeed())
		key := types.NamespacedName{Namespace: ns, Name: "evented"}
		Expect(h.Client.Create(ctx, oracleTrial(ns, key.Name, "shop"))).To(Succeed())
		completed(key)
		Eventually(func() []string {
			var evs eventsv1.EventList
			Expect(h.Client.List(ctx, &evs, client.InNamespace(ns))).To(Succeed())
			var reasons []string
			for _, e := range evs.Items {
				if e.Regarding.Name == key.Name && e.Regarding.Kind == "Trial" {
					reasons = append(reasons, e.Type+"/"+e.Reason)
				}
			}
			return reasons
		}, waitLong, pollEvery).Should(ConsistOf("Normal/Starting", "Normal/Passed"))
	})
})

var _ = Describe("Trial validation (CEL, by the API server)", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("refuses a Trial naming both a taskRef and an inline task", func() {
		tr := oracleTrial(ns, "both", "shop")
		tr.Spec.Task = &apiextensionsv1.JSON{Raw: []byte(`{"task_id":"x"}`)}
		err := h.Client.Create(ctx, tr)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("exactly one of taskRef and task must be set"))
	})

	It("refuses a Trial naming no task", func() {
		tr := oracleTrial(ns, "none", "shop")
		tr.Spec.TaskRef = nil
		err := h.Client.Create(ctx, tr)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("exactly one of taskRef and task must be set"))
	})

	It("refuses any change to a Trial's spec; a Trial whose Task is missing fails fast and stays failed", func() {
		tr := oracleTrial(ns, "frozen", "later")
		Expect(h.Client.Create(ctx, tr)).To(Succeed())
		orig := tr.DeepCopy()
		tr.Spec.TrialIndex = 7
		// A merge patch carries no resourceVersion, so the refusal can only
		// be the validation rule, never a conflict with a status write.
		err := h.Client.Patch(ctx, tr, client.MergeFrom(orig))
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("spec is immutable"))

		key := client.ObjectKeyFromObject(tr)
		t := completed(key)
		Expect(t.Status.Phase).To(Equal(evalv1.PhaseInvalid), describeTrial(t))
		Expect(t.Status.AttemptCount).To(BeZero())
		rr := findCond(t.Status.Conditions, evalv1.TrialReferencesResolved)
		Expect(rr).NotTo(BeNil())
		Expect(rr.Reason).To(Equal(evalv1.ReasonTaskNotFound))
		Expect(rr.Message).To(Equal("Task " + ns + "/later not found (spec.taskRef)"))

		// Terminal, as a Job with an invalid spec: the Task appearing later
		// does not revive it.
		Expect(h.Client.Create(ctx, shopTask(ns, "later", nil))).To(Succeed())
		Consistently(func() evalv1.TrialPhase { return getTrial(key).Status.Phase }, 2*time.Second, pollEvery).Should(Equal(evalv1.PhaseInvalid))
		Expect(podsOf(key)).To(BeEmpty())
	})
})
