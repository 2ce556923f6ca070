package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tolokaforge.io/operator/controllers/host/agents"
	"tolokaforge.io/operator/examples/shop"
	"tolokaforge.io/operator/test/fakellm"
)

const shopTaskPath = "examples/shop/task.json"

func ctxT(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	tb.Cleanup(cancel)
	return ctx
}

func trialTestEnv(tb testing.TB, out *bytes.Buffer) trialEnv {
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	return trialEnv{Stdout: out, Stderr: out, SelfExecutable: exe}
}

func TestRunOracleOnShopPasses(t *testing.T) {
	var out bytes.Buffer
	dir := t.TempDir()
	err := runTrial(ctxT(t), []string{"run", "--task", shopTaskPath, "--out", dir}, trialTestEnv(t, &out))
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		"trial shop_orders_02:0: agent oracle, user scripted, max turns 30\n",
		`turn 0 user  "Use store tools to browse the product catalog, place a customer order, and confirm payment.`,
		"turn 1 agent -> place_order [success] -> confirm_payment [success]\n",
		`turn 2 agent "###STOP###"` + "\n",
		"ended: agent_done after 2 turns (outcome Passed, reason Passed)\n",
		"grade: score 1, pass true\n",
		"reasons: State: hash match | JSONPath: all 7 checks passed\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	run := onlyRun(t, dir)
	if want := "artifacts: " + filepath.Join(run, "trials", "shop_orders_02", "0") + "\n"; !strings.Contains(got, want) {
		t.Errorf("output lacks %q:\n%s", want, got)
	}
	for _, f := range []string{"trajectory.yaml", "grade.yaml", "metrics.yaml"} {
		if _, err := os.Stat(filepath.Join(run, "trials", "shop_orders_02", "0", f)); err != nil {
			t.Error(err)
		}
	}
}

// manifest wraps the shop task in a Task manifest the oracle cannot pass: one
// JSONPath check expects a stock the golden path does not leave (41 -> 40), and
// the threshold is raised to 1.0, so the state score 0.6 + 0.4*6/7 fails.
func manifest(tb testing.TB) string {
	desc := strings.Replace(string(shop.TaskJSON()), `"pass_threshold": 0.75`, `"pass_threshold": 1.0`, 1)
	desc = strings.Replace(desc, `"equals": 41,`, `"equals": 40,`, 1)
	if strings.Count(desc, `"pass_threshold": 1.0`) != 1 || strings.Count(desc, `"equals": 40,`) != 1 {
		tb.Fatal("shop task no longer has the threshold and stock check this test edits")
	}
	y := "apiVersion: eval.tolokaforge.io/v1alpha1\nkind: Task\nmetadata:\n  name: shop-strict\nspec:\n" +
		"  initialUserMessage: I'm C-101, please buy a headset.\n  maxTurns: 4\n  description: " + desc + "\n"
	p := filepath.Join(tb.TempDir(), "task.yaml")
	if err := os.WriteFile(p, []byte(y), 0o644); err != nil {
		tb.Fatal(err)
	}
	return p
}

