package cli

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
		// The oracle's replay is graded by every component the task configures, as pack
		// validate grades it: the transcript rules score the replay that said nothing.
		"grade: score 0.833333, pass true\n",
		"components: state_checks 1, jsonpath 1, transcript_rules 0.444444\n",
		"reasons: State: hash match | JSONPath: all 7 checks passed | Transcript: 5 of 9 rules failed: required_actions[browse_catalog]: no assistant call to list_products;",
		"oracle: golden path verified; every configured component graded: state_checks=1, transcript_rules=0.4444; below 1 on the oracle's transcript (only --strict requires 1): Transcript: 5 of 9 rules failed",
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
	if !errors.As(err, &ee) || ee.ExitCode() != 1 ||
		!strings.HasPrefix(ee.Error(), "oracle: the golden path does not reach the expected state: State: hash match | JSONPath: 6 of 7 checks passed; failed: Wireless Headphones stock reduced by 1") {
		t.Fatalf("err = %v\n%s", err, out.String())
	}
	for _, want := range []string{"max turns 4\n", `turn 0 user  "I'm C-101, please buy a headset."`, "grade: score 0.793333, pass false\n",
		"components: state_checks 0.942857, jsonpath 0.857143, transcript_rules 0.444444\n",
		"oracle: FAIL: the golden path does not reach the expected state"} {
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
		{[]string{"run", "--task", "x", "--mcp-command", "server.py"}, `trial run: --mcp-command "server.py": want SCRIPT=ARGV, e.g. mcp_server.py="tolokaforge mcp shop"`},
		{[]string{"run", "--task", "/nonexistent/task.json"}, "trial run: read task /nonexistent/task.json: open /nonexistent/task.json: no such file or directory"},
		{[]string{"run", "--task", shopTaskPath, "--agent", "openai:m", "--user", "scripted", "--api-key-env", "UNSET_FOR_TEST"},
			`trial run: agent model "m": environment variable UNSET_FOR_TEST (api_key_env) is unset or empty`},
		// The shop task's user is an LLM: a model agent without a user model is refused
		// unless the scripted user is asked for by name.
		{[]string{"run", "--task", shopTaskPath, "--agent", "openai:m"},
			"trial run: task shop_orders_02 simulates its user with an LLM (user_simulator.mode llm), but no user model is given: " +
				"pass --user openai:MODEL (or user_simulator_model in --model-config) to simulate the user, or --user scripted to run it with a scripted user on purpose"},
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

const shopPackPath = "examples/shop/shop_orders_02"

// A pack directory is read as pack import reads it and runs as one trial,
// with the pack's opening message and max_turns.
func TestRunPackDirectoryPasses(t *testing.T) {
	var out bytes.Buffer
	dir := t.TempDir()
	err := runTrial(ctxT(t), []string{"run", "--task", shopPackPath, "--agent", "oracle", "--out", dir}, trialTestEnv(t, &out))
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		"trial shop_orders_02:0: agent oracle, user scripted, max turns 14\n",
		`turn 0 user  "Hi! I'm customer C-101 (Alex Torres).`,
		"turn 1 agent -> place_order [success] -> confirm_payment [success]\n",
		"grade: score 0.833333, pass true\n", // the oracle is graded by every component: transcript rules too
		"reasons: State: hash match | JSONPath: all 7 checks passed | Transcript: 5 of 9 rules failed",
		"oracle: golden path verified",
		"artifacts: " + filepath.Join(onlyRun(t, dir), "trials", "shop_orders_02", "0") + "\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "summary of run") {
		t.Errorf("a single pack printed a project summary:\n%s", got)
	}
}

