package runner_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tolokaforge.io/operator/api/llm"
	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner/grading"
	"tolokaforge.io/operator/runner/grading/judge"
	"tolokaforge.io/operator/test/fakellm"
)

// judgeSpec is a TrialSpec whose task is graded by the judge alone.
func judgeSpec(tb testing.TB, id, baseURL, keyFile string) string {
	tb.Helper()
	td := baseTask(nil, nil, nil)
	td["grading"] = obj{
		"weights": obj{"llm_judge": 1},
		"llm_judge": obj{"model_ref": "judge", "rubric": obj{"criteria": []any{
			obj{"id": "greets", "description": "Greets the user"},
		}}},
	}
	b, err := json.Marshal(obj{"trial_id": id, "run_id": "run-1", "attempt_id": "att-1", "task": td,
		"agent": obj{"provider": "oracle"},
		"judge": obj{"provider": "openai", "model": "judge-m", "base_url": baseURL, "api_key_env": keyFile,
			"pricing": obj{"input_usd_per_mtok": 2, "output_usd_per_mtok": 8}}})
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

func TestGradeTrialRunsTheJudgeThroughTheRunner(t *testing.T) {
	const key = "sk-runner-judge"
	llmSrv, err := fakellm.New(fakellm.Config{APIKey: key})
	if err != nil {
		t.Fatal(err)
	}
	if err := llmSrv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = llmSrv.Close() })
	secrets := t.TempDir()
	if err := os.WriteFile(filepath.Join(secrets, "judge-api-key"), []byte(key), 0o400); err != nil {
		t.Fatal(err)
	}
	// The key is also in the runner's environment under the name api_key_env
	// gives; it must not be what the judge sends.
	t.Setenv("judge-api-key", "sk-from-env")
	g := grading.New(grading.WithSecretsDir(secrets), grading.WithJudgeModels(judge.LLMModels(llm.Options{
		Retry: &llm.RetryPolicy{MaxRetries: 1, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond},
	})))
	h := startRunner(t, nil, withGrader(g))

	// Refused before the run: the key file the spec names is not mounted.
	r := h.registerRaw(t, &runnerpb.RegisterTrialRequest{TrialId: "nokey", TrialSpecJson: judgeSpec(t, "nokey", llmSrv.URL(), "other-key"),
		EngineProtocolVersion: task.EngineProtocolVersion})
	if r.GetSuccess() || !strings.HasPrefix(r.GetError(), `Invalid trial_spec_json: judge.api_key_env names key file "other-key", which is not in the secrets directory`) {
		t.Fatalf("register without the key file: %+v", r)
	}
	if n := len(llmSrv.Requests()); n != 0 {
		t.Fatalf("%d provider requests before any grading", n)
	}

	r = h.registerRaw(t, &runnerpb.RegisterTrialRequest{TrialId: "j", TrialSpecJson: judgeSpec(t, "j", llmSrv.URL(), "judge-api-key"),
		EngineProtocolVersion: task.EngineProtocolVersion})
	if !r.GetSuccess() {
		t.Fatalf("register: %s", r.GetError())
	}
	if err := llmSrv.Enqueue("judge-m", fakellm.Reply{
		Content: `{"criteria":[{"id":"greets","met":true,"score":1,"justification":"says hello"}]}`,
		Usage:   fakellm.Usage{PromptTokens: 500, CompletionTokens: 50},
	}); err != nil {
		t.Fatal(err)
	}
	resp := grade(t, h, &runnerpb.GradeTrialRequest{TrialId: "j", TerminationReason: "agent_done",
		LlmMessagesJson: `[{"role":"system","content":"be helpful"},{"role":"user","content":"hi"},{"role":"assistant","content":"Hello! How can I help?"}]`})
	if !resp.GetSuccess() {
		t.Fatalf("grade: %s", resp.GetError())
	}
	gr := resp.GetGrade()
	if gr.GetScore() != 1 || !gr.GetBinaryPass() || gr.GetComponents().GetLlmJudge() != 1 ||
		gr.GetJudgeStatus() != runnerpb.JudgeStatus_JUDGE_STATUS_COMPLETED || gr.GetReasons() != "Judge: score=1 (1/1 criteria met)" {
		t.Errorf("grade = %v", gr)
	}
	rep := gr.GetJudgeReport()
	if rep.GetCalls() != 1 || rep.GetPromptTokens() != 500 || rep.GetCompletionTokens() != 50 || rep.GetCostUsd() < 0.0014-1e-12 || rep.GetCostUsd() > 0.0014+1e-12 {
		t.Errorf("judge_report = %v", rep)
	}
	reqs := llmSrv.Requests()
	if len(reqs) != 1 || reqs[0].Authorization != "Bearer "+key {
		t.Fatalf("provider requests = %d (auth %q), want one round trip with the mounted key", len(reqs), reqs[0].Authorization)
	}
}

