package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"tolokaforge.io/operator/examples/shop"
	"tolokaforge.io/operator/results/report"
	"tolokaforge.io/operator/test/fakellm"
)

func regradeTestEnv(t *testing.T, out *bytes.Buffer, now time.Time) regradeEnv {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return regradeEnv{Stdout: out, Stderr: out, SelfExecutable: exe, Now: func() time.Time { return now }}
}

// shopGrading writes the shop task's grading block, edited by edit.
func shopGrading(t *testing.T, edit func(g map[string]any)) string {
	t.Helper()
	var desc map[string]any
	if err := json.Unmarshal(shop.TaskJSON(), &desc); err != nil {
		t.Fatal(err)
	}
	g := desc["grading"].(map[string]any)
	edit(g)
	b, err := yaml.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "grading.yaml")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// stricter expects a stock the golden path does not leave (41 -> 40) and
// raises the threshold to 1.0, so the oracle's run now fails on JSONPath.
func stricter(g map[string]any) {
	g["pass_threshold"] = 1.0
	for _, c := range g["state_checks"].(map[string]any)["jsonpaths"].([]any) {
		if c := c.(map[string]any); c["path"] == "$.db.products[0].stock" {
			c["equals"] = 40
		}
	}
}

func readGrade(t *testing.T, path string) (score float64, pass bool, reasons string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Score   float64 `json:"score"`
		Pass    bool    `json:"binary_pass"`
		Reasons string  `json:"reasons"`
	}
	if err := yaml.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	return g.Score, g.Pass, g.Reasons
}

