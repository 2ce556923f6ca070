package llm

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"tolokaforge.io/operator/api/task"
)

// Label names. The GenAI ones are the OpenTelemetry semantic conventions'
// attribute names in Prometheus form; a series never names a Trial, so the
// series count grows with models and providers, not with a campaign.
const (
	LabelModel     = "gen_ai_request_model"
	LabelServer    = "server_address"
	LabelTokenType = "gen_ai_token_type"
	LabelOutcome   = "outcome"
	// LabelRole is the caller: agent, user simulator, judge (bounded by the
	// code, so spend splits by role at no cardinality cost).
	LabelRole = "role"
)

// Outcomes of one HTTP try (LabelOutcome).
const (
	OutcomeOK          = "ok"
	Outcome4xx         = "4xx" // refused as invalid (not 429)
	Outcome429         = "429"
	Outcome5xx         = "5xx" // also 408 and 409, which are retried like 5xx
	OutcomeTimeout     = "timeout"
	OutcomeCanceled    = "canceled" // the caller's context ended (trial deadline, deletion)
	OutcomeTransport   = "transport_error"
	OutcomeBadResponse = "bad_response" // 2xx without choices or undecodable
)

// Token types (LabelTokenType): input and output as the GenAI conventions
// name them; cached_input is the part of input served from the provider's
// cache and reasoning the part of output spent reasoning, so they are not
// added to the first two.
const (
	TokenInput       = "input"
	TokenOutput      = "output"
	TokenCachedInput = "cached_input"
	TokenReasoning   = "reasoning"
)

// Metrics are the Prometheus series of every Client that records into them:
// one set per process (DefaultMetrics) registered by whoever serves
// /metrics (the manager on controller-runtime's registry, the runner on its
// own). This package never registers anything itself.
type Metrics struct {
	// Every series also carries LabelRole.
	Requests      *prometheus.CounterVec   // model, server, outcome: HTTP tries
	Duration      *prometheus.HistogramVec // model, server, outcome: HTTP tries
	Tokens        *prometheus.CounterVec   // model, server, token type
	CostUSD       *prometheus.CounterVec   // model, server
	Retries       *prometheus.CounterVec   // model, server
	RateLimitWait *prometheus.HistogramVec // model, server
}

// durationBuckets span a cached short answer to a long reasoning call.
var durationBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160, 320}

// waitBuckets span no wait (the common case) to a provider's long Retry-After.
var waitBuckets = []float64{0.001, 0.01, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120}

// NewMetrics returns unregistered series (tests use their own set).
func NewMetrics() *Metrics {
	mc := []string{LabelModel, LabelServer, LabelRole}
	return &Metrics{
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tolokaforge_llm_requests_total",
			Help: "Chat-completions HTTP tries by outcome (a retried call counts every try).",
		}, []string{LabelModel, LabelServer, LabelRole, LabelOutcome}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gen_ai_client_operation_duration_seconds",
			Help:    "Duration of one chat-completions HTTP try, by outcome.",
			Buckets: durationBuckets,
		}, []string{LabelModel, LabelServer, LabelRole, LabelOutcome}),
		Tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gen_ai_client_token_usage_total",
			Help: "Tokens billed by type: input, output, and their parts cached_input and reasoning.",
		}, []string{LabelModel, LabelServer, LabelRole, LabelTokenType}),
		CostUSD: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tolokaforge_llm_cost_usd_total",
			Help: "Cost of billed calls in USD, from the model config's pricing (0 without pricing).",
		}, mc),
		Retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tolokaforge_llm_retries_total",
			Help: "Tries refused by the provider (429, 5xx, timeouts) and tried again.",
		}, mc),
		RateLimitWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tolokaforge_llm_ratelimit_wait_seconds",
			Help:    "Time a try waited in the shared per-model rate limiter (rate_limit, a 429's pause) before it was sent.",
			Buckets: waitBuckets,
		}, mc),
	}
}

// Collectors are the series to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.Requests, m.Duration, m.Tokens, m.CostUSD, m.Retries, m.RateLimitWait}
}

// DefaultMetrics is what a Client records into when Options.Metrics is nil.
var DefaultMetrics = NewMetrics()

// ServerAddress is the host[:port] of a base URL: never its path, query or
// user info, which may carry credentials.
func ServerAddress(baseURL string) string {
	u, err := url.Parse(baseURL)
	if err != nil || u.Host == "" {
		return "unknown"
	}
	return u.Host
}

