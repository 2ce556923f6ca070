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

// kubectl get trials: the running attempt's turn is a default column (no
// -o wide), right after Status, read from status.progress.
func TestTrialTurnColumn(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", "eval.tolokaforge.io_trials.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(raw, &crd); err != nil {
		t.Fatal(err)
	}
	cols := crd.Spec.Versions[0].AdditionalPrinterColumns
	var names []string
	for _, c := range cols {
		names = append(names, c.Name)
	}
	i := slices.IndexFunc(cols, func(c apiextensionsv1.CustomResourceColumnDefinition) bool { return c.Name == "Turn" })
	if i < 1 {
		t.Fatalf("columns %v: no Turn column after another", names)
	}
	c := cols[i]
	if c.JSONPath != ".status.progress.turn" || c.Type != "integer" || c.Priority != 0 || cols[i-1].Name != "Status" {
		t.Fatalf("Turn column %+v after %s, want .status.progress.turn, integer, priority 0, after Status", c, cols[i-1].Name)
	}
}
