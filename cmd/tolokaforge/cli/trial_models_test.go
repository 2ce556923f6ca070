package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tolokaforge.io/operator/test/fakellm"
)

// The shop task through `trial run` with both models configured as
// reasoning models with every model-config field: the fake refuses
// max_tokens and temperatures as OpenAI's reasoning models do, so the run
// passing proves neither is sent, and each recorded body matches the file.
func TestRunShopWithReasoningModelConfig(t *testing.T) {
	usage := fakellm.Usage{PromptTokens: 1000, CompletionTokens: 200, ReasoningTokens: 150, CachedTokens: 600}
	f, err := fakellm.New(fakellm.Config{
		ReasoningModels: []string{"o-agent", "o-user"},
		Scripts: map[string][]fakellm.Reply{
			"o-agent": {
				{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "list_products", Arguments: `{}`}, {ID: "c2", Name: "get_customer", Arguments: `{"customer_id":"C-101"}`}}, Usage: usage},
				{ToolCalls: []fakellm.ToolCall{{ID: "c3", Name: "place_order", Arguments: `{"customer_id":"C-101","items":[{"product_id":"P-001","quantity":1,"unit_price":89.99},{"product_id":"P-002","quantity":2,"unit_price":34.5}]}`}}, Usage: usage},
				{ToolCalls: []fakellm.ToolCall{{ID: "c4", Name: "confirm_payment", Arguments: `{"order_id":"O-001"}`}}, Usage: usage},
				{Content: "Order O-001 is placed and paid; your balance is now $141.01.", Usage: usage},
			},
			"o-user": {
				{Content: "Hi, I'm Alex Torres (C-101). Please order one P-001 and two P-002 and pay for them.", Usage: usage},
				{Content: "Great, thanks! ###STOP###", Usage: usage},
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(""); err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	modelFile := `
agent:
  provider: openai
  model: o-agent
  base_url: ` + f.URL() + `
  api_key_env: AGENT_KEY
  max_completion_tokens: 8192
  reasoning_effort: high
  extra_body: {verbosity: low, metadata: {suite: shop}}
  extra_headers_env: {OpenAI-Organization: ORG_ID, X-Team: TEAM}
  request_timeout_seconds: 30
  rate_limit: {requests_per_minute: 6000, tokens_per_minute: 10000000}
  pricing: {input_usd_per_mtok: 2, output_usd_per_mtok: 8, cached_input_usd_per_mtok: 0.5}
user_simulator_model:
  provider: openai
  model: o-user
  base_url: ` + f.URL() + `
  max_completion_tokens: 1024
  reasoning_effort: minimal
  extra_body: {store: false}
  extra_headers_env: {X-Team: TEAM}
`
	dir := t.TempDir()
	p := filepath.Join(dir, "models.yaml")
	if err := os.WriteFile(p, []byte(modelFile), 0o644); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"AGENT_KEY": "sk-agent-key-12345", "ORG_ID": "org-shop-42", "TEAM": "evals"}
	var out bytes.Buffer
	e := trialTestEnv(t, &out)
	e.Getenv = func(k string) string { return vars[k] }
	err = runTrial(ctxT(t), []string{"run", "--task", shopTaskPath, "--model-config", p, "--out", filepath.Join(dir, "out")}, e)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"trial shop_orders_02:0: agent openai:o-agent, user openai:o-user",
		"agent usage: 4 calls (0 retries), 4000 prompt + 800 completion tokens, $0.010800\n",
		"grade: score 1, pass true\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	type want struct {
		maxCompletion int
		effort        string
		extra         map[string]string
		headers       map[string]string
		auth          string
	}
	check := func(model string, n int, w want) {
		t.Helper()
		reqs := f.RequestsFor(model)
		if len(reqs) != n {
			t.Fatalf("%s: %d requests, want %d", model, len(reqs), n)
		}
		for i, r := range reqs {
			if r.Error != "" {
				t.Fatalf("%s request %d refused: %s", model, i, r.Error)
			}
			var body map[string]json.RawMessage
			if err := json.Unmarshal(r.Raw, &body); err != nil {
				t.Fatal(err)
			}
			for _, absent := range []string{"max_tokens", "temperature", "top_p", "seed"} {
				if _, ok := body[absent]; ok {
					t.Fatalf("%s request %d sent %s: %s", model, i, absent, r.Raw)
				}
			}
			if r.MaxCompletionTokens == nil || *r.MaxCompletionTokens != w.maxCompletion || r.ReasoningEffort != w.effort {
				t.Fatalf("%s request %d: max_completion_tokens %v reasoning_effort %q", model, i, r.MaxCompletionTokens, r.ReasoningEffort)
			}
			for k, v := range w.extra {
				if string(body[k]) != v {
					t.Fatalf("%s request %d: extra body %s = %s, want %s", model, i, k, body[k], v)
				}
			}
			for k, v := range w.headers {
				if got := r.Header.Get(k); got != v {
					t.Fatalf("%s request %d: header %s = %q, want %q", model, i, k, got, v)
				}
			}
			if r.Authorization != w.auth {
				t.Fatalf("%s request %d: Authorization %q", model, i, r.Authorization)
			}
		}
	}
	check("o-agent", 4, want{8192, "high", map[string]string{"verbosity": `"low"`, "metadata": `{"suite":"shop"}`},
		map[string]string{"OpenAI-Organization": "org-shop-42", "X-Team": "evals"}, "Bearer sk-agent-key-12345"})
	check("o-user", 2, want{1024, "minimal", map[string]string{"store": `false`},
		map[string]string{"X-Team": "evals", "OpenAI-Organization": ""}, ""})
	for _, secret := range []string{"sk-agent-key-12345", "org-shop-42"} {
		if strings.Contains(out.String(), secret) {
			t.Fatalf("%s printed:\n%s", secret, out.String())
		}
	}
	metrics, err := os.ReadFile(filepath.Join(onlyRun(t, filepath.Join(dir, "out")), "trials", "shop_orders_02", "0", "metrics.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(metrics), "cached_tokens: 2400") || !strings.Contains(string(metrics), "reasoning_tokens: 600") {
		t.Fatalf("metrics.yaml lacks cached/reasoning tokens:\n%s", metrics)
	}
}

func TestRunRejectsBadModelConfig(t *testing.T) {
	dir := t.TempDir()
	cases := []struct{ name, file, want string }{
		{"unknown key", "agent: {provider: openai, model: m, reasoning: high}", "agent.reasoning: unknown key"},
		{"collision", "agent: {provider: openai, model: m, extra_body: {max_tokens: 5}}",
			`agent.extra_body.max_tokens: the client sets "max_tokens" itself; use the model config's own field`},
		{"oracle user", "user_simulator_model: {provider: oracle}", `user_simulator_model.provider: "oracle" cannot play the user (want openai)`},
		{"effort", "agent: {provider: openai, model: m, reasoning_effort: ultra}", `agent.reasoning_effort: "ultra" is not one of none, minimal, low, medium, high, xhigh`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".yaml")
			if err := os.WriteFile(p, []byte(tc.file), 0o644); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			err := runTrial(ctxT(t), []string{"run", "--task", shopTaskPath, "--model-config", p}, trialTestEnv(t, &out))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "trial run: --model-config "+p+": ") {
				t.Fatalf("err = %v, want it to name %q", err, tc.want)
			}
		})
	}
	var out bytes.Buffer
	p := filepath.Join(dir, "hdr.yaml")
	if err := os.WriteFile(p, []byte("agent: {provider: openai, model: m, base_url: 'http://127.0.0.1:1/v1', extra_headers_env: {X-Org: UNSET_VAR}}"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := runTrial(ctxT(t), []string{"run", "--task", shopTaskPath, "--user", "scripted", "--model-config", p}, trialTestEnv(t, &out))
	if err == nil || err.Error() != `trial run: agent model "m": environment variable UNSET_VAR (extra_headers_env X-Org) is unset or empty` {
		t.Fatalf("err = %v", err)
	}
}
