package report

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"

	"tolokaforge.io/operator/api/artifacts"
	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
)

// attempt writes one attempt with the host's own artifacts writer.
type attempt struct {
	root, task         string
	index, n           int
	outcome, reason    string
	termination        string
	pass               bool
	score              float64
	diff               string
	costUSD            float64
	prompt, completion int64
	turns              int
	// judge is the llm_judge score (nil: not evaluated); judgeErrored an
	// errored judge.
	judge        *float64
	judgeErrored bool
	// hostile fills the conversation with markup a page must show as text.
	hostile bool
}

// scriptPayload is what a hostile tool result carries.
const scriptPayload = `<script>window.__pwned=1</script>`

func writeAttempt(t *testing.T, a attempt) {
	t.Helper()
	start := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	at := &artifacts.Attempt{
		TrialID: a.task + ":" + string(rune('0'+a.index)), TaskID: a.task, TrialIndex: a.index, AttemptNumber: a.n,
		Outcome: a.outcome, Reason: a.reason, TerminationReason: a.termination, Turns: a.turns,
		StartTime: start, EndTime: start.Add(time.Duration(a.n) * time.Second),
		AgentUsage: artifacts.Usage{Calls: 1, PromptTokens: a.prompt, CompletionTokens: a.completion, CostUSD: a.costUSD},
	}
	if a.outcome == "Graded" {
		at.Grade = &runnerpb.Grade{Score: a.score, BinaryPass: a.pass,
			Reasons:       "State: hash mismatch | JSONPath: 6 of 7 checks passed; failed: stock (want 40, got 41) | Transcript: 1 of 2 rules failed: create_order",
			StateDiffJson: a.diff,
			Components:    &runnerpb.GradeComponents{StateChecks: 0, TranscriptRules: 0.5, LlmJudge: -1, CustomChecks: -1},
		}
		at.GradedBy = "runner"
		if a.pass {
			at.Grade.Reasons = "State: hash match | JSONPath: all 7 checks passed | Transcript: all 2 rules passed"
			at.Grade.Components.StateChecks, at.Grade.Components.TranscriptRules = 1, 1
		}
		if a.judge != nil {
			at.Grade.Components.LlmJudge = *a.judge
			at.Grade.JudgeStatus = runnerpb.JudgeStatus_JUDGE_STATUS_COMPLETED
			at.Grade.CriterionResults = []*runnerpb.CriterionResult{{Id: "polite", Met: *a.judge == 1, Score: *a.judge, Justification: "said <b>hello</b>"}}
		}
		if a.judgeErrored {
			at.Grade.JudgeStatus = runnerpb.JudgeStatus_JUDGE_STATUS_ERRORED
			at.Grade.Reasons += " | Judge: errored, no score (llm_judge carries no weight share): timeout"
		}
	}
	if a.hostile {
		at.Messages = []artifacts.Message{
			{Message: task.Message{Role: "system", Content: "You sell things."}, Timestamp: start},
			{Message: task.Message{Role: "user", Content: "Buy me a <img src=x onerror=alert(1)> headset"}, Timestamp: start},
			{Message: task.Message{Role: "assistant", ToolCalls: []task.ToolCall{{ID: "call_1", Type: "function",
				Function: task.FunctionCall{Name: "place_order", Arguments: `{"note":"` + `</pre><script>window.__pwned=2</script>` + `","qty":2}`}}}}, Timestamp: start},
			{Message: task.Message{Role: "tool", ToolCallID: "call_1", Content: scriptPayload}, Timestamp: start},
			{Message: task.Message{Role: "assistant", Content: "Done ###STOP###"}, Timestamp: start},
		}
		at.ToolCalls = []task.RecordedToolCall{{CallID: "call_1", ToolName: "place_order", Executor: "agent", Status: task.ToolCallSuccess,
			Arguments: json.RawMessage(`{"note":"</pre><script>window.__pwned=2</script>","qty":2}`), Output: scriptPayload, LatencySeconds: 0.25, Timestamp: start}}
		at.Grade.TraceChecks = []*runnerpb.TraceConstraintResult{{Id: "pay_after_order", Kind: "precedes", Passed: false, Weight: 1, Message: "confirm_payment before <place_order>", Severity: "scored"}}
		at.Grade.CustomChecks = []*runnerpb.CustomCheckResult{{CheckName: "balance_ok", Status: "failed", Score: 0, Message: "balance 300 != 141.01"}}
		at.Timings = artifacts.Timings{AgentLLM: 1500 * time.Millisecond, Tools: 250 * time.Millisecond, Grading: 100 * time.Millisecond}
	}
	if _, err := artifacts.Write(a.root, at); err != nil {
		t.Fatal(err)
	}
}

