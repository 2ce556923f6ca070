package grading

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"tolokaforge.io/operator/api/llm"
	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner/grading/gradefmt"
	"tolokaforge.io/operator/runner/grading/judge"
	"tolokaforge.io/operator/test/fakellm"
)

const (
	judgeModel = "judge-model"
	judgeKey   = "sk-judge-secret"
)

func f64(v float64) *float64 { return &v }

// rubric is the judge package's test rubric (judge/prompt_test.go): the answers these
// tests script name its criteria.
var rubric = []task.Criterion{
	{ID: "polite", Description: "Stays polite", Kind: task.CriterionBinary, Weight: f64(1)},
	{ID: "accurate", Description: "States the right balance", Kind: task.CriterionGraded, Bar: f64(0.7), Weight: f64(2)},
}

// judgeRig is a shop trial graded with a two-criterion judge against a real fake
// provider over loopback HTTP, its key in a secrets directory.
type judgeRig struct {
	env        *testEnv
	llm        *fakellm.Server
	secrets    string
	transcript []byte
}

func newJudgeRig(t *testing.T, edit func(g *task.GradingConfig)) *judgeRig {
	t.Helper()
	srv, err := fakellm.New(fakellm.Config{APIKey: judgeKey})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	secrets := t.TempDir()
	if err := os.WriteFile(filepath.Join(secrets, "judge-api-key"), []byte(judgeKey+"\n"), 0o400); err != nil {
		t.Fatal(err)
	}
	db := newTestDB(t)
	env := newTrial(t, db, loadShopTask(t, func(td *task.TaskDescription) {
		td.Grading.LLMJudge = &task.LLMJudge{ModelRef: "judge", Rubric: task.Rubric{
			Instructions: "Grade the agent's handling of the order.",
			Criteria:     rubric,
		}}
		td.Grading.Weights["llm_judge"] = 1
		if edit != nil {
			edit(td.Grading)
		}
	}))
	env.spec.Judge = &task.ModelConfig{
		Provider: task.ProviderOpenAI, Model: judgeModel, BaseURL: srv.URL(), APIKeyEnv: "judge-api-key",
		Pricing: &task.Pricing{InputUSDPerMTok: 1, OutputUSDPerMTok: 4},
	}
	return &judgeRig{env: env, llm: srv, secrets: secrets,
		transcript: agentRun(t, env, goldenPlaceOrderArgs, "O-001", goldenFinal)}
}

// fastRetries keeps a 429 from costing a real second of backoff.
var fastRetries = llm.Options{Retry: &llm.RetryPolicy{MaxRetries: 2, BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond}}

func (r *judgeRig) grade(t *testing.T, opts ...Option) (*runnerpb.Grade, error) {
	t.Helper()
	opts = append([]Option{WithSecretsDir(r.secrets), WithJudgeModels(judge.LLMModels(fastRetries))}, opts...)
	return grade(t, r.env, r.transcript, opts...)
}

