package agents_test

import (
	"errors"
	"strings"
	"testing"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/controllers/host"
	"tolokaforge.io/operator/controllers/host/agents"
	"tolokaforge.io/operator/test/fakellm"
)

var calcTool = []*runnerpb.ToolSchema{{
	Name: "calculator", Description: "adds things",
	ParametersJson: `{"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]}`,
}}

func conv() []task.Message {
	return []task.Message{
		{Role: task.RoleSystem, Content: "be exact"},
		{Role: task.RoleUser, Content: "what is 2+3?"},
	}
}

// The transport itself (request body, history, retries, unreachable
// providers, waits beyond the deadline) is tested once, in api/llm; these
// cases cover only what the adapter adds: the host.Turn it builds, the
// classed failure becoming a *host.ActorError with its termination reason,
// and where the key and headers come from.
func TestAgentRequestAndTurn(t *testing.T) {
	f := startFake(t, fakellm.Config{Scripts: map[string][]fakellm.Reply{"m": {{
		Content:   "let me compute",
		ToolCalls: []fakellm.ToolCall{{ID: "call_a", Name: "calculator", Arguments: `{"expression":"2+3"}`}},
		Usage:     fakellm.Usage{PromptTokens: 1000, CompletionTokens: 200, ReasoningTokens: 50},
	}}}})
	cfg := modelCfg(f, "m")
	cfg.Temperature, cfg.TopP, cfg.MaxTokens, cfg.Seed = ptr(0.2), ptr(0.9), ptr(512), ptr(int64(7))
	cfg.Pricing = &task.Pricing{InputUSDPerMTok: 2, OutputUSDPerMTok: 10}
	m, err := agents.NewChatModel("agent", cfg, testOpts(&sleeps{}))
	if err != nil {
		t.Fatal(err)
	}
	turn, err := agents.NewLLMAgent(m).Next(ctxT(t), conv(), calcTool)
	if err != nil {
		t.Fatal(err)
	}
	if turn.Content != "let me compute" || len(turn.ToolCalls) != 1 {
		t.Fatalf("turn = %+v", turn)
	}
	tc := turn.ToolCalls[0]
	if tc.ID != "call_a" || tc.Function.Name != "calculator" || tc.Function.Arguments != `{"expression":"2+3"}` {
		t.Fatalf("tool call = %+v", tc)
	}
	want := host.Usage{Calls: 1, PromptTokens: 1000, CompletionTokens: 200, ReasoningTokens: 50, CostUSD: 1000*2/1e6 + 200*10/1e6}
	if turn.Usage != want {
		t.Fatalf("usage = %+v, want %+v", turn.Usage, want)
	}
	reqs := f.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Model != "m" || *r.Temperature != 0.2 || *r.TopP != 0.9 || *r.MaxTokens != 512 || *r.Seed != 7 {
		t.Fatalf("sampling not sent: model %q temp %v top_p %v max %v seed %v", r.Model, r.Temperature, r.TopP, r.MaxTokens, r.Seed)
	}
	if len(r.Messages) != 2 || r.Messages[0].Role != "system" || r.Messages[0].Content != "be exact" || r.Messages[1].Content != "what is 2+3?" {
		t.Fatalf("messages = %+v", r.Messages)
	}
	if len(r.Tools) != 1 || r.Tools[0].Type != "function" || r.Tools[0].Name != "calculator" || r.Tools[0].Description != "adds things" ||
		!strings.Contains(string(r.Tools[0].Parameters), `"expression"`) {
		t.Fatalf("tools = %+v", r.Tools)
	}
	if r.Authorization != "" {
		t.Fatalf("keyless model sent Authorization %q", r.Authorization)
	}
}