// sample is two agents x two tasks, k=2:
//
//	oracle t1: pass, pass          oracle t2: pass, infra then pass (one trial)
//	llm    t1: pass, fail (diff)   llm    t2: infra (excluded), fail (max_turns)
func sample(t *testing.T) string {
	dir := t.TempDir()
	o, l := filepath.Join(dir, "oracle"), filepath.Join(dir, "llm")
	for _, a := range []attempt{
		{root: o, task: "t1", index: 0, n: 1, outcome: "Graded", pass: true, score: 1, turns: 2},
		{root: o, task: "t1", index: 1, n: 1, outcome: "Graded", pass: true, score: 1, turns: 2},
		{root: o, task: "t2", index: 0, n: 1, outcome: "Graded", pass: true, score: 1, turns: 2},
		{root: o, task: "t2", index: 1, n: 1, outcome: "InfraFailed", reason: "PodLost"},
		{root: o, task: "t2", index: 1, n: 2, outcome: "Graded", pass: true, score: 1, turns: 2},
		{root: l, task: "t1", index: 0, n: 1, outcome: "Graded", pass: true, score: 0.875, costUSD: 0.5, prompt: 400, completion: 100, turns: 3, judge: ptr(1.0)},
		{root: l, task: "t1", index: 1, n: 1, outcome: "Graded", pass: false, score: 0.25, diff: sampleDiff, costUSD: 0.5, prompt: 400, completion: 100, turns: 3, judge: ptr(0.5), hostile: true},
		{root: l, task: "t2", index: 0, n: 1, outcome: "InfraFailed", reason: "PodLost", costUSD: 0.25, prompt: 200},
		{root: l, task: "t2", index: 1, n: 1, outcome: "Graded", termination: "max_turns", pass: false, score: 0, costUSD: 0.5, prompt: 400, completion: 100, turns: 14, judgeErrored: true},
	} {
		writeAttempt(t, a)
	}
	return dir
}

func ptr[T any](v T) *T { return &v }

// sampleDiff is a state_diff_json as runner/grading writes it.
const sampleDiff = `{"added":0,"diff_lines":["orders[O-001].status: expected \"paid\", actual \"pending\""],"modified":1,"removed":0,` +
	`"summary":"State mismatch: orders: 0 missing, 0 extra, 1 different","tables":{"orders":{"modified":[{"key":"O-001","fields":[{"field":"status","expected":"paid","actual":"pending"}]}]}}}`

