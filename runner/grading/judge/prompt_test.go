package judge

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner/grading/gradefmt"
	"tolokaforge.io/operator/runner/grading/timeline"
)

func f64(v float64) *float64 { return &v }

var rubric = []task.Criterion{
	{ID: "polite", Description: "Stays polite", Kind: task.CriterionBinary, Weight: f64(1)},
	{ID: "accurate", Description: "States the right balance", Kind: task.CriterionGraded, Bar: f64(0.7), Weight: f64(2)},
}

func TestParseJudgeAnswer(t *testing.T) {
	for _, c := range []struct {
		name    string
		answer  string
		score   float64
		results []*runnerpb.CriterionResult
		err     string
	}{
		{
			name:   "all met",
			answer: `{"criteria":[{"id":"polite","met":true,"score":1,"justification":"kind"},{"id":"accurate","met":true,"score":0.9,"justification":"141.01"}]}`,
			score:  gradefmt.Round6((1*1 + 2*0.9) / 3),
			results: []*runnerpb.CriterionResult{
				{Id: "polite", Met: true, Score: 1, Justification: "kind"},
				{Id: "accurate", Met: true, Score: 0.9, Justification: "141.01"},
			},
		},
		{
			name:   "graded below the bar is not met whatever the judge says; answers in any order",
			answer: "```json\n" + `{"criteria":[{"id":"accurate","met":true,"score":0.4,"justification":"off by 10"},{"id":"polite","met":false,"score":0,"justification":"rude"}]}` + "\n```",
			score:  gradefmt.Round6(2 * 0.4 / 3),
			results: []*runnerpb.CriterionResult{
				{Id: "polite", Met: false, Score: 0, Justification: "rude"},
				{Id: "accurate", Met: false, Score: 0.4, Justification: "off by 10"},
			},
		},
		{name: "not JSON", answer: "The agent did well. Score: 1", err: `the judge's answer is not the JSON object {criteria: [{id, met, score, justification}]}: invalid character 'T' looking for beginning of value; answer: "The agent did well. Score: 1"`},
		{name: "empty", answer: "  ", err: "the judge answered nothing"},
		{name: "text after the object", answer: `{"criteria":[]} and more`, err: `the judge's answer carries text after the JSON object`},
		{name: "unknown field", answer: `{"criteria":[],"verdict":"pass"}`, err: `json: unknown field "verdict"`},
		{name: "no criteria list", answer: `{}`, err: "the judge's answer has no criteria list"},
		{
			name:   "unknown and missing ids",
			answer: `{"criteria":[{"id":"polite","met":true,"score":1},{"id":"helpful","met":true,"score":1}]}`,
			err:    `the judge's answer does not match the rubric: criteria[1] names unknown criterion "helpful"; criterion "accurate" is missing`,
		},
		{
			name:   "duplicate id",
			answer: `{"criteria":[{"id":"polite","met":true,"score":1},{"id":"polite","met":true,"score":1},{"id":"accurate","score":1}]}`,
			err:    `criteria[1] answers criterion "polite" a second time`,
		},
		{
			name:   "score outside [0, 1]",
			answer: `{"criteria":[{"id":"polite","met":true,"score":1},{"id":"accurate","met":true,"score":1.5}]}`,
			err:    `criteria[1] ("accurate"): score 1.5 is outside [0, 1]`,
		},
		{
			name:   "negative score",
			answer: `{"criteria":[{"id":"polite","met":true,"score":1},{"id":"accurate","met":false,"score":-0.1}]}`,
			err:    `criteria[1] ("accurate"): score -0.1 is outside [0, 1]`,
		},
		{
			name:   "binary scored between 0 and 1",
			answer: `{"criteria":[{"id":"polite","met":true,"score":0.5},{"id":"accurate","score":1}]}`,
			err:    `criteria[0] ("polite"): binary criterion scored 0.5, not 0 or 1`,
		},
		{
			name:   "binary met contradicting its score",
			answer: `{"criteria":[{"id":"polite","met":true,"score":0},{"id":"accurate","score":1}]}`,
			err:    `criteria[0] ("polite"): met true contradicts score 0`,
		},
		{
			name:   "no score",
			answer: `{"criteria":[{"id":"polite","met":true},{"id":"accurate","score":1}]}`,
			err:    `criteria[0] ("polite"): no score`,
		},
		{
			name:   "no id",
			answer: `{"criteria":[{"met":true,"score":1},{"id":"polite","score":1},{"id":"accurate","score":1}]}`,
			err:    `criteria[0] has no id`,
		},
		{
			name:   "a string score",
			answer: `{"criteria":[{"id":"polite","met":true,"score":"1"},{"id":"accurate","score":1}]}`,
			err:    `cannot unmarshal string`,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			results, score, err := parseJudgeAnswer(c.answer, rubric)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want it to contain %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if score != c.score {
				t.Errorf("score = %v, want %v", score, c.score)
			}
			if len(results) != len(c.results) {
				t.Fatalf("results = %v, want %v", results, c.results)
			}
			for i := range results {
				if !proto.Equal(results[i], c.results[i]) {
					t.Errorf("results[%d] = %v, want %v", i, results[i], c.results[i])
				}
			}
		})
	}
}