func TestGradeTrialTestExecutionThroughTheRunner(t *testing.T) {
	h := startRunner(t, nil, withGrader(grading.New()))
	td := baseTask([]any{tool("write_file")}, nil, nil)
	td["grading"] = obj{
		"grading_method": "test_execution",
		"test_execution": obj{"command": []any{"sh", "-c", `grep -q 42 answer.txt && echo 1 > reward.txt || echo 0 > reward.txt`},
			"reward_file": "reward.txt", "timeout_s": 10},
	}
	h.mustRegister(t, "v", td)
	h.mustExec(t, "v", call{tool: "write_file", args: `{"path":"answer.txt","content":"the answer is 42"}`, callID: "c1", executor: "agent"})
	resp := grade(t, h, &runnerpb.GradeTrialRequest{TrialId: "v", TerminationReason: "agent_done"})
	if !resp.GetSuccess() {
		t.Fatalf("grade: %s", resp.GetError())
	}
	if g := resp.GetGrade(); g.GetScore() != 1 || !g.GetBinaryPass() || !strings.HasPrefix(g.GetReasons(), "Test execution: score=1 (reward 1 from ") {
		t.Errorf("grade = %v", g)
	}
}

// The judge's tools run through the runner's own adapters (Env.Replay) against the
// trial's state: a builtin reader registered without a category is offered as read,
// its result reaches the judge, and the trial's state hashes the same after grading.
func TestGradeTrialJudgeCallsReadOnlyToolsThroughTheRunner(t *testing.T) {
	const key = "sk-runner-judge"
	llmSrv, err := fakellm.New(fakellm.Config{APIKey: key})
	if err != nil {
		t.Fatal(err)
	}
	if err := llmSrv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = llmSrv.Close() })
	secrets := t.TempDir()
	if err := os.WriteFile(filepath.Join(secrets, "judge-api-key"), []byte(key), 0o400); err != nil {
		t.Fatal(err)
	}
	g := grading.New(grading.WithSecretsDir(secrets), grading.WithJudgeModels(judge.LLMModels(llm.Options{
		Retry: &llm.RetryPolicy{MaxRetries: 1, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond},
	})))
	h := startRunner(t, nil, withGrader(g))

	td := baseTask([]any{tool("db_get"), tool("db_insert")}, nil, obj{"items": []any{obj{"id": "a", "n": 1}}})
	td["grading"] = obj{
		"weights": obj{"llm_judge": 1},
		"llm_judge": obj{"model_ref": "judge", "tools": []any{"db_get"}, "max_calls": 3, "rubric": obj{"criteria": []any{
			obj{"id": "greets", "description": "Greets the user"},
		}}},
	}
	spec, err := json.Marshal(obj{"trial_id": "jt", "run_id": "run-1", "attempt_id": "att-1", "task": td,
		"agent": obj{"provider": "oracle"},
		"judge": obj{"provider": "openai", "model": "judge-m", "base_url": llmSrv.URL(), "api_key_env": "judge-api-key"}})
	if err != nil {
		t.Fatal(err)
	}
	r := h.registerRaw(t, &runnerpb.RegisterTrialRequest{TrialId: "jt", TrialSpecJson: string(spec), EngineProtocolVersion: task.EngineProtocolVersion})
	if !r.GetSuccess() {
		t.Fatalf("register: %s", r.GetError())
	}
	before, err := h.db.c.Hash(ctxT(t), "jt")
	if err != nil {
		t.Fatal(err)
	}
	if err := llmSrv.Enqueue("judge-m",
		fakellm.Reply{ToolCalls: []fakellm.ToolCall{{Name: "db_get", Arguments: `{"table":"items","key":"a"}`}}},
		fakellm.Reply{Content: `{"criteria":[{"id":"greets","met":true,"score":1,"justification":"says hello"}]}`},
	); err != nil {
		t.Fatal(err)
	}
	resp := grade(t, h, &runnerpb.GradeTrialRequest{TrialId: "jt", TerminationReason: "agent_done",
		LlmMessagesJson: `[{"role":"system","content":"be helpful"},{"role":"user","content":"hi"},{"role":"assistant","content":"Hello! How can I help?"}]`})
	if !resp.GetSuccess() {
		t.Fatalf("grade: %s", resp.GetError())
	}
	if rep := resp.GetGrade().GetJudgeReport(); rep.GetCalls() != 2 || rep.GetToolCalls() != 1 {
		t.Errorf("judge_report = %v, want 2 calls and 1 tool call", rep)
	}
	reqs := llmSrv.Requests()
	if len(reqs) != 2 || len(reqs[0].Tools) != 1 || reqs[0].Tools[0].Name != "db_get" {
		t.Fatalf("requests %d, first offered %+v; want db_get offered", len(reqs), reqs[0].Tools)
	}
	if last := reqs[1].Messages[len(reqs[1].Messages)-1]; last.Role != "tool" || !strings.Contains(last.Content, `"n":1`) {
		t.Errorf("the judge was shown %+v, want db_get's record", last)
	}
	after, err := h.db.c.Hash(ctxT(t), "jt")
	if err != nil {
		t.Fatal(err)
	}
	if after.StableHash != before.StableHash || after.FullHash != before.FullHash {
		t.Errorf("grading changed the trial's state: %+v -> %+v", before, after)
	}
}