func TestFromArtifacts(t *testing.T) {
	rep, err := FromArtifacts(sample(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Trials) != 8 || rep.K != 2 || strings.Join(rep.Agents, ",") != "llm,oracle" || strings.Join(rep.Tasks, ",") != "t1,t2" {
		t.Fatalf("%d trials k=%d agents %v tasks %v", len(rep.Trials), rep.K, rep.Agents, rep.Tasks)
	}
	byName := map[string]Trial{}
	for _, tr := range rep.Trials {
		byName[tr.Name] = tr
	}
	retried := byName["oracle/trials/t2/1"]
	if retried.Phase != string(evalv1.PhasePassed) || retried.Reason != "" {
		t.Fatalf("the retried trial: %+v", retried)
	}
	if f := byName["llm/trials/t1/1"]; f.Phase != string(evalv1.PhaseFailed) || f.Reason != "State mismatch: orders: 0 missing, 0 extra, 1 different" || f.CostUSD != 0.5 || f.Tokens != 500 {
		t.Fatalf("failed trial %+v", f)
	}
	if f := byName["llm/trials/t2/0"]; f.Phase != string(evalv1.PhaseInfraFailed) || f.Reason != "InfraFailed: PodLost" || f.Score != nil {
		t.Fatalf("infra trial %+v", f)
	}
	if f := byName["llm/trials/t2/1"]; f.Reason != "termination: max_turns" {
		t.Fatalf("max turns trial %+v", f)
	}
}

func TestTable(t *testing.T) {
	dir := sample(t)
	rep, err := FromArtifacts(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	want := "artifacts " + dir + ` (k=2; n counts measured trials: infra failures (INFRA) and invalid tasks are left out)

TASK  AGENT   TRIALS  N  INFRA  PASSES  PASS@1  PASS^2  COST     TOP FAILURE REASONS
t1    llm     2       2  0      1       0.500   0.000   $1.0000  State mismatch: orders: 0 missing, 0 extra, 1 different ×1
t1    oracle  2       2  0      2       1.000   1.000   -        -
t2    llm     2       1  1      0       0.000   -       $0.7500  InfraFailed: PodLost ×1; termination: max_turns ×1
t2    oracle  2       2  0      2       1.000   1.000   -        -

AGENT   N  INFRA  PASSES  PASS@1  PASS@2  PASS^2  MEAN SCORE  TOKENS  COST
llm     3  1      1       0.250   1.000   0.000   0.375       1700    $1.7500
oracle  4  0      4       1.000   1.000   1.000   1.000       0       -
(all)   7  1      5       0.625   1.000   0.667   0.732       1700    $1.7500

AGENT   COMPONENT         EVALUATED  PASSED  ERRORED  PASS RATE  MEAN SCORE
llm     state_checks      3          1       0        0.333      0.333
llm     jsonpath          3          1       0        0.333      0.905
llm     transcript_rules  3          1       0        0.333      0.667
llm     llm_judge         3          1       1        0.333      0.750
oracle  state_checks      4          4       0        1.000      1.000
oracle  jsonpath          4          4       0        1.000      1.000
oracle  transcript_rules  4          4       0        1.000      1.000
(all)   state_checks      7          5       0        0.714      0.714
(all)   jsonpath          7          5       0        0.714      0.959
(all)   transcript_rules  7          5       0        0.714      0.857
(all)   llm_judge         3          1       1        0.333      0.750
`
	if b.String() != want {
		t.Fatalf("table\n%s\nwant\n%s", b.String(), want)
	}
}

func TestAggregateJSON(t *testing.T) {
	rep, err := FromArtifacts(sample(t))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := rep.WriteAggregate(&b); err != nil {
		t.Fatal(err)
	}
	var agg map[string]any
	if err := json.Unmarshal(b.Bytes(), &agg); err != nil {
		t.Fatal(err)
	}
	num := func(m map[string]any, k string) float64 {
		t.Helper()
		v, ok := m[k].(float64)
		if !ok {
			t.Fatalf("%s = %v (%T)", k, m[k], m[k])
		}
		return v
	}
	for k, want := range map[string]float64{
		"total_tasks": 2, "total_trials": 8, "measured_trials": 7, "scored_trials": 7, "successful_trials": 5,
		"success_rate_micro": 5.0 / 7, "pass@1_macro": 0.625, "pass_hat@2_macro": 2.0 / 3, "pass@2_macro": 1,
		"total_cost_usd": 1.75, "total_tokens": 1700, "total_prompt_tokens": 1400, "total_completion_tokens": 300,
		"k": 2, "costed_trials": 4, "unpriced_trials": 4,
	} {
		if got := num(agg, k); math.Abs(got-want) > 1e-12 {
			t.Errorf("%s = %v, want %v", k, got, want)
		}
	}
	for _, k := range []string{"pass@5_macro", "pass_hat@5_macro", "pass@10_macro"} {
		if agg[k] != nil {
			t.Errorf("%s = %v, want null (no task has that many trials)", k, agg[k])
		}
	}
	if ab := agg["infrastructure_aborts"].(map[string]any); len(ab) != 1 || ab["InfraFailed: PodLost"] != 1.0 {
		t.Errorf("infrastructure_aborts %v", ab)
	}
	llm := agg["by_agent"].(map[string]any)["llm"].(map[string]any)
	if num(llm, "measured_trials") != 3 || num(llm, "pass@1_macro") != 0.25 || num(llm, "pass_hat@2_macro") != 0 {
		t.Errorf("by_agent.llm %v", llm)
	}
	cr := agg["component_pass_rates"].(map[string]any)
	if j := cr["llm_judge"].(map[string]any); j["evaluated"] != 3.0 || j["passed"] != 1.0 || j["errored"] != 1.0 || j["mean_score"] != 0.75 {
		t.Errorf("component_pass_rates.llm_judge %v", j)
	}
	if s := cr["state_checks"].(map[string]any); s["evaluated"] != 7.0 || math.Abs(s["pass_rate"].(float64)-5.0/7) > 1e-12 {
		t.Errorf("component_pass_rates.state_checks %v", s)
	}
	if len(cr) != 4 {
		t.Errorf("component_pass_rates has %d components, want 4: %v", len(cr), cr)
	}
	if r := agg["outcomes_by_reason"].(map[string]any)["max_turns"].(map[string]any); r["class"] != "measured" || r["count"] != 1.0 {
		t.Errorf("outcomes_by_reason.max_turns %v", r)
	}
}

func TestFromArtifactsErrors(t *testing.T) {
	empty := t.TempDir()
	bad := t.TempDir()
	p := filepath.Join(bad, "trials", "t", "0")
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p, "trajectory.yaml"), []byte("outcome: Exploded\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		empty:                        "no trials/<task_id>/<index>/trajectory.yaml found",
		filepath.Join(empty, "nope"): "not a directory",
		bad:                          `unknown outcome "Exploded"`,
	}
	for dir, want := range cases {
		if _, err := FromArtifacts(dir); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("FromArtifacts(%s) = %v, want %q", dir, err, want)
		}
	}
}
