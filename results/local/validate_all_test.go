package local_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/examples/shop"
	"tolokaforge.io/operator/results/local"
	"tolokaforge.io/operator/test/fakellm"
	"tolokaforge.io/operator/test/mcpstandin"
)

// TestMain lets the test binary stand in for `tolokaforge mcp shop`.
func TestMain(m *testing.M) { mcpstandin.Main(m) }

func startStack(t *testing.T) *local.Stack {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := local.StartStack(ctx, local.StackConfig{SelfExecutable: exe, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

func fullShop(t *testing.T, edit func(g *task.GradingConfig)) *task.TaskDescription {
	t.Helper()
	td, err := task.DecodeTaskDescription(shop.TaskFullJSON())
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(td.Grading)
	}
	return td
}

// judgeOn answers the judge with reply on the fake provider, one model per task.
func judgeOn(t *testing.T, reply fakellm.Reply) (func(*task.TaskDescription) (*task.ModelConfig, error), *fakellm.Server) {
	t.Helper()
	f, err := fakellm.New(fakellm.Config{Scripts: map[string][]fakellm.Reply{"judge": {reply}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return func(*task.TaskDescription) (*task.ModelConfig, error) {
		return &task.ModelConfig{Provider: task.ProviderOpenAI, Model: "judge", BaseURL: f.URL()}, nil
	}, f
}

const metAnswer = `{"criteria":[{"id":"polite","met":true,"score":1,"justification":"ok"},{"id":"accurate","met":true,"score":1,"justification":"ok"}]}`

// Validation grades the oracle's episode with every component the task configures:
// state checks (the golden path), transcript rules, both trace checks, the judge and
// the CEL check, each named with its score.
func TestValidateTaskGradesEveryComponent(t *testing.T) {
	s := startStack(t)
	judgeFor, f := judgeOn(t, fakellm.Reply{Content: metAnswer})
	v := local.ValidateTask(context.Background(), s, local.Verdict{Dir: "shop"}, fullShop(t, nil), "I'm C-101.", 0,
		local.OracleRun{JudgeFor: judgeFor}, false)
	if !v.Pass || v.StateScore == nil || *v.StateScore != 1 {
		t.Fatalf("verdict %+v", v)
	}
	var names []string
	for _, c := range v.Components {
		names = append(names, c.String())
	}
	// The oracle calls neither list_products nor get_customer and says nothing: the
	// transcript rules and the precedes constraint score it below 1, yet they graded.
	want := "state_checks=1 transcript_rules=0.5 trace_checks=0.5 llm_judge=1 custom_checks=1"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("components %s\nwant %s", got, want)
	}
	if !strings.HasPrefix(v.Why, "golden path verified; every configured component graded: state_checks=1, transcript_rules=0.5, trace_checks=0.5, llm_judge=1, custom_checks=1; below 1") {
		t.Fatalf("why %q", v.Why)
	}
	if n := len(f.RequestsFor("judge")); n != 1 {
		t.Fatalf("%d judge requests, want 1", n)
	}
	// --strict wants the whole grade.
	judgeFor, _ = judgeOn(t, fakellm.Reply{Content: metAnswer})
	v = local.ValidateTask(context.Background(), s, local.Verdict{Dir: "shop"}, fullShop(t, nil), "I'm C-101.", 0,
		local.OracleRun{JudgeFor: judgeFor}, true)
	if v.Pass || !strings.HasPrefix(v.Why, "--strict: the grade is below 1.0: ") {
		t.Fatalf("strict verdict %+v", v)
	}
}

// A component that cannot grade fails validation and is named.
func TestValidateTaskNamesTheComponentThatCannotGrade(t *testing.T) {
	s := startStack(t)
	for _, tc := range []struct {
		name   string
		answer string
		edit   func(g *task.GradingConfig)
		want   string
	}{
		{name: "judge answers outside the rubric", answer: `{"criteria":[{"id":"polite","met":true,"score":1}]}`,
			want: "a grading component cannot grade the oracle's transcript (llm_judge): Grading error: llm_judge: JUDGE_STATUS_ERRORED"},
		{name: "judge errored without a share", answer: "not json", edit: func(g *task.GradingConfig) { g.Weights["llm_judge"] = 0 },
			want: "configured components did not grade the oracle's transcript: llm_judge not scored (JUDGE_STATUS_ERRORED)"},
		{name: "CEL check errors at run time", answer: metAnswer, edit: func(g *task.GradingConfig) {
			g.CustomChecks.Checks[0].Expr = "db.orders[7].status == 'paid'"
		}, want: "a grading component cannot grade the oracle's transcript (custom_checks): "},
		{name: "CEL check errors, fail_on_error false", answer: metAnswer, edit: func(g *task.GradingConfig) {
			no := false
			g.CustomChecks.FailOnError = &no
			g.CustomChecks.Checks[0].Expr = "db.orders[7].status == 'paid'"
		}, want: "configured components did not grade the oracle's transcript: custom_checks not scored (skipped or errored; see the reasons)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			judgeFor, _ := judgeOn(t, fakellm.Reply{Content: tc.answer})
			v := local.ValidateTask(context.Background(), s, local.Verdict{Dir: "shop"}, fullShop(t, tc.edit), "I'm C-101.", 0,
				local.OracleRun{JudgeFor: judgeFor}, false)
			if v.Pass || !strings.HasPrefix(v.Why, tc.want) {
				b, _ := json.Marshal(v)
				t.Fatalf("verdict %s\nwant why prefix %q", b, tc.want)
			}
		})
	}
}

// Without a judge config a judged task is refused at registration, before the oracle runs.
func TestValidateTaskWithoutJudgeConfig(t *testing.T) {
	s := startStack(t)
	v := local.ValidateTask(context.Background(), s, local.Verdict{Dir: "shop"}, fullShop(t, nil), "I'm C-101.", 0, local.OracleRun{}, false)
	if v.Pass || !strings.Contains(v.Why, "the oracle's trial ended Invalid") || !strings.Contains(v.Why, "judge") {
		t.Fatalf("verdict %+v", v)
	}
}

// The shapes that would register and fail grading only after a trial spent its budget
// are refused before the oracle starts: no stack is needed (a nil one would be used
// otherwise), and the verdict names the key. The description is edited after decoding,
// as a Go caller may, so only ValidateTask's own validation can catch it.
func TestValidateTaskRefusesBeforeTheRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(g *task.GradingConfig)
		want string
	}{
		{"hash_enabled with no source", func(g *task.GradingConfig) { g.StateChecks.GoldenActions, g.StateChecks.ExpectedHash = nil, nil },
			"refused before any trial runs: grading.state_checks.hash_enabled: true, but neither golden_actions nor expected_hash is declared, " +
				"so the hash has no source to compare the trial's state against; declare golden_actions (the reference solution, replayed at grade time) " +
				"or expected_hash (the digest of the golden stable state), or set hash_enabled: false"},
		{"hash and jsonpaths with no hash_weight", func(g *task.GradingConfig) { g.StateChecks.HashWeight = nil },
			"refused before any trial runs: grading.state_checks.hash_weight: required when hash_enabled is true and jsonpaths is not empty: " +
				"the hash verdict and the JSONPath score are both real and nothing says how to fold them, so every trial would fail grading after " +
				"the agent's budget is spent; declare state_checks.hash_weight in [0, 1] (the hash verdict's share)"},
		{"a rubric whose criteria weights are all 0", func(g *task.GradingConfig) {
			for i := range g.LLMJudge.Rubric.Criteria {
				zero := 0.0
				g.LLMJudge.Rubric.Criteria[i].Weight = &zero
			}
		}, "refused before any trial runs: grading.llm_judge.rubric.criteria: every criterion's weight is 0, so the rubric's weighted mean " +
			"has no share to divide by and the judge would error on every trial after the agent's budget is spent; give at least one criterion a positive weight"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := local.ValidateTask(context.Background(), nil, local.Verdict{Dir: "shop"}, fullShop(t, tc.edit), "I'm C-101.", 0, local.OracleRun{}, false)
			if v.Pass || v.Why != tc.want || v.Outcome != "" {
				t.Fatalf("verdict %+v\nwant why %s", v, tc.want)
			}
		})
	}
}
