package gateway_test

import (
	"context"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tolokaforge.io/operator/api/llm"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/test/fakellm"
)

// TestGatewayMetersTheJudge: each forwarded call lands in the LLM series
// under role judge, with its tokens and its price from the Trial's judge
// pricing; a 429 is counted by outcome, without tokens.
func TestGatewayMetersTheJudge(t *testing.T) {
	f := newFixture(t)
	ms := llm.NewMetrics()
	f.gw.Metrics = ms
	tr := &evalv1.Trial{}
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(f.trial), tr); err != nil {
		t.Fatal(err)
	}
	cached := 1.0
	tr.Spec.Judge.Pricing = &evalv1.Pricing{InputUSDPerMTok: 3, OutputUSDPerMTok: 15, CachedInputUSDPerMTok: &cached}
	if err := f.c.Update(context.Background(), tr); err != nil {
		t.Fatal(err)
	}
	if err := f.llm.Enqueue("judge-1",
		fakellm.Reply{Status: http.StatusTooManyRequests, ErrorMessage: "slow down"},
		fakellm.Reply{Content: "PASS", Usage: fakellm.Usage{PromptTokens: 2000, CompletionTokens: 100, CachedTokens: 500, ReasoningTokens: 30}},
	); err != nil {
		t.Fatal(err)
	}
	if status, body := f.call(t, "Bearer "+f.token, "judge-1"); status != http.StatusTooManyRequests {
		t.Fatalf("first call: status %d: %s", status, body)
	}
	if status, body := f.call(t, "Bearer "+f.token, "judge-1"); status != http.StatusOK {
		t.Fatalf("second call: status %d: %s", status, body)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(ms.Collectors()...)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
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
	server := llm.ServerAddress(f.llm.URL())
	value := func(name string, extra ...string) float64 {
		want := map[string]string{llm.LabelModel: "judge-1", llm.LabelServer: server, llm.LabelRole: "judge"}
		for i := 0; i+1 < len(extra); i += 2 {
			want[extra[i]] = extra[i+1]
		}
	next:
		for _, m := range fams[name].GetMetric() {
			if len(m.GetLabel()) != len(want) {
				continue
			}
			for _, l := range m.GetLabel() {
				if want[l.GetName()] != l.GetValue() {
					continue next
				}
			}
			if h := m.GetHistogram(); h != nil {
				return float64(h.GetSampleCount())
			}
			return m.GetCounter().GetValue()
		}
		return math.NaN()
	}
	cost := (2000-500)*3/1e6 + 500*1/1e6 + 100*15/1e6
	for _, tc := range []struct {
		name string
		got  float64
		want float64
	}{
		{"ok requests", value("tolokaforge_llm_requests_total", llm.LabelOutcome, llm.OutcomeOK), 1},
		{"429 requests", value("tolokaforge_llm_requests_total", llm.LabelOutcome, llm.Outcome429), 1},
		{"ok durations", value("gen_ai_client_operation_duration_seconds", llm.LabelOutcome, llm.OutcomeOK), 1},
		{"input tokens", value("gen_ai_client_token_usage_total", llm.LabelTokenType, llm.TokenInput), 2000},
		{"output tokens", value("gen_ai_client_token_usage_total", llm.LabelTokenType, llm.TokenOutput), 100},
		{"cached input tokens", value("gen_ai_client_token_usage_total", llm.LabelTokenType, llm.TokenCachedInput), 500},
		{"reasoning tokens", value("gen_ai_client_token_usage_total", llm.LabelTokenType, llm.TokenReasoning), 30},
		{"cost", value("tolokaforge_llm_cost_usd_total"), cost},
	} {
		if math.Abs(tc.got-tc.want) > 1e-12 {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

// TestGatewayMetersAnUnreachableProvider: a provider that does not answer
// is a transport_error try for the judge's model, with no tokens.
func TestGatewayMetersAnUnreachableProvider(t *testing.T) {
	f := newFixture(t)
	ms := llm.NewMetrics()
	f.gw.Metrics = ms
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/v1"
	_ = ln.Close()
	tr := &evalv1.Trial{}
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(f.trial), tr); err != nil {
		t.Fatal(err)
	}
	tr.Spec.Judge.BaseURL = dead
	if err := f.c.Update(context.Background(), tr); err != nil {
		t.Fatal(err)
	}
	if status, body := f.call(t, "Bearer "+f.token, "judge-1"); status != http.StatusBadGateway {
		t.Fatalf("status %d: %s", status, body)
	}
	for _, tc := range []struct {
		outcome string
		want    float64
	}{{llm.OutcomeTransport, 1}, {llm.OutcomeOK, 0}} {
		var m dto.Metric
		if err := ms.Requests.WithLabelValues("judge-1", llm.ServerAddress(dead), "judge", tc.outcome).Write(&m); err != nil {
			t.Fatal(err)
		}
		if got := m.GetCounter().GetValue(); got != tc.want {
			t.Errorf("requests{outcome=%s} = %v, want %v", tc.outcome, got, tc.want)
		}
	}
	ch := make(chan prometheus.Metric, 16)
	ms.Tokens.Collect(ch)
	close(ch)
	if n := len(ch); n != 0 {
		t.Errorf("%d token series after a call that got no answer", n)
	}
}