// series are one client's children of Metrics, bound to its model and
// server once so a call costs no label hashing beyond the outcome's.
type series struct {
	m                   *Metrics
	model, server, role string
	retries             prometheus.Counter
	wait                prometheus.Observer
	cost                prometheus.Counter
	tokens              [4]prometheus.Counter // input, output, cached_input, reasoning
}

func newSeries(m *Metrics, model, server, role string) *series {
	return &series{
		m: m, model: model, server: server, role: role,
		retries: m.Retries.WithLabelValues(model, server, role),
		wait:    m.RateLimitWait.WithLabelValues(model, server, role),
		cost:    m.CostUSD.WithLabelValues(model, server, role),
		tokens: [4]prometheus.Counter{
			m.Tokens.WithLabelValues(model, server, role, TokenInput),
			m.Tokens.WithLabelValues(model, server, role, TokenOutput),
			m.Tokens.WithLabelValues(model, server, role, TokenCachedInput),
			m.Tokens.WithLabelValues(model, server, role, TokenReasoning),
		},
	}
}

func (s *series) try(outcome string, took time.Duration) {
	s.m.Requests.WithLabelValues(s.model, s.server, s.role, outcome).Inc()
	s.m.Duration.WithLabelValues(s.model, s.server, s.role, outcome).Observe(took.Seconds())
}

func (s *series) billed(u Usage) {
	s.tokens[0].Add(float64(u.PromptTokens))
	s.tokens[1].Add(float64(u.CompletionTokens))
	s.tokens[2].Add(float64(u.CachedTokens))
	s.tokens[3].Add(float64(u.ReasoningTokens))
	if u.CostUSD > 0 {
		s.cost.Add(u.CostUSD)
	}
}

// tryOutcome names how one HTTP try ended (ok: it carried choices).
func tryOutcome(ctx context.Context, err error, resp *http.Response, ok bool) string {
	if ok {
		return OutcomeOK
	}
	if ctx.Err() != nil {
		return OutcomeCanceled
	}
	status := httpStatus(err, resp)
	switch {
	case status == http.StatusTooManyRequests:
		return Outcome429
	case status >= 500 || status == http.StatusRequestTimeout || status == http.StatusConflict:
		return Outcome5xx
	case status >= 400:
		return Outcome4xx
	case err == nil || (status >= 200 && status < 300):
		return OutcomeBadResponse
	case errors.Is(err, errRequestTimeout) || isTimeout(err):
		return OutcomeTimeout
	default:
		return OutcomeTransport
	}
}

// StatusOutcome is the outcome of a try that got an HTTP answer with status.
func StatusOutcome(status int) string {
	switch {
	case status >= 200 && status < 300:
		return OutcomeOK
	case status == http.StatusTooManyRequests:
		return Outcome429
	case status >= 500 || status == http.StatusRequestTimeout || status == http.StatusConflict:
		return Outcome5xx
	case status >= 400:
		return Outcome4xx
	default:
		return OutcomeBadResponse
	}
}

// Proxied records one try that another process's client made through a
// proxy (the manager's gateway, for the runner's judge): its outcome and
// duration, and for an answer with choices the usage in body, priced with
// pricing (nil: no cost). Retries and limiter waits are the client's to
// count, in its own process.
func (m *Metrics) Proxied(model, server, role, outcome string, took time.Duration, body []byte, pricing *task.Pricing) {
	m.Requests.WithLabelValues(model, server, role, outcome).Inc()
	m.Duration.WithLabelValues(model, server, role, outcome).Observe(took.Seconds())
	if outcome != OutcomeOK || len(body) == 0 {
		return
	}
	var resp chatResponse
	if json.Unmarshal(body, &resp) != nil || len(resp.Choices) == 0 {
		return
	}
	u := Usage{Calls: 1, PromptTokens: resp.Usage.PromptTokens, CompletionTokens: resp.Usage.CompletionTokens,
		ReasoningTokens: resp.Usage.CompletionTokensDetails.ReasoningTokens, CachedTokens: resp.Usage.PromptTokensDetails.CachedTokens}
	u.CostUSD = cost(pricing, u.PromptTokens, u.CachedTokens, u.CompletionTokens)
	newSeries(m, model, server, role).billed(u)
}
