package controllers_test

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

var _ = Describe("config/samples", func() {
	It("applied as they are, give one Passed and one Failed oracle trial", func() {
		ns := newNamespace()
		for _, f := range []string{
			"configmap_shop_orders_02_state.yaml", "eval_v1alpha1_task_shop.yaml", "eval_v1alpha1_task_shop_wrong_golden.yaml",
			"eval_v1alpha1_trial_oracle.yaml", "eval_v1alpha1_trial_oracle_wrong_golden.yaml",
		} {
			b, err := os.ReadFile(filepath.Join("..", "config", "samples", f))
			Expect(err).NotTo(HaveOccurred())
			u := &unstructured.Unstructured{}
			Expect(yaml.Unmarshal(b, &u.Object)).To(Succeed(), f)
			u.SetNamespace(ns)
			Expect(h.Client.Create(ctx, u)).To(Succeed(), f)
		}
		ok := completed(types.NamespacedName{Namespace: ns, Name: "shop-oracle"})
		Expect(ok.Status.Phase).To(Equal(evalv1.PhasePassed), describeTrial(ok))
		Expect(ok.Status.Grade.Reasons).To(HavePrefix("State: hash match | JSONPath: all 7 checks passed"))

		bad := completed(types.NamespacedName{Namespace: ns, Name: "shop-oracle-wrong-golden"})
		Expect(bad.Status.Phase).To(Equal(evalv1.PhaseFailed), describeTrial(bad))
		Expect(bad.Status.Grade.DiffSummary).NotTo(BeEmpty())
		Expect(bad.Status.Grade.Reasons).To(ContainSubstring(bad.Status.Grade.DiffSummary))
	})
})
