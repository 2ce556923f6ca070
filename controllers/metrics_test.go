package controllers_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"tolokaforge.io/operator/api/llm"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/controllers"
	"tolokaforge.io/operator/test/fakellm"
)

// TestManagerRegistryServesLLMSeries: the registry the manager's
// --metrics-bind-address serves carries the model calls' series, so an
// actor's call is scraped there with its tokens.
func TestManagerRegistryServesLLMSeries(t *testing.T) {
	controllers.DefaultMetrics()
	f, err := fakellm.New(fakellm.Config{Scripts: map[string][]fakellm.Reply{"registry-probe": {
		{Content: "hi", Usage: fakellm.Usage{PromptTokens: 321, CompletionTokens: 12}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	// The actors' clients record into llm.DefaultMetrics (Options.Metrics nil).
	c, err := llm.New(&task.ModelConfig{Provider: task.ProviderOpenAI, Model: "registry-probe", BaseURL: f.URL()}, llm.Options{Role: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, _, _, err := c.Complete(ctx, []task.Message{{Role: task.RoleUser, Content: "hello"}}, nil); err != nil {
		t.Fatal(err)
	}

	srv := httptest.NewServer(promhttp.HandlerFor(crmetrics.Registry, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, m := range fams["gen_ai_client_token_usage_total"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels[llm.LabelModel] == "registry-probe" && labels[llm.LabelRole] == "agent" {
			got[labels[llm.LabelTokenType]] = m.GetCounter().GetValue()
		}
	}
	if got[llm.TokenInput] != 321 || got[llm.TokenOutput] != 12 {
		t.Fatalf("the manager's registry has tokens %v for the probe model, want input 321, output 12", got)
	}
	if fams["tolokaforge_attempts_total"] == nil && fams["tolokaforge_driver_pool_capacity"] == nil {
		t.Fatal("the manager's own series are not on the same registry")
	}
}