func TestRegradeReplaysWithoutAModel(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if err := runTrial(ctxT(t), []string{"run", "--task", shopTaskPath, "--out", dir}, trialTestEnv(t, &out)); err != nil {
		t.Fatalf("trial run: %v\n%s", err, out.String())
	}
	dir = onlyRun(t, dir)
	before := snapshot(t, dir)
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)

	// The task's own config: the same grade, on the components the
	// original evaluated (the oracle's run is graded on every component, as
	// pack validate grades it: the transcript rules score its silent replay).
	out.Reset()
	if err := runRegrade(ctxT(t), []string{"--artifacts", dir, "--task", shopTaskPath}, regradeTestEnv(t, &out, now)); err != nil {
		t.Fatalf("regrade: %v\n%s", err, out.String())
	}
	same := filepath.Join(dir, "regrade-20261202T060000Z")
	for _, want := range []string{
		"trials/shop_orders_02/0: unchanged (was score 0.833333, pass true; now score 0.833333, pass true) on state_checks, transcript_rules\n",
		"  components: state_checks 1 (passed), transcript_rules 0.444444 (failed)\n",
		"  reasons: State: hash match | JSONPath: all 7 checks passed | Transcript: 5 of 9 rules failed: ",
		"regrade (grading: the task's) written to " + same + "\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "diverged") {
		t.Errorf("the replay diverged:\n%s", out.String())
	}
	if s, p, r := readGrade(t, filepath.Join(same, "trials", "shop_orders_02", "0", "grade.yaml")); s != 0.833333 || !p || r != "State: hash match | JSONPath: all 7 checks passed | Transcript: 5 of 9 rules failed: required_actions[browse_catalog]: no assistant call to list_products; required_actions[verify_customer]: no assistant call to get_customer; communicate_info[0]: \"O-001\" was never communicated in an assistant message; communicate_info[1]: \"paid\" was never communicated in an assistant message; communicate_info[2]: \"141.01\" was never communicated in an assistant message" {
		t.Fatalf("regraded grade.yaml: %v %v %q", s, p, r)
	}
	// The replay is a whole trial record: the same tool calls, executed again.
	tb, err := os.ReadFile(filepath.Join(same, "trials", "shop_orders_02", "0", "trajectory.yaml"))
	if err != nil || !strings.Contains(string(tb), "tool_name: place_order") || !strings.Contains(string(tb), "tool_name: confirm_payment") {
		t.Fatalf("regraded trajectory: %v\n%s", err, tb)
	}

	// A stricter config: a different grade, naming the failing component.
	// Same second: a new directory beside the first, never over it.
	out.Reset()
	strict := shopGrading(t, stricter)
	if err := runRegrade(ctxT(t), []string{"--artifacts", dir, "--task", shopTaskPath, "--grading", strict}, regradeTestEnv(t, &out, now)); err != nil {
		t.Fatalf("regrade --grading: %v\n%s", err, out.String())
	}
	second := same + "-2"
	for _, want := range []string{
		"trials/shop_orders_02/0: CHANGED (was score 0.833333, pass true; now score 0.793333, pass false) on state_checks, transcript_rules\n",
		"  components: state_checks 0.942857 (failed), transcript_rules 0.444444 (failed)\n",
		"JSONPath: 6 of 7 checks passed; failed: Wireless Headphones stock reduced by 1: 42 → 41 ($['db']['products'][0]['stock'] is 41, expected equals 40)",
		"regrade (grading: " + strict + ") written to " + second + "\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	var summary regradeSummaryDoc
	b, err := os.ReadFile(filepath.Join(second, "regrade.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &summary); err != nil {
		t.Fatal(err)
	}
	if summary.Grading != strict || len(summary.Trials) != 1 || !summary.Trials[0].Changed || summary.Trials[0].Regrade.Pass ||
		summary.Trials[0].Original.Score != 0.833333 || summary.Trials[0].Outcome != "Failed" {
		t.Fatalf("regrade.yaml:\n%s", b)
	}
	if _, err := os.Stat(filepath.Join(same, "regrade.yaml")); err != nil {
		t.Fatalf("the first regrade was touched: %v", err)
	}

	// Every grading component, on request.
	out.Reset()
	if err := runRegrade(ctxT(t), []string{"--artifacts", dir, "--task", shopTaskPath, "--components", "all"}, regradeTestEnv(t, &out, now.Add(time.Second))); err != nil {
		t.Fatalf("regrade --components all: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "on state_checks, transcript_rules, trace_checks, llm_judge, custom_checks\n") ||
		!strings.Contains(out.String(), "Transcript: ") {
		t.Errorf("--components all:\n%s", out.String())
	}

	// The originals are as they were.
	after := snapshot(t, dir)
	for p, content := range before {
		if after[p] != content {
			t.Errorf("%s changed", p)
		}
	}
	// The report of the run counts the trial once, regrades left out.
	rep, err := report.FromArtifacts(dir)
	if err != nil || len(rep.Trials) != 1 {
		t.Fatalf("report over the run and its regrades: %v, %+v", err, rep)
	}
}

// regradeSummaryDoc is the part of regrade.yaml the test reads.
type regradeSummaryDoc struct {
	Grading string `json:"grading"`
	Trials  []struct {
		Changed  bool   `json:"changed"`
		Outcome  string `json:"outcome"`
		Original struct {
			Score float64 `json:"score"`
		} `json:"original"`
		Regrade struct {
			Pass bool `json:"binary_pass"`
		} `json:"regrade"`
	} `json:"trials"`
}

func TestRegradeRefusesBadInputAndWritesNothing(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if err := runTrial(ctxT(t), []string{"run", "--task", shopTaskPath, "--out", dir}, trialTestEnv(t, &out)); err != nil {
		t.Fatalf("trial run: %v\n%s", err, out.String())
	}
	dir = onlyRun(t, dir)
	before := snapshot(t, dir)
	badThreshold := shopGrading(t, func(g map[string]any) { g["pass_threshold"] = 2 })
	unknownKey := shopGrading(t, func(g map[string]any) { g["weightz"] = map[string]any{} })
	withJudge := shopGrading(t, func(g map[string]any) {
		g["llm_judge"] = map[string]any{"model_ref": "judge", "rubric": map[string]any{"criteria": []any{map[string]any{"id": "polite", "description": "is polite"}}}}
		g["weights"].(map[string]any)["llm_judge"] = 0.1
	})
	calc := filepath.Join(t.TempDir(), "calc.json")
	if err := os.WriteFile(calc, []byte(calcTaskJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--task", shopTaskPath}, "regrade: --artifacts DIR is required"},
		{[]string{"--artifacts", dir}, "regrade: --task PATH is required (the artifacts do not carry the task)"},
		{[]string{"--artifacts", "/nonexistent/run", "--task", shopTaskPath}, "regrade: --artifacts: stat /nonexistent/run: no such file or directory"},
		{[]string{"--artifacts", empty, "--task", shopTaskPath}, "regrade: artifacts " + empty + ": no trials/<task_id>/<index>/trajectory.yaml found"},
		{[]string{"--artifacts", dir, "--task", shopTaskPath, "--grading", badThreshold}, "regrade: grading file " + badThreshold + ": pass_threshold"},
		{[]string{"--artifacts", dir, "--task", shopTaskPath, "--grading", unknownKey}, `regrade: grading file ` + unknownKey + `: `},
		{[]string{"--artifacts", dir, "--task", shopTaskPath, "--grading", "/nonexistent/g.yaml"}, "regrade: grading file: open /nonexistent/g.yaml: no such file or directory"},
		{[]string{"--artifacts", dir, "--task", shopTaskPath, "--grading", withJudge}, `regrade: task "shop_orders_02": ` + withJudge +
			` grading config has an llm_judge, which needs a model, and regrade calls none`},
		{[]string{"--artifacts", dir, "--task", calc}, `regrade: no trial of task "calc" under ` + dir + ` (found tasks: shop_orders_02)`},
		{[]string{"--artifacts", dir, "--task", shopTaskPath, "--components", "state_checks,vibes"}, `regrade: components[1]: "vibes" is not one of state_checks, transcript_rules, trace_checks, llm_judge, custom_checks`},
		{[]string{"--artifacts", dir, "--task", shopTaskPath, "extra"}, `regrade: unexpected arguments ["extra"]`},
	}
	for _, tc := range cases {
		out.Reset()
		err := runRegrade(ctxT(t), tc.args, regradeTestEnv(t, &out, time.Now()))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("regrade %q = %v, want %q", tc.args, err, tc.want)
		}
	}
	if err := runRegrade(ctxT(t), []string{"--artifacts", dir, "--task", shopTaskPath, "--grading", unknownKey}, regradeTestEnv(t, &out, time.Now())); err == nil || !strings.Contains(err.Error(), "weightz") {
		t.Errorf("unknown key: %v, want it named", err)
	}
	after := snapshot(t, dir)
	if len(after) != len(before) {
		for p := range after {
			if _, ok := before[p]; !ok {
				t.Errorf("a refused regrade wrote %s", p)
			}
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), "regrade") {
			t.Errorf("a refused regrade left %s", e.Name())
		}
	}
}

// A conversation with an LLM agent and an LLM user (both the fake LLM):
// the replay says every recorded turn of both sides again, and the grade
// over every component comes back the same; no model is asked.
func TestRegradeLLMConversation(t *testing.T) {
	items := `{"customer_id":"C-101","items":[{"product_id":"P-001","quantity":1,"unit_price":89.99},{"product_id":"P-002","quantity":2,"unit_price":34.5}]}`
	f, err := fakellm.New(fakellm.Config{Scripts: map[string][]fakellm.Reply{
		"a": {
			{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "list_products", Arguments: `{}`}, {ID: "c2", Name: "get_customer", Arguments: `{"customer_id":"C-101"}`}}},
			{ToolCalls: []fakellm.ToolCall{{ID: "c3", Name: "place_order", Arguments: items}}},
			{ToolCalls: []fakellm.ToolCall{{ID: "c4", Name: "confirm_payment", Arguments: `{"order_id":"O-001"}`}}},
			{Content: "Order O-001 is paid; your balance is now 141.01."},
		},
		"u": {{Content: "I'm C-101: one headphone and two USB-C hubs, please."}, {Content: "Thanks! ###STOP###"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(""); err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dir := t.TempDir()
	var out bytes.Buffer
	if err := runTrial(ctxT(t), []string{"run", "--task", shopTaskPath, "--agent", "openai:a", "--user", "openai:u", "--base-url", f.URL(), "--out", dir}, trialTestEnv(t, &out)); err != nil {
		t.Fatalf("trial run: %v\n%s", err, out.String())
	}
	dir = onlyRun(t, dir)
	asked := len(f.Requests())
	out.Reset()
	if err := runRegrade(ctxT(t), []string{"--artifacts", dir, "--task", shopTaskPath}, regradeTestEnv(t, &out, time.Now())); err != nil {
		t.Fatalf("regrade: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"trials/shop_orders_02/0: unchanged (was score 1, pass true; now score 1, pass true) on state_checks, transcript_rules\n",
		"  components: state_checks 1 (passed), transcript_rules 1 (passed)\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "diverged") {
		t.Errorf("the replay diverged:\n%s", out.String())
	}
	if n := len(f.Requests()); n != asked {
		t.Fatalf("the regrade asked the model %d times", n-asked)
	}
	// Stricter: the failing component is named.
	out.Reset()
	if err := runRegrade(ctxT(t), []string{"--artifacts", dir, "--task", shopTaskPath, "--grading", shopGrading(t, stricter)}, regradeTestEnv(t, &out, time.Now())); err != nil {
		t.Fatalf("regrade: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"CHANGED (was score 1, pass true; now score 0.96, pass false) on state_checks, transcript_rules\n",
		"  components: state_checks 0.942857 (failed), transcript_rules 1 (passed)\n",
		"JSONPath: 6 of 7 checks passed",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// A replay that does not reproduce the recording says where; a trial the
// runner never graded is not replayed, and when no trial is left nothing
// is written.
func TestRegradeNamesDivergenceAndRefusesUngradedTrials(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if err := runTrial(ctxT(t), []string{"run", "--task", shopTaskPath, "--out", dir}, trialTestEnv(t, &out)); err != nil {
		t.Fatalf("trial run: %v\n%s", err, out.String())
	}
	dir = onlyRun(t, dir)
	traj := filepath.Join(dir, "trials", "shop_orders_02", "0", "trajectory.yaml")
	b, err := os.ReadFile(traj)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.ReplaceAll(string(b), `"status": "paid"`, `"status": "refunded"`)
	if edited == string(b) {
		t.Fatal("the recording has no paid order to edit")
	}
	if err := os.WriteFile(traj, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := runRegrade(ctxT(t), []string{"--artifacts", dir, "--task", shopTaskPath}, regradeTestEnv(t, &out, time.Now())); err != nil {
		t.Fatalf("regrade: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "  replay diverged: tool call 1 (confirm_payment): the output differs\n") {
		t.Errorf("divergence not named:\n%s", out.String())
	}

	ungraded := strings.Replace(edited, "termination_reason: agent_done", "termination_reason: timeout", 1)
	if err := os.WriteFile(traj, []byte(ungraded), 0o644); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	err = runRegrade(ctxT(t), []string{"--artifacts", dir, "--task", shopTaskPath}, regradeTestEnv(t, &out, time.Now().Add(time.Hour)))
	want := `regrade: no trial of task "shop_orders_02" under ` + dir + ` can be regraded: the trial ended with termination_reason "timeout", which the runner never grades`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("err = %v, want %q", err, want)
	}
	if after := snapshot(t, dir); len(after) != len(before) {
		t.Fatalf("a refused regrade wrote files: %d -> %d", len(before), len(after))
	}
}

// TestRegradePythonFlag: --python reaches the stack that regrades, so a
// pack's Python checks rerun with the interpreter the user names, as in
// trial run and pack validate.
func TestRegradePythonFlag(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--artifacts", dir, "--task", shopTaskPath, "--python", "/opt/py/bin/python3"}, "/opt/py/bin/python3"},
		{[]string{"--artifacts", dir, "--task", shopTaskPath}, ""},
	} {
		f, err := parseRegradeFlags(tc.args, io.Discard)
		if err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		opts, err := regradeOptions(f, regradeEnv{})
		if err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		if opts.Stack.Python != tc.want {
			t.Errorf("%q: Stack.Python = %q, want %q", tc.args, opts.Stack.Python, tc.want)
		}
	}
}
