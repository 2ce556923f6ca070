package host_test

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"

	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/controllers/host"
	"tolokaforge.io/operator/results/local"
	"tolokaforge.io/operator/test/fakellm"
)

// A judge that was billed and then failed (an answer outside the schema) leaves no
// grade, yet its spend reaches the attempt's judge usage through the GradeTrial
// trailer, as a completed judge's does through the grade.
func TestFailedJudgeSpendReachesTheAttemptUsage(t *testing.T) {
	const key = "sk-host-judge"
	secrets := t.TempDir()
	if err := os.WriteFile(filepath.Join(secrets, "judge-key"), []byte(key), 0o400); err != nil {
		t.Fatal(err)
	}
	s := startStack(t, local.StackConfig{SecretsDir: secrets})
	f, err := fakellm.New(fakellm.Config{Scripts: map[string][]fakellm.Reply{
		"agent": {
			{ToolCalls: []fakellm.ToolCall{call("c1", "place_order", placeArgs)}},
			{ToolCalls: []fakellm.ToolCall{call("c2", "confirm_payment", `{"order_id":"O-001"}`)}},
			{Content: "Order O-001 is paid. Your remaining balance is 141.01."},
		},
		"judge": {{Content: "The agent did great, 10/10.", Usage: fakellm.Usage{PromptTokens: 700, CompletionTokens: 30}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })

	tk := shopTask(t)
	tk.Grading.LLMJudge = &task.LLMJudge{ModelRef: "judge", Rubric: task.Rubric{Criteria: []task.Criterion{
		{ID: "polite", Description: "Stays polite", Kind: task.CriterionBinary},
	}}}
	tk.Grading.Weights[task.ComponentLLMJudge] = 1
	agent, agentCfg := llmActor(t, f, "agent", nil)
	spec := specFor(s, tk, agentCfg)
	spec.Judge = &task.ModelConfig{Provider: task.ProviderOpenAI, Model: "judge", BaseURL: f.URL(), APIKeyEnv: "judge-key",
		Pricing: &task.Pricing{InputUSDPerMTok: 1, OutputUSDPerMTok: 4}}
	res := host.RunAttempt(ctxT(t), attempt(s, spec, agent, nil))

	if res.Outcome != evalv1.OutcomeGradingFailed || res.Grade != nil ||
		!strings.Contains(res.Message, "llm_judge: JUDGE_STATUS_ERRORED") {
		t.Fatalf("%s: %s (grade %v)", res, res.Message, res.Grade)
	}
	cost := res.JudgeUsage.CostUSD
	res.JudgeUsage.CostUSD = 0
	if want := (host.Usage{Calls: 1, PromptTokens: 700, CompletionTokens: 30}); res.JudgeUsage != want {
		t.Fatalf("judge usage = %+v, want %+v", res.JudgeUsage, want)
	}
	if math.Abs(cost-(700*1+30*4)/1e6) > 1e-12 {
		t.Fatalf("judge cost = %g, want 0.00082", cost)
	}
	if reqs := f.RequestsFor("judge"); len(reqs) != 1 || reqs[0].Authorization != "Bearer "+key {
		t.Fatalf("%d judge requests, want 1 with the key file's key", len(reqs))
	}
}
