package artifacts_test

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	"tolokaforge.io/operator/api/artifacts"
	"tolokaforge.io/operator/api/runnerpb"
)

// The judge's report and per-criterion results reach grade.yaml: they are the only
// record of what the judge decided and what it cost.
func TestGradeYAMLCarriesTheJudgeReport(t *testing.T) {
	root := t.TempDir()
	a := &artifacts.Attempt{TrialID: "t:0", TaskID: "t", AttemptNumber: 1, GradedBy: "runner", Grade: &runnerpb.Grade{
		BinaryPass: true, Score: 0.8,
		Components:  &runnerpb.GradeComponents{StateChecks: -1, TranscriptRules: -1, LlmJudge: 0.8, CustomChecks: -1},
		JudgeStatus: runnerpb.JudgeStatus_JUDGE_STATUS_COMPLETED,
		CriterionResults: []*runnerpb.CriterionResult{
			{Id: "polite", Met: true, Score: 1, Justification: "kind"},
			{Id: "accurate", Met: false, Score: 0.4, Justification: "wrong balance"},
		},
		JudgeReport: &runnerpb.JudgeReport{Calls: 1, PromptTokens: 1000, CompletionTokens: 250, CostUsd: 0.002,
			TranscriptJson: `[{"role":"system","content":"grade"}]`},
	}}
	dir, err := artifacts.Write(root, a)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, artifacts.GradeFile))
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		JudgeStatus string `json:"judge_status"`
		JudgeReport struct {
			Calls            int     `json:"calls"`
			PromptTokens     int     `json:"prompt_tokens"`
			CompletionTokens int     `json:"completion_tokens"`
			ToolCalls        *int    `json:"tool_calls"`
			CostUSD          float64 `json:"cost_usd"`
			TranscriptJSON   string  `json:"transcript_json"`
		} `json:"judge_report"`
		Criteria []struct {
			ID    string  `json:"id"`
			Met   *bool   `json:"met"`
			Score float64 `json:"score"`
		} `json:"criterion_results"`
		Components map[string]float64 `json:"components"`
	}
	if err := yaml.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	r := g.JudgeReport
	if g.JudgeStatus != "JUDGE_STATUS_COMPLETED" || r.Calls != 1 || r.PromptTokens != 1000 || r.CompletionTokens != 250 ||
		r.CostUSD != 0.002 || r.ToolCalls == nil || *r.ToolCalls != 0 || r.TranscriptJSON != `[{"role":"system","content":"grade"}]` {
		t.Errorf("grade.yaml judge fields = %+v\n%s", g, b)
	}
	if len(g.Criteria) != 2 || g.Criteria[1].ID != "accurate" || g.Criteria[1].Met == nil || *g.Criteria[1].Met || g.Criteria[1].Score != 0.4 {
		t.Errorf("criterion_results = %+v", g.Criteria)
	}
	if g.Components["llm_judge"] != 0.8 {
		t.Errorf("components = %v", g.Components)
	}
}
