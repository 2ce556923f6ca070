package llm_test

import (
	"errors"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"tolokaforge.io/operator/api/llm"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/test/fakellm"
)

// scrape serves ms on a loopback listener as the manager does and parses
// what a Prometheus server would read.
func scrape(t *testing.T, ms *llm.Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(ms.Collectors()...)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse the scrape: %v", err)
	}
	return fams
}

// sample finds the series of family name whose labels include want.
func sample(fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	f := fams[name]
	if f == nil {
		return nil
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		return m
	}
	return nil
}

// value is a counter's value, a histogram's count, or NaN when absent.
func value(fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	m := sample(fams, name, labels)
	switch {
	case m == nil:
		return math.NaN()
	case m.GetHistogram() != nil:
		return float64(m.GetHistogram().GetSampleCount())
	default:
		return m.GetCounter().GetValue()
	}
}

func TestMetricsOfACallWithA429ThenSuccess(t *testing.T) {
	f := startFake(t, fakellm.Config{Scripts: map[string][]fakellm.Reply{"metered": {
		{Status: http.StatusTooManyRequests, ErrorMessage: "slow down", RetryAfter: "0"},
		{Content: "5", Usage: fakellm.Usage{PromptTokens: 1000, CompletionTokens: 200, CachedTokens: 400, ReasoningTokens: 50}},
	}}})
	cfg := modelCfg(f, "metered")
	cfg.Pricing = &task.Pricing{InputUSDPerMTok: 2, OutputUSDPerMTok: 10, CachedInputUSDPerMTok: ptr(0.5)}
	ms := llm.NewMetrics()
	opts := testOpts(&sleeps{})
	opts.Metrics, opts.Limits = ms, llm.NewLimits()
	m, err := llm.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := next(ctxT(t), m, conv(), nil); err != nil {
		t.Fatal(err)
	}
	fams := scrape(t, ms)
	server := llm.ServerAddress(f.URL())
	if u, _ := url.Parse(f.URL()); server != u.Host || strings.Contains(server, "/") {
		t.Fatalf("server_address %q, want the fake's host:port %q", server, u.Host)
	}
	series := func(extra ...string) map[string]string {
		l := map[string]string{llm.LabelModel: "metered", llm.LabelServer: server, llm.LabelRole: "agent"}
		for i := 0; i+1 < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		return l
	}
	cost := (1000-400)*2/1e6 + 400*0.5/1e6 + 200*10/1e6
	for _, tc := range []struct {
		name   string
		metric string
		labels map[string]string
		want   float64
	}{
		{"one ok try", "tolokaforge_llm_requests_total", series(llm.LabelOutcome, llm.OutcomeOK), 1},
		{"one 429 try", "tolokaforge_llm_requests_total", series(llm.LabelOutcome, llm.Outcome429), 1},
		{"ok try timed", "gen_ai_client_operation_duration_seconds", series(llm.LabelOutcome, llm.OutcomeOK), 1},
		{"429 try timed", "gen_ai_client_operation_duration_seconds", series(llm.LabelOutcome, llm.Outcome429), 1},
		{"one retry", "tolokaforge_llm_retries_total", series(), 1},
		{"input tokens", "gen_ai_client_token_usage_total", series(llm.LabelTokenType, llm.TokenInput), 1000},
		{"output tokens", "gen_ai_client_token_usage_total", series(llm.LabelTokenType, llm.TokenOutput), 200},
		{"cached input tokens", "gen_ai_client_token_usage_total", series(llm.LabelTokenType, llm.TokenCachedInput), 400},
		{"reasoning tokens", "gen_ai_client_token_usage_total", series(llm.LabelTokenType, llm.TokenReasoning), 50},
		{"cost", "tolokaforge_llm_cost_usd_total", series(), cost},
		{"both tries waited in the limiter", "tolokaforge_llm_ratelimit_wait_seconds", series(), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := value(fams, tc.metric, tc.labels); math.Abs(got-tc.want) > 1e-12 {
				t.Fatalf("%s%v = %v, want %v", tc.metric, tc.labels, got, tc.want)
			}
		})
	}
	if n := len(fams["tolokaforge_llm_requests_total"].GetMetric()); n != 2 {
		t.Fatalf("%d request series, want 2 (ok, 429)", n)
	}
}

