package llm_test

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"tolokaforge.io/operator/api/llm"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/test/fakellm"
)

// A reasoning model refuses max_tokens (and a temperature) as OpenAI does:
// the legacy knob is the request's fault, ending as error with the
// provider's words, and max_completion_tokens goes through.
func TestReasoningModelWantsMaxCompletionTokens(t *testing.T) {
	f := startFake(t, fakellm.Config{ReasoningModels: []string{"o-think"}, Script: []fakellm.Reply{
		{Content: "done", Usage: fakellm.Usage{PromptTokens: 1000, CompletionTokens: 300, ReasoningTokens: 250, CachedTokens: 600}},
	}})
	legacy := modelCfg(f, "o-think")
	legacy.MaxTokens = ptr(256)
	m, err := llm.New(legacy, testOpts(&sleeps{}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = next(ctxT(t), m, conv(), nil)
	var le *llm.Error
	if !errors.As(err, &le) || le.Termination != task.TerminationError || le.Err.Error() !=
		`agent model "o-think" rejected the request as invalid: HTTP 400: Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.` {
		t.Fatalf("err = %v", err)
	}

	cfg := modelCfg(f, "o-think")
	cfg.MaxCompletionTokens = ptr(4096)
	cfg.ReasoningEffort = "high"
	cfg.ExtraBody = json.RawMessage(`{"verbosity": "low", "metadata": {"suite": "shop"}}`)
	cfg.RequestTimeoutSeconds = 30
	cached := 0.5
	cfg.Pricing = &task.Pricing{InputUSDPerMTok: 2, OutputUSDPerMTok: 8, CachedInputUSDPerMTok: &cached}
	opts := testOpts(&sleeps{})
	opts.Headers = map[string]string{"OpenAI-Organization": "org-123456789", "X-Trace": "abc"}
	m, err = llm.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := next(ctxT(t), m, conv(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := llm.Usage{Calls: 1, PromptTokens: 1000, CompletionTokens: 300, ReasoningTokens: 250, CachedTokens: 600,
		CostUSD: 400*2/1e6 + 600*0.5/1e6 + 300*8/1e6}
	gotCost := tr.Usage.CostUSD
	tr.Usage.CostUSD, want.CostUSD = 0, 0
	if tr.Content != "done" || tr.Usage != want || math.Abs(gotCost-(400*2/1e6+600*0.5/1e6+300*8/1e6)) > 1e-12 {
		t.Fatalf("turn %+v, want usage %+v", tr, want)
	}
	r := f.Requests()[1]
	if r.Error != "" || r.LegacyMaxTokens != nil || *r.MaxCompletionTokens != 4096 || r.Temperature != nil || r.ReasoningEffort != "high" {
		t.Fatalf("request %+v", r)
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(r.Raw, &body); err != nil {
		t.Fatal(err)
	}
	if string(body["verbosity"]) != `"low"` || string(body["metadata"]) != `{"suite":"shop"}` {
		t.Fatalf("extra body not merged: %s", r.Raw)
	}
	if _, ok := body["temperature"]; ok {
		t.Fatalf("temperature sent though unset: %s", r.Raw)
	}
	if r.Header.Get("OpenAI-Organization") != "org-123456789" || r.Header.Get("X-Trace") != "abc" {
		t.Fatalf("headers %v", r.Header)
	}
}

// Header values are redacted like the key wherever a provider echoes them.
func TestHeaderValuesRedacted(t *testing.T) {
	const secret = "tenant-secret-value"
	f := startFake(t, fakellm.Config{Script: []fakellm.Reply{{Status: 403, ErrorMessage: "tenant " + secret + " is suspended"}}})
	opts := testOpts(&sleeps{})
	opts.Headers = map[string]string{"X-Tenant": secret}
	m, err := llm.New(modelCfg(f, "m"), opts)
	if err != nil {
		t.Fatal(err)
	}
	_, err = next(ctxT(t), m, conv(), nil)
	if err == nil || strings.Contains(err.Error(), secret) || !strings.HasSuffix(err.Error(), "HTTP 403: tenant [REDACTED] is suspended") {
		t.Fatalf("err = %v", err)
	}
}

func TestNewRejectsBadReasoningConfig(t *testing.T) {
	base := func() *task.ModelConfig {
		return &task.ModelConfig{Provider: task.ProviderOpenAI, Model: "o", BaseURL: "http://127.0.0.1:1/v1"}
	}
	cases := []struct {
		name string
		mut  func(*task.ModelConfig, *llm.Options)
		want string
	}{
		{"extra body collides", func(c *task.ModelConfig, _ *llm.Options) { c.ExtraBody = json.RawMessage(`{"model":"other"}`) },
			`agent model "o": extra_body: the client sets "model" itself; use the model config's own field`},
		{"extra body array", func(c *task.ModelConfig, _ *llm.Options) { c.ExtraBody = json.RawMessage(`[]`) },
			`agent model "o": extra_body: not a JSON object`},
		{"effort", func(c *task.ModelConfig, _ *llm.Options) { c.ReasoningEffort = "max" },
			`agent model "o": reasoning_effort "max" is not one of none, minimal, low, medium, high, xhigh`},
		{"header overrides auth", func(_ *task.ModelConfig, o *llm.Options) { o.Headers = map[string]string{"authorization": "x"} },
			`agent model "o": extra header: header "authorization" is set by the client`},
		{"header name", func(_ *task.ModelConfig, o *llm.Options) { o.Headers = map[string]string{"X:Y": "x"} },
			`agent model "o": extra header: "X:Y" is not a valid HTTP header name`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, o := base(), llm.Options{Role: "agent"}
			tc.mut(c, &o)
			if _, err := llm.New(c, o); err == nil || err.Error() != tc.want {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// request_timeout_seconds bounds one try when Options leave it unset.
func TestRequestTimeoutFromConfig(t *testing.T) {
	f := startFake(t, fakellm.Config{Script: []fakellm.Reply{{Content: "slow", Delay: 2 * time.Second}}})
	cfg := modelCfg(f, "m")
	cfg.RequestTimeoutSeconds = 0.2
	retry := llm.RetryPolicy{MaxRetries: 0}
	opts := testOpts(&sleeps{})
	opts.Retry = &retry
	m, err := llm.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	_, err = next(ctxT(t), m, conv(), nil)
	var le *llm.Error
	if !errors.As(err, &le) || le.Termination != task.TerminationAPIError ||
		le.Err.Error() != `agent model "m": no answer within 200ms (gave up after 1 tries)` {
		t.Fatalf("err = %v", err)
	}
}
