package host_test

import (
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"tolokaforge.io/operator/api/llm"
	"tolokaforge.io/operator/api/task"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/host"
	"tolokaforge.io/operator/results/local"
	"tolokaforge.io/operator/test/fakellm"
)

// TestAFakeModelTrialsLLMSeries: a whole attempt against the fake model,
// whose first answer is a 429 (retried) and whose turns carry known token
// counts, leaves exactly those figures in the LLM series, scraped over HTTP
// from the process-wide series the manager serves (llm.DefaultMetrics, on
// controller-runtime's registry in the manager). The model's name is this
// test's alone, so other tests' calls do not count.
func TestAFakeModelTrialsLLMSeries(t *testing.T) {
	const modelName = "metered-trial"
	s := startStack(t, local.StackConfig{})
	f := fakeLLM(t, map[string][]fakellm.Reply{modelName: {
		{Status: http.StatusTooManyRequests, ErrorMessage: "slow down", RetryAfter: "0"},
		{ToolCalls: []fakellm.ToolCall{call("c1", "list_products", `{}`)}, Usage: fakellm.Usage{PromptTokens: 100, CompletionTokens: 10}},
		{ToolCalls: []fakellm.ToolCall{call("c2", "get_customer", `{"customer_id":"C-101"}`)}, Usage: fakellm.Usage{PromptTokens: 200, CompletionTokens: 10}},
		{ToolCalls: []fakellm.ToolCall{call("c3", "place_order", placeArgs)}, Usage: fakellm.Usage{PromptTokens: 300, CompletionTokens: 40, CachedTokens: 100}},
		{ToolCalls: []fakellm.ToolCall{call("c4", "confirm_payment", `{"order_id":"O-001"}`)}, Usage: fakellm.Usage{PromptTokens: 400, CompletionTokens: 10}},
		{Content: "Order O-001 is paid. Your remaining balance is 141.01.", Usage: fakellm.Usage{PromptTokens: 500, CompletionTokens: 20, ReasoningTokens: 5}},
	}})
	agent, cfg := llmActor(t, f, modelName, &task.Pricing{InputUSDPerMTok: 1, OutputUSDPerMTok: 4})
	res := host.RunAttempt(ctxT(t), attempt(s, specFor(s, shopTask(t), cfg), agent, nil))
	if res.Reason != evalv1.ReasonPassed {
		t.Fatalf("%s: %s", res, res.Message)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(llm.DefaultMetrics.Collectors()...)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(f.URL())
	value := func(name string, want map[string]string) float64 {
		for _, m := range fams[name].GetMetric() {
			if matches(m, want) {
				if h := m.GetHistogram(); h != nil {
					return float64(h.GetSampleCount())
				}
				return m.GetCounter().GetValue()
			}
		}
		return 0
	}
	series := func(extra ...string) map[string]string {
		l := map[string]string{llm.LabelModel: modelName, llm.LabelServer: u.Host, llm.LabelRole: "agent"}
		for i := 0; i+1 < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		return l
	}
	for _, tc := range []struct {
		name   string
		metric string
		labels map[string]string
		want   float64
	}{
		{"five answered calls", "tolokaforge_llm_requests_total", series(llm.LabelOutcome, llm.OutcomeOK), 5},
		{"one 429", "tolokaforge_llm_requests_total", series(llm.LabelOutcome, llm.Outcome429), 1},
		{"one retry", "tolokaforge_llm_retries_total", series(), 1},
		{"every try timed", "gen_ai_client_operation_duration_seconds", series(llm.LabelOutcome, llm.OutcomeOK), 5},
		{"input tokens", "gen_ai_client_token_usage_total", series(llm.LabelTokenType, llm.TokenInput), 1500},
		{"output tokens", "gen_ai_client_token_usage_total", series(llm.LabelTokenType, llm.TokenOutput), 90},
		{"cached input tokens", "gen_ai_client_token_usage_total", series(llm.LabelTokenType, llm.TokenCachedInput), 100},
		{"reasoning tokens", "gen_ai_client_token_usage_total", series(llm.LabelTokenType, llm.TokenReasoning), 5},
		{"cost as the Trial's", "tolokaforge_llm_cost_usd_total", series(), res.AgentUsage.CostUSD},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := value(tc.metric, tc.labels); math.Abs(got-tc.want) > 1e-12 {
				t.Fatalf("%s%v = %v, want %v", tc.metric, tc.labels, got, tc.want)
			}
		})
	}
	if res.AgentUsage.CostUSD <= 0 {
		t.Fatalf("the attempt's cost is %v", res.AgentUsage.CostUSD)
	}
}

func matches(m *dto.Metric, want map[string]string) bool {
	got := map[string]string{}
	for _, l := range m.GetLabel() {
		got[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return len(got) == len(want)
}