func TestParseJudgeAnswerZeroWeights(t *testing.T) {
	zero := []task.Criterion{{ID: "a", Description: "x", Weight: f64(0)}}
	_, _, err := parseJudgeAnswer(`{"criteria":[{"id":"a","met":true,"score":1}]}`, zero)
	if err == nil || !strings.Contains(err.Error(), "weights sum to zero") {
		t.Fatalf("err = %v", err)
	}
}

// TestParseJudgeAnswerHugeWeights: criterion weights whose naive sum overflows still
// fold to the weighted mean, never NaN.
func TestParseJudgeAnswerHugeWeights(t *testing.T) {
	huge := []task.Criterion{{ID: "a", Description: "x", Weight: f64(1e308)}, {ID: "b", Description: "y", Weight: f64(1.7e308)}}
	_, score, err := parseJudgeAnswer(`{"criteria":[{"id":"a","met":true,"score":1},{"id":"b","met":false,"score":0}]}`, huge)
	if err != nil || score != 0.37037 {
		t.Fatalf("score = %v, err = %v; want 0.37037", score, err)
	}
}

func TestJudgePrompt(t *testing.T) {
	tl := &timeline.Timeline{
		Policy:      "Never refund more than the order total.",
		Termination: task.TerminationAgentDone,
		Events: []timeline.Event{
			{Position: 0, Kind: task.EventMessage, Role: task.RoleUser, Content: "refund O-001 please"},
			{Position: 1, Kind: task.EventToolCall, Role: task.RoleAssistant, Tool: "refund", Args: []byte(`{"order_id":"O-001"}`), Status: task.ToolCallSuccess, Output: `{"refunded":158.99}`},
			{Position: 2, Kind: task.EventMessage, Role: task.RoleAssistant, Content: "Done: $158.99 refunded."},
		},
	}
	j := &task.LLMJudge{ModelRef: "judge", Rubric: task.Rubric{Instructions: "Grade the refund.", Criteria: rubric}}
	conv := judgePrompt(tl, j)
	if len(conv) != 2 || conv[0].Role != task.RoleSystem || conv[1].Role != task.RoleUser {
		t.Fatalf("conversation roles: %+v", conv)
	}
	mustContainAll(t, conv[0].Content,
		"Instructions:\nGrade the refund.",
		`- id "polite" (binary: score 1 if met, 0 if not): Stays polite`,
		`- id "accurate" (graded: score a number from 0 to 1; met when the score reaches 0.7): States the right balance`,
		`{"criteria": [{"id": "<criterion id>", "met": true, "score": 1, "justification": "<one or two sentences>"}]}`,
	)
	mustContainAll(t, conv[1].Content,
		"<policy>\nNever refund more than the order total.\n</policy>",
		"[0] user: refund O-001 please\n",
		`[1] assistant called tool refund with {"order_id":"O-001"} -> success: {"refunded":158.99}`+"\n",
		"[2] assistant: Done: $158.99 refunded.\n",
		`termination reason "agent_done"`,
	)

	no := false
	j.IncludeAgentSystemPrompt = &no
	if got := judgePrompt(tl, j)[1].Content; strings.Contains(got, "Never refund") {
		t.Errorf("include_agent_system_prompt false still sends the policy:\n%s", got)
	}
}

func TestReadJudgeKey(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "judge-key"), []byte("sk-judge\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "empty"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, dir, file, key, err string
	}{
		{name: "the file's content, trailing newline dropped", dir: dir, file: "judge-key", key: "sk-judge"},
		{name: "no api_key_env: no key", dir: dir, file: ""},
		{name: "missing file", dir: dir, file: "other", err: `judge.api_key_env names key file "other", which is not in the secrets directory ` + dir},
		{name: "empty file", dir: dir, file: "empty", err: "judge key file " + filepath.Join(dir, "empty") + " is empty"},
		{name: "a path escaping the directory", dir: dir, file: "../etc/passwd", err: `judge.api_key_env "../etc/passwd" must be a plain file name`},
		{name: "dot-dot", dir: dir, file: "..", err: `judge.api_key_env ".." must be a plain file name`},
		{name: "no secrets directory", dir: "", file: "judge-key", err: "the runner has no secrets directory (--secrets-dir)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// An environment variable of the same name is never read.
			t.Setenv("judge-key", "sk-from-env")
			key, err := readJudgeKey(c.dir, &task.ModelConfig{Provider: task.ProviderOpenAI, Model: "m", APIKeyEnv: c.file})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want it to contain %q", err, c.err)
				}
				return
			}
			if err != nil || key != c.key {
				t.Fatalf("key, err = %q, %v; want %q", key, err, c.key)
			}
		})
	}
}

func mustContainAll(t testing.TB, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%q does not contain %q", s, sub)
		}
	}
}
