package cli

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"tolokaforge.io/operator/test/fakellm"
)

const fullTaskPath = "examples/shop/task_full.json"

const judgeKey = "sk-trial-judge-key"

// judgeRun runs examples/shop/task_full.json through `trial run` with an LLM agent
// and the judge both on the fake provider, the judge's key in a secrets directory
// and nowhere in the environment.
func judgeRun(t *testing.T, agent []fakellm.Reply, judge fakellm.Reply) (string, *fakellm.Server, string, error) {
	t.Helper()
	f, err := fakellm.New(fakellm.Config{APIKey: judgeKey, Scripts: map[string][]fakellm.Reply{"agent": agent, "judge": {judge}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	dir := t.TempDir()
	secrets := filepath.Join(dir, "secrets")
	if err := os.Mkdir(secrets, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(secrets, "judge-key"), []byte(judgeKey+"\n"), 0o400); err != nil {
		t.Fatal(err)
	}
	models := filepath.Join(dir, "models.yaml")
	if err := os.WriteFile(models, []byte(`
judge:
  provider: openai
  model: judge
  base_url: `+f.URL()+`
  api_key_env: judge-key
  pricing: {input_usd_per_mtok: 1, output_usd_per_mtok: 4}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	e := trialTestEnv(t, &out)
	// The agent's key comes from the environment (the host side); the judge's only
	// from the file.
	e.Getenv = func(k string) string {
		if k == "AGENT_KEY" {
			return judgeKey
		}
		return ""
	}
	artifacts := filepath.Join(dir, "out")
	err = runTrial(ctxT(t), []string{"run", "--task", fullTaskPath, "--agent", "openai:agent", "--user", "scripted", "--base-url", f.URL(),
		"--api-key-env", "AGENT_KEY", "--model-config", models, "--secrets-dir", secrets, "--out", artifacts}, e)
	return out.String(), f, filepath.Join(onlyRun(t, artifacts), "trials", "shop_orders_02_full", "0"), err
}

func judgeAnswer(polite, accurate string) fakellm.Reply {
	return fakellm.Reply{Content: `{"criteria":[` + polite + `,` + accurate + `]}`, Usage: fakellm.Usage{PromptTokens: 900, CompletionTokens: 60}}
}

// The shop task graded by every component at once passes with 1.0 when the agent
// does the job, and every component's reason is on the grade.
func TestRunFullyGradedShopPasses(t *testing.T) {
	out, f, trialDir, err := judgeRun(t, []fakellm.Reply{
		{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "list_products", Arguments: `{}`}, {ID: "c2", Name: "get_customer", Arguments: `{"customer_id":"C-101"}`}}},
		{ToolCalls: []fakellm.ToolCall{{ID: "c3", Name: "place_order", Arguments: `{"customer_id":"C-101","items":[{"product_id":"P-001","quantity":1,"unit_price":89.99},{"product_id":"P-002","quantity":2,"unit_price":34.5}]}`}}},
		{ToolCalls: []fakellm.ToolCall{{ID: "c4", Name: "confirm_payment", Arguments: `{"order_id":"O-001"}`}}},
		{Content: "Thank you! Order O-001 is placed and paid; your remaining balance is $141.01."},
	}, judgeAnswer(`{"id":"polite","met":true,"score":1,"justification":"courteous throughout"}`,
		`{"id":"accurate","met":true,"score":1,"justification":"states O-001, paid and 141.01"}`))
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out)
	}
	for _, want := range []string{
		"trial shop_orders_02_full:0: agent openai:agent, user scripted",
		"judge openai:judge\n",
		"judge usage: 1 calls (0 retries), 900 prompt + 60 completion tokens, $0.001140\n",
		"grade: score 1, pass true\n",
		"judge: COMPLETED\n",
		"State: hash match", "JSONPath: all 3 checks passed", "Transcript: ", "Trace checks: ",
		"Judge: score=1 (2/2 criteria met)", "Custom checks: score=1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	reqs := f.RequestsFor("judge")
	if len(reqs) != 1 || reqs[0].Authorization != "Bearer "+judgeKey {
		t.Fatalf("%d judge requests (want 1 with the key file's key)", len(reqs))
	}
	grade, err := os.ReadFile(filepath.Join(trialDir, "grade.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"component_results:", "passed: true", "criterion_results:", "id: polite", "id: accurate", "judge_status: JUDGE_STATUS_COMPLETED", "trace_checks:", "custom_checks:"} {
		if !strings.Contains(string(grade), want) {
			t.Errorf("grade.yaml lacks %q:\n%s", want, grade)
		}
	}
}

// A wrong run (the order placed but paid under a wrong id, the customer never looked
// up, the payment failure blurted out) fails, and every component is named failing.
func TestRunFullyGradedShopWrongRunNamesEveryFailingComponent(t *testing.T) {
	out, _, trialDir, err := judgeRun(t, []fakellm.Reply{
		{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "place_order", Arguments: `{"customer_id":"C-101","items":[{"product_id":"P-001","quantity":1,"unit_price":89.99},{"product_id":"P-002","quantity":2,"unit_price":34.5}]}`}}},
		{ToolCalls: []fakellm.ToolCall{{ID: "c2", Name: "confirm_payment", Arguments: `{"order_id":"O-999"}`}}},
		{Content: "Sorry, payment failed. Try again later."},
	}, judgeAnswer(`{"id":"polite","met":false,"score":0,"justification":"curt"}`,
		`{"id":"accurate","met":false,"score":0.2,"justification":"never states the balance"}`))
	var ee *exitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.HasPrefix(ee.Error(), "trial failed: score ") {
		t.Fatalf("err = %v\n%s", err, out)
	}
	for _, want := range []string{
		"grade: score 0.116667, pass false\n", "judge: COMPLETED\n",
		"State: hash mismatch",
		"JSONPath: 1 of 3 checks passed; failed: Order status is 'paid'",
		"Transcript: 6 of 8 rules failed: disallow_regex[0]",
		"Trace checks: score=0",
		"Trace check customer-verified-before-payment: get_customer must succeed before any confirm_payment",
		"Trace check pays-the-placed-order: the order place_order created is paid exactly once",
		"Judge: score=0.133333 (0/2 criteria met; polite not met (score 0): curt; accurate not met (score 0.2): never states the balance)",
		"Custom checks: score=0", "paid-once: failed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// grade.yaml records each component failing, with its own reasons.
	b, err := os.ReadFile(filepath.Join(trialDir, "grade.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		ComponentResults map[string]struct {
			Status  string   `json:"status"`
			Passed  bool     `json:"passed"`
			Reasons []string `json:"reasons"`
		} `json:"component_results"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"state_checks", "transcript_rules", "trace_checks", "llm_judge", "custom_checks"} {
		r, ok := doc.ComponentResults[c]
		if !ok || r.Status != "scored" || r.Passed || len(r.Reasons) == 0 {
			t.Errorf("component_results.%s = %+v (present %t), want scored, not passed, with reasons", c, r, ok)
		}
	}

}

// Without a judge model the judged task is refused before any model is called.
func TestRunJudgedTaskWithoutJudgeConfigIsRefused(t *testing.T) {
	var out bytes.Buffer
	err := runTrial(ctxT(t), []string{"run", "--task", fullTaskPath, "--out", t.TempDir()}, trialTestEnv(t, &out))
	want := `trial run: task shop_orders_02_full grades with llm_judge (model_ref "judge"), which needs a judge model: ` +
		`add a "judge" model config to --model-config (its api_key_env names a key file in --secrets-dir)`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
	if strings.Contains(out.String(), "turn ") {
		t.Fatalf("the trial ran:\n%s", out.String())
	}

	dir := t.TempDir()
	for _, tc := range []struct{ name, file, args, want string }{
		{"oracle judge", "judge: {provider: oracle}", "", `judge.provider: "oracle" cannot judge (want openai)`},
		{"judge key path", "judge: {provider: openai, model: j, base_url: 'http://127.0.0.1:1/v1', api_key_env: ../key}", "",
			`judge.api_key_env "../key" must be a plain file name`},
		{"missing key file", "judge: {provider: openai, model: j, base_url: 'http://127.0.0.1:1/v1', api_key_env: judge-key}", "secrets",
			`judge.api_key_env names key file "judge-key", which is not in the secrets directory`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".yaml")
			if err := os.WriteFile(p, []byte(tc.file), 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"run", "--task", fullTaskPath, "--model-config", p, "--out", t.TempDir()}
			if tc.args != "" {
				args = append(args, "--secrets-dir", t.TempDir())
			}
			var out bytes.Buffer
			err := runTrial(ctxT(t), args, trialTestEnv(t, &out))
			if err == nil && !strings.Contains(out.String(), tc.want) {
				t.Fatalf("ran without naming %q:\n%s", tc.want, out.String())
			}
			if err != nil && !strings.Contains(err.Error()+out.String(), tc.want) {
				t.Fatalf("err = %v, want it to name %q\n%s", err, tc.want, out.String())
			}
		})
	}
	var out2 bytes.Buffer
	if err := runTrial(ctxT(t), []string{"run", "--task", fullTaskPath, "--secrets-dir", filepath.Join(dir, "nope")}, trialTestEnv(t, &out2)); err == nil ||
		!strings.HasPrefix(err.Error(), "trial run: --secrets-dir: stat ") {
		t.Fatalf("err = %v", err)
	}
}

// A judge billed and then failed leaves no grade; its spend is still the trial's.
func TestRunFullyGradedShopFailedJudgeSpendIsCounted(t *testing.T) {
	out, _, trialDir, err := judgeRun(t, []fakellm.Reply{
		{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "place_order", Arguments: `{"customer_id":"C-101","items":[{"product_id":"P-001","quantity":1,"unit_price":89.99}]}`}}},
		{Content: "Done."},
	}, fakellm.Reply{Content: "Looks fine.", Usage: fakellm.Usage{PromptTokens: 500, CompletionTokens: 20}})
	var ee *exitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.HasPrefix(ee.Error(), "trial ended without a grade: GradingFailed: Grading error: llm_judge: JUDGE_STATUS_ERRORED") {
		t.Fatalf("err = %v\n%s", err, out)
	}
	if !strings.Contains(out, "judge usage: 1 calls (0 retries), 500 prompt + 20 completion tokens, $0.000580\n") {
		t.Fatalf("output lacks the failed judge's usage:\n%s", out)
	}
	metrics, err := os.ReadFile(filepath.Join(trialDir, "metrics.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(metrics), "prompt_tokens: 500") {
		t.Fatalf("metrics.yaml lacks the judge's tokens:\n%s", metrics)
	}
}
