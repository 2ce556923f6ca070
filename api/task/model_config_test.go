package task

import (
	"encoding/json"
	"testing"
)

func TestModelConfigReasoningFieldsDecode(t *testing.T) {
	s, err := DecodeTrialSpec(specWith(t, set("agent", raw(`{"provider":"openai","model":"o-think",
		"max_completion_tokens":2048,"reasoning_effort":"high","extra_body":{"verbosity":"low","metadata":{"a":1}},
		"extra_headers_env":{"OpenAI-Organization":"ORG_ID"},"request_timeout_seconds":90,
		"rate_limit":{"requests_per_minute":300,"tokens_per_minute":100000},
		"pricing":{"input_usd_per_mtok":1,"output_usd_per_mtok":4,"cached_input_usd_per_mtok":0.25}}`))))
	if err != nil {
		t.Fatal(err)
	}
	a := s.Agent
	if a.Temperature != nil || a.MaxTokens != nil || *a.MaxCompletionTokens != 2048 || a.ReasoningEffort != "high" ||
		string(a.ExtraBody) != `{"verbosity":"low","metadata":{"a":1}}` || a.ExtraHeadersEnv["OpenAI-Organization"] != "ORG_ID" ||
		a.RequestTimeoutSeconds != 90 || *a.RateLimit != (RateLimit{RequestsPerMinute: 300, TokensPerMinute: 100000}) ||
		*a.Pricing.CachedInputUSDPerMTok != 0.25 {
		t.Fatalf("agent = %+v", a)
	}
	out, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"provider":"openai","model":"o-think","max_completion_tokens":2048,"reasoning_effort":"high",` +
		`"extra_body":{"verbosity":"low","metadata":{"a":1}},"extra_headers_env":{"OpenAI-Organization":"ORG_ID"},` +
		`"request_timeout_seconds":90,"rate_limit":{"requests_per_minute":300,"tokens_per_minute":100000},` +
		`"pricing":{"input_usd_per_mtok":1,"output_usd_per_mtok":4,"cached_input_usd_per_mtok":0.25}}`
	if string(out) != want {
		t.Fatalf("encoded\n%s\nwant\n%s", out, want)
	}
}

func TestModelConfigReasoningFieldsRejected(t *testing.T) {
	tests := []struct {
		name string
		mut  mutation
		want string
	}{
		{"unknown rate limit key", set("agent.rate_limit", raw(`{"rpm":5}`)), "agent.rate_limit.rpm: unknown key"},
		{"effort", set("agent.reasoning_effort", "extreme"), `agent.reasoning_effort: "extreme" is not one of none, minimal, low, medium, high, xhigh`},
		{"max_completion_tokens", set("agent.max_completion_tokens", 0), "agent.max_completion_tokens: 0 must be >= 1"},
		{"extra_body not object", set("agent.extra_body", raw(`[1]`)), "agent.extra_body: expected a JSON object, got array"},
		{"extra_body collides", set("agent.extra_body", raw(`{"x":1,"max_tokens":5}`)),
			`agent.extra_body.max_tokens: the client sets "max_tokens" itself; use the model config's own field`},
		{"extra_body stream", set("user_simulator_model", raw(`{"provider":"openai","model":"u","extra_body":{"stream":true}}`)),
			`user_simulator_model.extra_body.stream: the client sets "stream" itself; use the model config's own field`},
		{"header name", set("agent.extra_headers_env", raw(`{"X Bad":"E"}`)), `agent.extra_headers_env.X Bad: "X Bad" is not a valid HTTP header name`},
		{"header reserved", set("agent.extra_headers_env", raw(`{"Authorization":"E"}`)),
			`agent.extra_headers_env.Authorization: header "Authorization" is set by the client (authorization and content headers cannot be overridden)`},
		{"header env empty", set("agent.extra_headers_env", raw(`{"X-Org":""}`)), "agent.extra_headers_env.X-Org: required"},
		{"timeout", set("agent.request_timeout_seconds", -1), "agent.request_timeout_seconds: -1 must be >= 0"},
		{"rpm", set("agent.rate_limit", raw(`{"requests_per_minute":-5}`)), "agent.rate_limit.requests_per_minute: -5 must be >= 0"},
		{"cached price", set("agent.pricing", raw(`{"input_usd_per_mtok":1,"output_usd_per_mtok":1,"cached_input_usd_per_mtok":-1}`)),
			"agent.pricing.cached_input_usd_per_mtok: -1 must be >= 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeTrialSpec(specWith(t, tt.mut))
			wantErr(t, err, tt.want)
		})
	}
}