// TestMetricsOutcomes: each way a try ends lands in its own outcome.
func TestMetricsOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		replies []fakellm.Reply
		want    map[string]float64
	}{
		{"400 is 4xx, not retried", []fakellm.Reply{{Status: 400, ErrorMessage: "bad"}}, map[string]float64{llm.Outcome4xx: 1}},
		{"503 then ok", []fakellm.Reply{{Status: 503}, {Content: "x"}}, map[string]float64{llm.Outcome5xx: 1, llm.OutcomeOK: 1}},
		{"a try past the request timeout is timeout", []fakellm.Reply{{Content: "late", Delay: 5 * time.Second}, {Content: "x"}},
			map[string]float64{llm.OutcomeTimeout: 1, llm.OutcomeOK: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := startFake(t, fakellm.Config{Scripts: map[string][]fakellm.Reply{"o": tc.replies}})
			ms := llm.NewMetrics()
			opts := testOpts(&sleeps{})
			opts.Metrics, opts.RequestTimeout = ms, 200*time.Millisecond
			m, err := llm.New(modelCfg(f, "o"), opts)
			if err != nil {
				t.Fatal(err)
			}
			_, err = next(ctxT(t), m, conv(), nil)
			var le *llm.Error
			if tc.want[llm.Outcome4xx] > 0 && !errors.As(err, &le) {
				t.Fatalf("err = %v, want *llm.Error", err)
			}
			fams := scrape(t, ms)
			for outcome, n := range tc.want {
				l := map[string]string{llm.LabelModel: "o", llm.LabelOutcome: outcome}
				if got := value(fams, "tolokaforge_llm_requests_total", l); got != n {
					t.Fatalf("requests{outcome=%s} = %v, want %v", outcome, got, n)
				}
			}
		})
	}
}

// TestServerAddressKeepsNoSecrets: a base URL's user info, path and query
// (where proxies put keys) never reach a label.
func TestServerAddressKeepsNoSecrets(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://api.openai.com/v1", "api.openai.com"},
		{"https://user:sk-secret@proxy.example:8443/key/sk-abc/v1?key=sk-def", "proxy.example:8443"},
		{"http://127.0.0.1:8000", "127.0.0.1:8000"},
		{"::not a url", "unknown"},
	} {
		if got := llm.ServerAddress(tc.in); got != tc.want {
			t.Errorf("ServerAddress(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestMetricsOutcomesWithoutAnAnswer: a provider nobody serves is
// transport_error on every try; a caller that gives up mid-try is canceled,
// not a provider timeout.
func TestMetricsOutcomesWithoutAnAnswer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/v1"
	_ = ln.Close()
	slow := startFake(t, fakellm.Config{Scripts: map[string][]fakellm.Reply{"slow": {{Content: "late", Delay: 10 * time.Second}}}})
	for _, tc := range []struct {
		name    string
		baseURL string
		model   string
		ctxFor  time.Duration
		outcome string
		tries   float64
	}{
		{"nobody serves the provider", dead, "dead", 30 * time.Second, llm.OutcomeTransport, 3},
		{"the caller gives up", slow.URL(), "slow", 200 * time.Millisecond, llm.OutcomeCanceled, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms := llm.NewMetrics()
			opts := testOpts(&sleeps{})
			opts.Metrics, opts.Retry = ms, &llm.RetryPolicy{MaxRetries: 2, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}
			m, err := llm.New(&task.ModelConfig{Provider: task.ProviderOpenAI, Model: tc.model, BaseURL: tc.baseURL}, opts)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := contextWithTimeout(t, tc.ctxFor)
			defer cancel()
			if _, err := next(ctx, m, conv(), nil); err == nil {
				t.Fatal("the call succeeded")
			}
			fams := scrape(t, ms)
			l := map[string]string{llm.LabelModel: tc.model, llm.LabelOutcome: tc.outcome}
			if got := value(fams, "tolokaforge_llm_requests_total", l); got != tc.tries {
				t.Fatalf("requests{outcome=%s} = %v, want %v", tc.outcome, got, tc.tries)
			}
			if n := len(fams["tolokaforge_llm_requests_total"].GetMetric()); n != 1 {
				t.Fatalf("%d outcome series, want only %s", n, tc.outcome)
			}
		})
	}
}