func TestRunFailingGradeExitsOne(t *testing.T) {
	var out bytes.Buffer
	err := runTrial(ctxT(t), []string{"run", "--task", manifest(t), "--out", t.TempDir()}, trialTestEnv(t, &out))
	var ee *exitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || ee.Error() != "trial failed: score 0.942857" {
		t.Fatalf("err = %v\n%s", err, out.String())
	}
	for _, want := range []string{"max turns 4\n", `turn 0 user  "I'm C-101, please buy a headset."`, "grade: score 0.942857, pass false\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

const calcTaskJSON = `{"task_id": "calc", "name": "calc", "category": "test", "description": "What is 2+3?",
	"adapter_type": "native", "system_prompt": "You compute.",
	"agent_tools": [{"name": "calculator", "description": "evaluate"}], "user_tools": []}`

func TestRunWithOpenAICompatibleModels(t *testing.T) {
	const key = "sk-trialrun-key-123"
	f, err := fakellm.New(fakellm.Config{APIKey: key, Scripts: map[string][]fakellm.Reply{
		"a": {{ToolCalls: []fakellm.ToolCall{{ID: "c", Name: "calculator", Arguments: `{"expression":"2+3"}`}}}, {Content: "It is 5."}},
		"u": {{Content: "thanks ###STOP###", Usage: fakellm.Usage{PromptTokens: 7, CompletionTokens: 2}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(""); err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := filepath.Join(t.TempDir(), "calc.json")
	if err := os.WriteFile(p, []byte(calcTaskJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	e := trialTestEnv(t, &out)
	e.Getenv = func(k string) string {
		if k == "FAKE_KEY" {
			return key
		}
		return ""
	}
	e.AgentOptions = agents.Options{Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }}
	err = runTrial(ctxT(t), []string{"run", "--task", p, "--agent", "openai:a", "--user", "openai:u",
		"--base-url", f.URL(), "--api-key-env", "FAKE_KEY", "--message", "2+3?", "--seed", "3", "--temperature", "0", "--out", t.TempDir()}, e)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"turn 1 agent -> calculator [success]\n", `turn 2 agent "It is 5."`, "ended: user_stop after 2 turns",
		"user usage: 1 calls (0 retries), 7 prompt + 2 completion tokens", "grade: score 1, pass true\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	r := f.RequestsFor("a")[0]
	if r.Authorization != "Bearer "+key || *r.Seed != 3 || *r.Temperature != 0 || r.Messages[1].Content != "2+3?" {
		t.Fatalf("agent request: auth %q seed %v temp %v messages %+v", r.Authorization, r.Seed, r.Temperature, r.Messages)
	}
	if strings.Contains(out.String(), key) {
		t.Fatalf("the key was printed:\n%s", out.String())
	}
}

func TestRunLLMUserOpensInItsOwnWords(t *testing.T) {
	f, err := fakellm.New(fakellm.Config{Scripts: map[string][]fakellm.Reply{
		"u": {{Content: "Hi, what is 2+3?"}, {Content: "###STOP###"}},
		"a": {{Content: "5"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(""); err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := filepath.Join(t.TempDir(), "calc.json")
	if err := os.WriteFile(p, []byte(calcTaskJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = runTrial(ctxT(t), []string{"run", "--task", p, "--agent", "openai:a", "--user", "openai:u", "--base-url", f.URL(), "--out", t.TempDir()}, trialTestEnv(t, &out))
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	reqs := f.Requests()
	if len(reqs) != 3 || reqs[0].Model != "u" || reqs[1].Model != "a" || reqs[1].Messages[1].Content != "Hi, what is 2+3?" {
		t.Fatalf("requests: %+v", reqs)
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{nil, `trial: want subcommand "run", got []`},
		{[]string{"walk"}, `trial: want subcommand "run", got ["walk"]`},
		{[]string{"run"}, "trial run: --task is required"},
		{[]string{"run", "--task", "x", "extra"}, `trial run: unexpected arguments ["extra"]`},
		{[]string{"run", "--task", "x", "--agent", "claude"}, `trial run: --agent "claude": want oracle or openai:MODEL`},
		{[]string{"run", "--task", "x", "--agent", "openai:"}, `trial run: --agent "openai:": want oracle or openai:MODEL`},
		{[]string{"run", "--task", "x", "--user", "oracle"}, `trial run: --user "oracle": want scripted or openai:MODEL`},
		{[]string{"run", "--task", "x", "--max-turns", "-2"}, "trial run: --max-turns must be >= 0, got -2"},
		{[]string{"run", "--task", "x", "--trial-index", "-1"}, "trial run: --trial-index must be >= 0, got -1"},
		{[]string{"run", "--task", "x", "--timeout", "0s"}, "trial run: --timeout must be positive, got 0s"},
		{[]string{"run", "--task", "x", "--temperature", "3"}, "trial run: --temperature must be in [0, 2], got 3"},
		{[]string{"run", "--task", "/nonexistent/task.json"}, "trial run: read task /nonexistent/task.json: open /nonexistent/task.json: no such file or directory"},
		{[]string{"run", "--task", shopTaskPath, "--agent", "openai:m", "--api-key-env", "UNSET_FOR_TEST"},
			`trial run: agent model "m": environment variable UNSET_FOR_TEST (api_key_env) is unset or empty`},
	}
	for _, tc := range cases {
		var out bytes.Buffer
		e := trialTestEnv(t, &out)
		e.Getenv = func(string) string { return "" }
		err := runTrial(ctxT(t), tc.args, e)
		if err == nil || err.Error() != tc.want {
			t.Errorf("Run(%q) = %v, want %q", tc.args, err, tc.want)
		}
	}
}
