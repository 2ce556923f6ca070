package v1alpha1

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// kubectl get tr | tk | camp: the short names users type, from the generated CRDs.
func TestCRDShortNames(t *testing.T) {
	for file, want := range map[string]string{
		"eval.tolokaforge.io_trials.yaml":    "tr",
		"eval.tolokaforge.io_tasks.yaml":     "tk",
		"eval.tolokaforge.io_campaigns.yaml": "camp",
	} {
		raw, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", file))
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(raw, &crd); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if !slices.Equal(crd.Spec.Names.ShortNames, []string{want}) || !slices.Contains(crd.Spec.Names.Categories, "tolokaforge") {
			t.Errorf("%s: shortNames %v categories %v, want [%s] and tolokaforge", file, crd.Spec.Names.ShortNames, crd.Spec.Names.Categories, want)
		}
	}
}