// copyPack copies the shop pack to dst, applying edits (old -> new, each
// required to match once) to its task.yaml and grading.yaml.
func copyPack(t *testing.T, dst string, edits map[string][2]string) {
	t.Helper()
	err := filepath.WalkDir(shopPackPath, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(shopPackPath, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		s := string(b)
		if e, ok := edits[rel]; ok {
			if strings.Count(s, e[0]) != 1 {
				t.Fatalf("%s no longer has %q once", p, e[0])
			}
			s = strings.Replace(s, e[0], e[1], 1)
		}
		return os.WriteFile(filepath.Join(dst, rel), []byte(s), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A project directory (the upstream layout, tasks/<id>/) runs every pack,
// one after another, and ends with a line per task and a total; a task that
// did not pass makes the exit code 1. Packs are all read before anything
// runs: a grading key one drops refuses the run unless --allow-lossy. A
// resume skips the tasks with a result and reruns the others.
func TestRunProjectDirectory(t *testing.T) {
	project := t.TempDir()
	passing, failing := filepath.Join(project, "tasks", "a"), filepath.Join(project, "tasks", "b")
	copyPack(t, passing, nil)
	// b cannot pass: a stock check the golden path does not meet (state
	// score 0.6 + 0.4*6/7) under a threshold of 1; and it carries a
	// grading key the Go runner has no place for.
	copyPack(t, failing, map[string][2]string{
		"task.yaml":    {`task_id: "shop_orders_02"`, `task_id: "shop_strict"`},
		"grading.yaml": {"  pass_threshold: 0.75\n", "  pass_threshold: 1.0\n"},
	})
	g := filepath.Join(failing, "grading.yaml")
	b, _ := os.ReadFile(g)
	b = []byte(strings.Replace(string(b), "equals: 41\n", "equals: 40\n", 1))
	b = []byte(strings.Replace(string(b), "transcript_rules:\n", "transcript_rules:\n  tool_expectations: {disallowed_tools: [refund]}\n", 1))
	if err := os.WriteFile(g, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "results")

	var log bytes.Buffer
	err := runTrial(ctxT(t), []string{"run", "--task", project, "--out", out}, trialTestEnv(t, &log))
	want := "trial run: 1 grading key(s) of " + project + " would be dropped (listed above); nothing run; --allow-lossy runs without them"
	if err == nil || err.Error() != want {
		t.Fatalf("lossy project: err = %v, want %q\n%s", err, want, log.String())
	}
	if !strings.Contains(log.String(), "b/grading.yaml: transcript_rules.tool_expectations.disallowed_tools: not mapped") {
		t.Errorf("the dropped key is not listed:\n%s", log.String())
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused run wrote %s: %v", out, err)
	}

	log.Reset()
	err = runTrial(ctxT(t), []string{"run", "--task", project, "--allow-lossy", "--out", out}, trialTestEnv(t, &log))
	run := onlyRun(t, out)
	id := filepath.Base(run)
	var ee *exitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || ee.Error() != "1 of 2 trials did not pass (run "+id+")" {
		t.Fatalf("err = %v\n%s", err, log.String())
	}
	got := log.String()
	summary := "\nsummary of run " + id + ":\n" +
		"PASS shop_orders_02: score 0.833333, outcome Passed (" + passing + ")\n" +
		"FAIL shop_strict: score 0.793333, outcome Failed (" + failing + ")\n" +
		"total: 1 of 2 passed\n"
	if !strings.HasSuffix(got, summary) {
		t.Errorf("output does not end with the summary %q:\n%s", summary, got)
	}
	for _, want := range []string{
		"== task 1 of 2: shop_orders_02 (" + passing + ")\ntrial shop_orders_02:0: agent oracle",
		"== task 2 of 2: shop_strict (" + failing + ")\ntrial shop_strict:0: agent oracle",
		"grade: score 0.793333, pass false\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Count(got, "new run ") != 1 {
		t.Errorf("want one run for the project:\n%s", got)
	}
	for _, task := range []string{"shop_orders_02", "shop_strict"} {
		if _, err := os.Stat(filepath.Join(run, "trials", task, "0", "grade.yaml")); err != nil {
			t.Error(err)
		}
	}

	// Resume: a keeps its result; b, whose trajectory is gone (as after a
	// crash), runs again as attempt 2.
	if err := os.Remove(filepath.Join(run, "trials", "shop_strict", "0", "trajectory.yaml")); err != nil {
		t.Fatal(err)
	}
	log.Reset()
	err = runTrial(ctxT(t), []string{"run", "--task", project, "--allow-lossy", "--out", out, "--resume", id}, trialTestEnv(t, &log))
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("resume: err = %v\n%s", err, log.String())
	}
	got = log.String()
	for _, want := range []string{
		"resuming run " + id,
		"run " + id + ": trial shop_orders_02:0 already has a result (outcome Passed), skipped\n",
		"PASS shop_orders_02: score 0.833333, outcome Passed, recorded earlier (" + passing + ")\n",
		"FAIL shop_strict: score 0.793333, outcome Failed (" + failing + ")\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("resume output lacks %q:\n%s", want, got)
		}
	}
	if strings.Count(got, "turn 1 agent") != 1 {
		t.Errorf("resume ran %d trials, want 1:\n%s", strings.Count(got, "turn 1 agent"), got)
	}
	if _, err := os.Stat(filepath.Join(run, "trials", "shop_strict", "0", "attempts", "2")); err != nil {
		t.Errorf("the rerun is not attempt 2: %v", err)
	}
}

// What --task cannot run is refused before anything is written, naming the
// path and what was wrong.
func TestRunRefusesBadTaskPaths(t *testing.T) {
	root := t.TempDir()
	mk := func(files map[string]string) string {
		dir, err := os.MkdirTemp(root, "case")
		if err != nil {
			t.Fatal(err)
		}
		for f, content := range files {
			p := filepath.Join(dir, filepath.FromSlash(f))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if strings.HasSuffix(f, "/") {
				continue
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	empty := mk(nil)
	noTask := mk(map[string]string{"README.md": "tasks", "tasks/a/grading.yaml": "state_checks: {}", "tasks/b/": ""})
	text := filepath.Join(mk(map[string]string{"notes.txt": "this is not a task\n"}), "notes.txt")
	dupes := mk(nil)
	copyPack(t, filepath.Join(dupes, "one"), nil)
	copyPack(t, filepath.Join(dupes, "two"), nil)
	broken := mk(nil)
	copyPack(t, filepath.Join(broken, "good"), nil)
	copyPack(t, filepath.Join(broken, "bad"), map[string][2]string{"task.yaml": {`category: "tool_use"`, ""}})
	copyPack(t, filepath.Join(broken, "worse"), map[string][2]string{"task.yaml": {"max_turns: 14", "max_turns: many"}})

	cases := []struct{ name, path, want string }{
		{"empty directory", empty, "trial run: task directory " + empty + " is empty: want a task pack (a directory with task.yaml) or a project of packs (tasks/<id>/task.yaml)"},
		{"directory with no task", noTask, "trial run: task directory " + noTask + " holds no task: no task.yaml (or Harbor's task.toml with instruction.md) in it or in any directory below it " +
			"(a task pack holds task.yaml; a project holds tasks/<id>/task.yaml; a Harbor task holds task.toml and instruction.md)"},
		{"file neither JSON nor a pack", text, "trial run: task " + text + ": not a task (want a TaskDescription JSON, a Task manifest, or a task pack directory (task.yaml)): " +
			"the document is a string, not an object"},
		{"a pack's task.yaml", filepath.Join(shopPackPath, "task.yaml"), "trial run: task " + filepath.Join(shopPackPath, "task.yaml") +
			": TaskDescription: grading: expected object, got string (if it is a task pack's task.yaml, pass the pack's directory: --task " + shopPackPath + ")"},
		{"two packs, one task_id", dupes, "trial run: 1 of 2 task packs under " + dupes + " refused, nothing run:\n  task pack " + filepath.Join(dupes, "two") + `: task_id "shop_orders_02" is also ` +
			filepath.Join(dupes, "one") + "'s (their trials would share one directory of the run)"},
		{"project with broken packs", broken, "trial run: 2 of 3 task packs under " + broken + " refused, nothing run:\n" +
			"  task pack " + filepath.Join(broken, "bad") + ": bad/task.yaml: category: required\n" +
			"  task pack " + filepath.Join(broken, "worse") + `: worse/task.yaml: max_turns: expected an integer, got "many"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "results")
			var log bytes.Buffer
			err := runTrial(ctxT(t), []string{"run", "--task", tc.path, "--out", out}, trialTestEnv(t, &log))
			if err == nil || err.Error() != tc.want {
				t.Fatalf("err = %v\nwant  %s", err, tc.want)
			}
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a refused run wrote %s: %v", out, err)
			}
		})
	}
}

// `trial run --agent oracle` grades the replay with every component the task
// configures, as pack validate does: trace checks and CEL custom checks score it, and
// one that cannot grade it fails the run naming the component.
func TestRunOracleGradesEveryComponent(t *testing.T) {
	withChecks := func(custom string) string {
		desc := strings.Replace(string(shop.TaskJSON()), `"transcript_rules": 0.3`,
			`"transcript_rules": 0.3, "trace_checks": 0.5, "custom_checks": 0.5`, 1)
		desc = strings.Replace(desc, `"pass_threshold": 0.75,`, `"pass_threshold": 0.75,
    "trace_checks": {"constraints": [{"id": "pay-after-place", "kind": "precedes",
      "first": {"event": "tool_call", "tool": "place_order"}, "then": {"event": "tool_call", "tool": "confirm_payment"}}]},
    "custom_checks": {"enabled": true, "checks": [`+custom+`]},`, 1)
		if !strings.Contains(desc, `"pay-after-place"`) || !strings.Contains(desc, `"trace_checks": 0.5`) {
			t.Fatal("shop task no longer has the weights and threshold this test edits")
		}
		p := filepath.Join(t.TempDir(), "task.json")
		if err := os.WriteFile(p, []byte(desc), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		name, custom string
		want         []string
		err          string
	}{
		{name: "every component grades the replay",
			custom: `{"name": "one-order", "expr": "size(db.orders) == 1"}`,
			want: []string{"components: state_checks 1, jsonpath 1, transcript_rules 0.444444, trace_checks 1, custom_checks 1\n",
				"oracle: golden path verified; every configured component graded: state_checks=1, transcript_rules=0.4444, trace_checks=1, custom_checks=1"}},
		{name: "a custom check that errors on the replay fails the run",
			custom: `{"name": "no-such-table", "expr": "size(db.refunds) == 0"}`,
			err:    "oracle: a grading component cannot grade the oracle's transcript (custom_checks)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			err := runTrial(ctxT(t), []string{"run", "--task", withChecks(c.custom), "--out", t.TempDir()}, trialTestEnv(t, &out))
			if c.err != "" {
				var ee *exitError
				if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.HasPrefix(ee.Error(), c.err) {
					t.Fatalf("err = %v, want exit 1 with %q\n%s", err, c.err, out.String())
				}
				return
			}
			if err != nil {
				t.Fatalf("Run: %v\n%s", err, out.String())
			}
			for _, w := range c.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}