func answer(t *testing.T, polite, accurate float64) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"criteria": []map[string]any{
		{"id": "polite", "met": polite == 1, "score": polite, "justification": "tone"},
		{"id": "accurate", "met": accurate >= 0.7, "score": accurate, "justification": "the balance 141.01"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestJudgeGradesCriteria(t *testing.T) {
	for _, c := range []struct {
		name             string
		polite, accurate float64
		judge, score     float64
		pass             bool
		segment          string
	}{
		{name: "every criterion met", polite: 1, accurate: 1, judge: 1, score: 1, pass: true,
			segment: "Judge: score=1 (2/2 criteria met)"},
		{name: "every criterion failed", polite: 0, accurate: 0, judge: 0, score: 0.5, pass: false,
			segment: "Judge: score=0 (0/2 criteria met; polite not met (score 0): tone; accurate not met (score 0): the balance 141.01)"},
		{name: "partial: graded below its bar", polite: 1, accurate: 0.4, judge: gradefmt.Round6((1 + 2*0.4) / 3), score: gradefmt.Round6((1 + (1+2*0.4)/3) / 2), pass: true, // 0.8 >= the task's 0.75
			segment: "Judge: score=0.6 (1/2 criteria met; accurate not met (score 0.4): the balance 141.01)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newJudgeRig(t, nil)
			if err := r.llm.Enqueue(judgeModel, fakellm.Reply{Content: answer(t, c.polite, c.accurate),
				Usage: fakellm.Usage{PromptTokens: 1000, CompletionTokens: 250, ReasoningTokens: 50}}); err != nil {
				t.Fatal(err)
			}
			g, err := r.grade(t)
			if err != nil {
				t.Fatalf("Grade: %v", err)
			}
			if g.Components.LlmJudge != c.judge || g.Score != c.score || g.BinaryPass != c.pass {
				t.Errorf("llm_judge = %v, score = %v, pass = %v; want %v, %v, %v", g.Components.LlmJudge, g.Score, g.BinaryPass, c.judge, c.score, c.pass)
			}
			if g.JudgeStatus != runnerpb.JudgeStatus_JUDGE_STATUS_COMPLETED {
				t.Errorf("judge_status = %v", g.JudgeStatus)
			}
			want := "State: hash match | JSONPath: all 7 checks passed | Transcript: all 9 rules passed | " + c.segment
			if g.Reasons != want {
				t.Errorf("reasons:\n got %s\nwant %s", g.Reasons, want)
			}
			if len(g.CriterionResults) != 2 || g.CriterionResults[0].Id != "polite" || g.CriterionResults[1].Score != c.accurate ||
				g.CriterionResults[1].Met != (c.accurate >= 0.7) || g.CriterionResults[1].Justification != "the balance 141.01" {
				t.Errorf("criterion_results = %v", g.CriterionResults)
			}
			rep := g.JudgeReport
			wantRep := &runnerpb.JudgeReport{Calls: 1, PromptTokens: 1000, CompletionTokens: 250, ReasoningTokens: 50,
				CostUsd: rep.GetCostUsd(), TranscriptJson: rep.GetTranscriptJson()}
			if c := rep.GetCostUsd(); math.Abs(c-0.002) > 1e-12 {
				t.Errorf("cost_usd = %v, want 0.002", c)
			}
			if !proto.Equal(rep, wantRep) {
				t.Errorf("judge_report = %v\nwant %v", rep, wantRep)
			}
			// Exactly one provider round trip per judge call, carrying the judge's
			// own key and the prompt.
			reqs := r.llm.RequestsFor(judgeModel)
			if len(reqs) != int(rep.GetCalls()) {
				t.Fatalf("%d provider requests for %d judge calls", len(reqs), rep.GetCalls())
			}
			req := reqs[0]
			if req.Authorization != "Bearer "+judgeKey {
				t.Errorf("Authorization = %q, want the key from the secrets directory", req.Authorization)
			}
			if len(req.Tools) != 0 {
				t.Errorf("tools offered to the judge: %v", req.Tools)
			}
			if len(req.Messages) != 2 || req.Messages[0].Role != "system" || req.Messages[1].Role != "user" {
				t.Fatalf("judge prompt roles: %+v", req.Messages)
			}
			mustContainAll(t, req.Messages[0].Content, "Grade the agent's handling of the order.", `id "polite"`, `id "accurate"`)
			mustContainAll(t, req.Messages[1].Content, "<policy>", r.env.spec.Task.SystemPrompt[:40],
				"called tool place_order", goldenFinal)
			var audit []task.Message
			if err := json.Unmarshal([]byte(rep.GetTranscriptJson()), &audit); err != nil || len(audit) != 3 || audit[2].Role != "assistant" {
				t.Errorf("transcript_json = %s (%v), want the prompt and the answer", rep.GetTranscriptJson(), err)
			}
		})
	}
}

func TestJudgeErrorsFailLoud(t *testing.T) {
	const errored = "Grading error: llm_judge: JUDGE_STATUS_ERRORED (no score; llm_judge carries a weight share, so the grade cannot be computed without it): "
	for _, c := range []struct {
		name     string
		replies  []fakellm.Reply
		opts     []Option
		edit     func(r *judgeRig)
		err      string // substring after the errored prefix
		requests int
	}{
		{name: "malformed answer", replies: []fakellm.Reply{{Content: "The agent did great, 10/10."}},
			err: `the judge's answer is not the JSON object {criteria: [{id, met, score, justification}]}`, requests: 1},
		{name: "answer outside the schema", replies: []fakellm.Reply{{Content: `{"criteria":[{"id":"polite","met":true,"score":1}]}`}},
			err: `the judge's answer does not match the rubric: criterion "accurate" is missing`, requests: 1},
		{name: "binary scored 0.5", replies: []fakellm.Reply{{Content: `{"criteria":[{"id":"polite","met":true,"score":0.5},{"id":"accurate","met":true,"score":1}]}`}},
			err: `binary criterion scored 0.5, not 0 or 1`, requests: 1},
		{name: "provider error after retries", replies: []fakellm.Reply{{Status: 500}, {Status: 500}, {Status: 500}},
			err: `judge call failed: api_error: judge model "judge-model" refused the request: HTTP 500`, requests: 3},
		{name: "timeout", replies: []fakellm.Reply{{Content: "{}", Delay: 10 * time.Second}}, opts: []Option{withJudgeTimeout(300 * time.Millisecond)},
			err: `the judge did not answer within 300ms`, requests: 1},
		{name: "tool calls although none were offered", replies: []fakellm.Reply{{ToolCalls: []fakellm.ToolCall{{Name: "get_customer", Arguments: `{}`}}}},
			err: `the judge called tools [get_customer], but none were offered`, requests: 1},
		{name: "no judge key file", edit: func(r *judgeRig) { r.env.spec.Judge.APIKeyEnv = "missing-key" },
			err: `judge.api_key_env names key file "missing-key", which is not in the secrets directory`, requests: 0},
		{name: "wrong key: the provider's 401 is redacted", edit: func(r *judgeRig) {
			if err := os.WriteFile(filepath.Join(r.secrets, "judge-api-key"), []byte("sk-wrong"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, err: `judge call failed: error: judge model "judge-model" rejected the request as invalid: HTTP 401`, requests: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newJudgeRig(t, nil)
			if c.edit != nil {
				c.edit(r)
			}
			if len(c.replies) > 0 {
				if err := r.llm.Enqueue(judgeModel, c.replies...); err != nil {
					t.Fatal(err)
				}
			}
			start := time.Now()
			g, err := r.grade(t, c.opts...)
			if err == nil {
				t.Fatalf("graded %v, want JUDGE_STATUS_ERRORED failing the RPC", g)
			}
			if !strings.HasPrefix(err.Error(), errored) || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("error:\n got %s\nwant %s…%s…", err, errored, c.err)
			}
			if strings.Contains(err.Error(), judgeKey) || strings.Contains(err.Error(), "sk-wrong") {
				t.Errorf("the error leaks a key: %s", err)
			}
			if n := len(r.llm.RequestsFor(judgeModel)); n != c.requests {
				t.Errorf("%d provider requests, want %d", n, c.requests)
			}
			if time.Since(start) > 5*time.Second {
				t.Errorf("grading took %s", time.Since(start))
			}
		})
	}
}

func TestJudgeErroredWithoutWeightShareIsReported(t *testing.T) {
	r := newJudgeRig(t, func(g *task.GradingConfig) { g.Weights["llm_judge"] = 0 })
	if err := r.llm.Enqueue(judgeModel, fakellm.Reply{Content: "not json"}); err != nil {
		t.Fatal(err)
	}
	g, err := r.grade(t)
	if err != nil {
		t.Fatalf("Grade: %v (llm_judge has no share, so its error must not fail the RPC)", err)
	}
	if g.JudgeStatus != runnerpb.JudgeStatus_JUDGE_STATUS_ERRORED || g.Components.LlmJudge != -1 || len(g.CriterionResults) != 0 {
		t.Errorf("judge_status = %v, llm_judge = %v, criteria = %v; want ERRORED, -1 (not 0), none", g.JudgeStatus, g.Components.LlmJudge, g.CriterionResults)
	}
	if g.Score != 1 || !g.BinaryPass {
		t.Errorf("score = %v pass = %v, want the other components' 1.0", g.Score, g.BinaryPass)
	}
	if g.JudgeReport.GetCalls() != 1 || g.JudgeReport.GetCostUsd() == 0 {
		t.Errorf("judge_report = %v, want the errored call's spend", g.JudgeReport)
	}
	mustContainAll(t, g.Reasons, "Judge: errored, no score (llm_judge carries no weight share): the judge's answer is not the JSON object")
}

func TestJudgeRateLimitedThenAnsweredIsBilledOnce(t *testing.T) {
	r := newJudgeRig(t, nil)
	if err := r.llm.Enqueue(judgeModel,
		fakellm.Reply{Status: 429, RetryAfter: "0"},
		fakellm.Reply{Content: answer(t, 1, 1), Usage: fakellm.Usage{PromptTokens: 800, CompletionTokens: 100}},
	); err != nil {
		t.Fatal(err)
	}
	g, err := r.grade(t)
	if err != nil {
		t.Fatalf("Grade: %v", err)
	}
	if n := len(r.llm.RequestsFor(judgeModel)); n != 2 {
		t.Errorf("%d provider requests, want the 429 and its retry", n)
	}
	want := &runnerpb.JudgeReport{Calls: 1, PromptTokens: 800, CompletionTokens: 100, CostUsd: g.JudgeReport.GetCostUsd(),
		TranscriptJson: g.JudgeReport.GetTranscriptJson()}
	if c := g.JudgeReport.GetCostUsd(); math.Abs(c-0.0012) > 1e-12 {
		t.Errorf("cost_usd = %v, want 0.0012 (800 prompt tokens at $1/M + 100 completion tokens at $4/M, once)", c)
	}
	if !proto.Equal(g.JudgeReport, want) {
		t.Errorf("judge_report = %v\nwant %v (billed once)", g.JudgeReport, want)
	}
	if g.Components.LlmJudge != 1 || g.JudgeStatus != runnerpb.JudgeStatus_JUDGE_STATUS_COMPLETED {
		t.Errorf("llm_judge = %v, status %v", g.Components.LlmJudge, g.JudgeStatus)
	}
}

func TestJudgeSkippedWithoutTranscriptCallsNoProvider(t *testing.T) {
	r := newJudgeRig(t, nil)
	r.env.records = nil
	g, err := grade(t, r.env, nil, WithSecretsDir(r.secrets))
	if err != nil {
		t.Fatal(err)
	}
	if g.JudgeStatus != runnerpb.JudgeStatus_JUDGE_STATUS_UNSPECIFIED || g.JudgeReport != nil || g.Components.LlmJudge != -1 {
		t.Errorf("grade = %v, want no judge run", g)
	}
	mustContainAll(t, g.Reasons, "llm_judge: skipped: no transcript messages")
	if n := len(r.llm.Requests()); n != 0 {
		t.Errorf("%d provider requests for a skipped judge", n)
	}
}

func TestCheckJudgeRefusesBeforeTheRun(t *testing.T) {
	secrets := t.TempDir()
	if err := os.WriteFile(filepath.Join(secrets, "k"), []byte("sk"), 0o600); err != nil {
		t.Fatal(err)
	}
	judge := func() *task.TrialSpec {
		return &task.TrialSpec{Task: &task.TaskDescription{Grading: &task.GradingConfig{LLMJudge: &task.LLMJudge{ModelRef: "judge",
			Rubric: task.Rubric{Criteria: rubric}}}},
			Judge: &task.ModelConfig{Provider: task.ProviderOpenAI, Model: "m", APIKeyEnv: "k"}}
	}
	gr := New(WithSecretsDir(secrets)).(JudgeChecker)
	for _, c := range []struct {
		name string
		edit func(s *task.TrialSpec)
		key  string // the host's key for the trial (RegisterTrial metadata)
		err  string
	}{
		{name: "a usable judge", edit: func(*task.TrialSpec) {}},
		{name: "no judge at all", edit: func(s *task.TrialSpec) { s.Task.Grading.LLMJudge = nil; s.Judge = nil }},
		{name: "no judge model config", edit: func(s *task.TrialSpec) { s.Judge = nil },
			err: `task.grading.llm_judge.model_ref "judge" names TrialSpec.judge, but the trial spec carries no judge model config`},
		{name: "judge tools are checked at decode and when the judge runs, not refused here",
			edit: func(s *task.TrialSpec) { s.Task.Grading.LLMJudge.Tools = []string{"get_customer"} }},
		{name: "oracle judge", edit: func(s *task.TrialSpec) { s.Judge.Provider = task.ProviderOracle },
			err: `judge model: provider "oracle" is not "openai"`},
		{name: "missing key file", edit: func(s *task.TrialSpec) { s.Judge.APIKeyEnv = "OPENAI_API_KEY" },
			err: `judge.api_key_env names key file "OPENAI_API_KEY", which is not in the secrets directory`},
		{name: "missing key file, but the host gave the trial a key", edit: func(s *task.TrialSpec) { s.Judge.APIKeyEnv = "OPENAI_API_KEY" },
			key: "sk-host"},
		{name: "a host's key does not make an oracle judge usable", edit: func(s *task.TrialSpec) { s.Judge.Provider = task.ProviderOracle },
			key: "sk-host", err: `judge model: provider "oracle" is not "openai"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := judge()
			c.edit(s)
			err := gr.CheckJudge(s, c.key)
			if c.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("err = %v, want it to contain %q", err, c.err)
			}
		})
	}
}

// A judge billed before it failed leaves its spend on the error (the GradeTrial
// handler forwards it in a trailer); one that never reached the provider leaves none.
func TestFailedJudgeErrorCarriesItsSpend(t *testing.T) {
	r := newJudgeRig(t, nil)
	if err := r.llm.Enqueue(judgeModel, fakellm.Reply{Content: "not json", Usage: fakellm.Usage{PromptTokens: 800, CompletionTokens: 100}}); err != nil {
		t.Fatal(err)
	}
	_, err := r.grade(t)
	if err == nil || !strings.Contains(err.Error(), "JUDGE_STATUS_ERRORED") {
		t.Fatalf("err = %v", err)
	}
	var ge *Error
	if !errors.As(err, &ge) || ge.Error() != err.Error() {
		t.Fatalf("the spend wrapper changed the error: %T %v", err, err)
	}
	jr := JudgeReportOf(err)
	if jr.GetCalls() != 1 || jr.GetPromptTokens() != 800 || jr.GetCompletionTokens() != 100 || math.Abs(jr.GetCostUsd()-0.0012) > 1e-12 ||
		!strings.Contains(jr.GetTranscriptJson(), "not json") {
		t.Fatalf("judge report = %v, want 1 call, 800+100 tokens, $0.0012 and the transcript", jr)
	}

	r = newJudgeRig(t, func(*task.GradingConfig) {})
	r.env.spec.Judge.APIKeyEnv = "missing-key"
	if _, err := r.grade(t); err == nil || JudgeReportOf(err) != nil {
		t.Fatalf("err = %v, report %v: a judge that made no call spent nothing", err, JudgeReportOf(err))
	}
}

// keyedEnv is a trial the host gave its judge's key at registration (a slot's
// runner: RegisterTrial metadata).
type keyedEnv struct {
	*testEnv
	key string
}

func (e keyedEnv) JudgeKey() string { return e.key }

// The host's key for the trial is the judge's key, whatever the secrets directory
// holds (on a slot its file is absent or another Trial's); without one the file is
// read as before.
func TestJudgeUsesTheHostsKeyForTheTrial(t *testing.T) {
	for _, c := range []struct {
		name     string
		hostKey  string
		fileKey  string
		wantAuth string
		wantErr  string // "" : graded
	}{
		{name: "the host's key wins over a stale file", hostKey: judgeKey, fileKey: "sk-another-trials-key",
			wantAuth: "Bearer " + judgeKey},
		{name: "no host key: the file", hostKey: "", fileKey: "sk-another-trials-key",
			wantAuth: "Bearer sk-another-trials-key", wantErr: "Incorrect API key provided"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newJudgeRig(t, nil)
			if err := os.WriteFile(filepath.Join(r.secrets, "judge-api-key"), []byte(c.fileKey), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := r.llm.Enqueue(judgeModel, fakellm.Reply{Content: answer(t, 1, 1)}); err != nil {
				t.Fatal(err)
			}
			g, err := New(WithSecretsDir(r.secrets), WithJudgeModels(judge.LLMModels(fastRetries))).Grade(context.Background(),
				keyedEnv{testEnv: r.env, key: c.hostKey}, Request{Transcript: r.transcript, TerminationReason: "agent_done"})
			if c.wantErr == "" {
				if err != nil || g.GetJudgeStatus() != runnerpb.JudgeStatus_JUDGE_STATUS_COMPLETED {
					t.Fatalf("Grade: %v, judge %v; want a completed judge", err, g.GetJudgeStatus())
				}
			} else if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("Grade: %v, want an error containing %q", err, c.wantErr)
			}
			reqs := r.llm.RequestsFor(judgeModel)
			if len(reqs) == 0 || reqs[0].Authorization != c.wantAuth {
				t.Fatalf("provider requests %d, first Authorization %q; want %q", len(reqs), authOf(reqs), c.wantAuth)
			}
		})
	}
}

func authOf(reqs []fakellm.Request) string {
	if len(reqs) == 0 {
		return ""
	}
	return reqs[0].Authorization
}