func TestProviderFaults(t *testing.T) {
	five := func(r fakellm.Reply) []fakellm.Reply {
		out := make([]fakellm.Reply, 6)
		for i := range out {
			out[i] = r
		}
		return out
	}
	cases := []struct {
		name     string
		replies  []fakellm.Reply
		term     task.TerminationReason
		requests int
		msg      string
	}{
		{"persistent 500 is api_error", five(fakellm.Reply{Status: 500, ErrorMessage: "boom"}), task.TerminationAPIError, 6,
			`agent model "m" refused the request: HTTP 500: boom (gave up after 6 tries)`},
		{"persistent 429 is rate_limit", five(fakellm.Reply{Status: 429, ErrorMessage: "slow down"}), task.TerminationRateLimit, 6,
			`agent model "m" refused the request: HTTP 429: slow down (gave up after 6 tries)`},
		{"503 then 400 ends as error", []fakellm.Reply{{Status: 503}, {Status: 400, ErrorMessage: "messages[1].content is too long"}}, task.TerminationError, 2,
			`agent model "m" rejected the request as invalid: HTTP 400: messages[1].content is too long`},
		{"401 is the request's fault", []fakellm.Reply{{Status: 401, ErrorMessage: "bad key"}}, task.TerminationError, 1,
			`agent model "m" rejected the request as invalid: HTTP 401: bad key`},
		{"Retry-After beyond the bound fails at once", []fakellm.Reply{{Status: 429, RetryAfter: "3600", ErrorMessage: "later"}}, task.TerminationRateLimit, 1,
			`agent model "m" refused the request: HTTP 429: later (provider asked to wait 1h0m0s, more than the 2m0s allowed)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := startFake(t, fakellm.Config{Scripts: map[string][]fakellm.Reply{"m": tc.replies}})
			m, err := agents.NewChatModel("agent", modelCfg(f, "m"), testOpts(&sleeps{}))
			if err != nil {
				t.Fatal(err)
			}
			turn, err := agents.NewLLMAgent(m).Next(ctxT(t), conv(), nil)
			var ae *host.ActorError
			if !errors.As(err, &ae) {
				t.Fatalf("err = %v, want *host.ActorError", err)
			}
			if ae.Termination != tc.term || ae.Err.Error() != tc.msg {
				t.Fatalf("got %s %q, want %s %q", ae.Termination, ae.Err.Error(), tc.term, tc.msg)
			}
			if n := len(f.Requests()); n != tc.requests {
				t.Fatalf("%d requests, want %d", n, tc.requests)
			}
			if turn.Usage.Calls != 0 || turn.Usage.PromptTokens != 0 || turn.Usage.Retries != int64(tc.requests-1) {
				t.Fatalf("usage = %+v: nothing billed, %d retries", turn.Usage, tc.requests-1)
			}
		})
	}
}

func TestNewChatModelRejectsBadConfig(t *testing.T) {
	env := map[string]string{"SET": "sk-something-long"}
	getenv := func(k string) string { return env[k] }
	cases := []struct {
		name string
		cfg  *task.ModelConfig
		want string
	}{
		{"nil", nil, "agent model: no model config"},
		{"oracle", &task.ModelConfig{Provider: task.ProviderOracle}, `agent model: provider "oracle" is not "openai"`},
		{"no model", &task.ModelConfig{Provider: task.ProviderOpenAI}, "agent model: model is empty"},
		{"unset key env", &task.ModelConfig{Provider: task.ProviderOpenAI, Model: "m", APIKeyEnv: "UNSET"},
			`agent model "m": environment variable UNSET (api_key_env) is unset or empty`},
		{"bad scheme", &task.ModelConfig{Provider: task.ProviderOpenAI, Model: "m", APIKeyEnv: "SET", BaseURL: "ftp://x/v1"},
			`agent model "m": base_url: "ftp://x/v1": scheme must be http or https`},
		{"no host", &task.ModelConfig{Provider: task.ProviderOpenAI, Model: "m", BaseURL: "http:///v1"},
			`agent model "m": base_url: "http:///v1": no host`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := agents.NewChatModel("agent", tc.cfg, agents.Options{Getenv: getenv})
			if err == nil || err.Error() != tc.want {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestKeyFromEnvOrMemoryIsSentAndRedacted(t *testing.T) {
	const key = "sk-sentinel-DO-NOT-LEAK"
	for _, viaEnv := range []bool{true, false} {
		f := startFake(t, fakellm.Config{APIKey: key, Script: []fakellm.Reply{
			{Content: "hi"},
			{Status: 400, ErrorMessage: "Incorrect API key provided: " + key},
		}})
		cfg := modelCfg(f, "m")
		opts := testOpts(&sleeps{})
		if viaEnv {
			cfg.APIKeyEnv = "MY_KEY"
			opts.Getenv = func(k string) string {
				if k == "MY_KEY" {
					return key
				}
				return ""
			}
		} else {
			opts.APIKey = key
		}
		m, err := agents.NewChatModel("agent", cfg, opts)
		if err != nil {
			t.Fatal(err)
		}
		a := agents.NewLLMAgent(m)
		if _, err := a.Next(ctxT(t), conv(), nil); err != nil {
			t.Fatalf("viaEnv=%t: %v", viaEnv, err)
		}
		_, err = a.Next(ctxT(t), conv(), nil)
		if err == nil || strings.Contains(err.Error(), key) ||
			err.Error() != `error: agent model "m" rejected the request as invalid: HTTP 400: Incorrect API key provided: [REDACTED]` {
			t.Fatalf("viaEnv=%t: err = %v", viaEnv, err)
		}
		if got := f.Requests()[0].Authorization; got != "Bearer "+key {
			t.Fatalf("viaEnv=%t: Authorization %q", viaEnv, got)
		}
	}
}

// A header value the controller read from a Secret wins over the config's
// env name, which is then not read at all; others come from the env.
func TestExtraHeadersFromOptionsThenEnv(t *testing.T) {
	f := startFake(t, fakellm.Config{Script: []fakellm.Reply{{Content: "ok"}}})
	cfg := modelCfg(f, "m")
	cfg.ExtraHeadersEnv = map[string]string{"X-Given": "UNSET", "X-Env": "TEAM"}
	opts := testOpts(&sleeps{})
	opts.Headers = map[string]string{"X-Given": "from-secret"}
	opts.Getenv = func(k string) string {
		if k == "TEAM" {
			return "evals"
		}
		return ""
	}
	m, err := agents.NewChatModel("agent", cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := agents.NewLLMAgent(m).Next(ctxT(t), conv(), nil); err != nil {
		t.Fatal(err)
	}
	h := f.Requests()[0].Header
	if h.Get("X-Given") != "from-secret" || h.Get("X-Env") != "evals" {
		t.Fatalf("headers %v", h)
	}
}
