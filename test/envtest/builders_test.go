package envtest

import (
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

func TestBuilders(t *testing.T) {
	tr := MakeTrial("t", "ns").Task("shop").Agent(Oracle()).Retry(3, 200*time.Millisecond).Obj()
	if tr.Namespace != "ns" || tr.Name != "t" || tr.Spec.TaskRef == nil || tr.Spec.TaskRef.Name != "shop" ||
		tr.Spec.Agent.Provider != evalv1.ProviderOracle || tr.Spec.RetryPolicy.MaxAttempts != 3 ||
		tr.Spec.RetryPolicy.Backoff.Duration != 200*time.Millisecond {
		t.Fatalf("trial %+v", tr)
	}
	if p := MakeTrial("t", "ns").Retry(1, 0).Obj().Spec.RetryPolicy; p.Backoff != nil {
		t.Fatalf("zero backoff set %v", p.Backoff)
	}
	c := MakeCampaign("c", "ns").Tasks("a", "b").TrialsPerTask(4).MaxParallel(5).
		Agent("oracle", Oracle()).Agent("llm", evalv1.ModelSpec{Provider: evalv1.ProviderOpenAI}).Obj()
	if len(c.Spec.Tasks.Names) != 2 || c.Spec.TrialsPerTask != 4 || c.Spec.MaxParallel != 5 ||
		len(c.Spec.Agents) != 2 || c.Spec.Agents[1].Name != "llm" {
		t.Fatalf("campaign %+v", c.Spec)
	}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"suite": "shop"}}
	if c := MakeCampaign("c", "ns").Tasks("a").TaskSelector(sel).Obj(); c.Spec.Tasks.Names != nil || c.Spec.Tasks.Selector != sel {
		t.Fatalf("selector replaces names: %+v", c.Spec.Tasks)
	}
	tk := ShopTask("shop", "ns").Label("suite", "shop").Obj()
	if tk.Spec.InitialUserMessage != shopMessage || tk.Labels["suite"] != "shop" || !json.Valid(tk.Spec.Description.Raw) {
		t.Fatalf("task %+v", tk)
	}
}

func TestShopDescriptionEdit(t *testing.T) {
	raw, err := ShopDescription(func(m map[string]any) { m["bogus"] = true })
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m["bogus"] != true || m["system_prompt"] == nil {
		t.Fatalf("edited description %s: %v", raw, err)
	}
}

func TestAssetsMissingSaysWhy(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", "")
	if got := AssetsMissing(); got == "" {
		t.Fatal("no reason with KUBEBUILDER_ASSETS unset")
	}
	dir := t.TempDir()
	t.Setenv("KUBEBUILDER_ASSETS", dir)
	if got, want := AssetsMissing(), "KUBEBUILDER_ASSETS="+dir+" has no kube-apiserver"; len(got) < len(want) || got[:len(want)] != want {
		t.Fatalf("AssetsMissing = %q, want prefix %q", got, want)
	}
}
