package shop

import (
	"encoding/json"
	"reflect"
	"sort"
	"testing"

	"tolokaforge.io/operator/api/task"
)

// TestTaskFullIsTheShopWithEveryComponent keeps task_full.json the shop task in all
// but its id, name and grading, and its grading the one that uses every component.
func TestTaskFullIsTheShopWithEveryComponent(t *testing.T) {
	var base, full map[string]any
	if err := json.Unmarshal(TaskJSON(), &base); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(TaskFullJSON(), &full); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"task_id", "name", "grading"} {
		delete(base, k)
		delete(full, k)
	}
	if !reflect.DeepEqual(base, full) {
		t.Fatal("task_full.json differs from task.json outside task_id, name and grading")
	}

	td, err := task.DecodeTaskDescription(TaskFullJSON())
	if err != nil {
		t.Fatalf("decode task_full.json: %v", err)
	}
	g := td.Grading
	if td.TaskID != "shop_orders_02_full" || g.PassThreshold == nil || *g.PassThreshold != 1 {
		t.Fatalf("task_id %q pass_threshold %v", td.TaskID, g.PassThreshold)
	}
	configured := g.ConfiguredComponents()
	sort.Strings(configured)
	if want := []string{"custom_checks", "llm_judge", "state_checks", "trace_checks", "transcript_rules"}; !reflect.DeepEqual(configured, want) {
		t.Fatalf("configured components %v, want %v", configured, want)
	}
	for _, c := range configured {
		if g.Weights[c] <= 0 {
			t.Errorf("%s has no positive weight", c)
		}
	}
	sc, tr := g.StateChecks, g.TranscriptRules
	switch {
	case !sc.HashEnabled || len(sc.GoldenActions) != 2 || len(sc.JSONPaths) == 0:
		t.Errorf("state checks %+v: want the hash and JSONPath", sc)
	case len(tr.RequiredActions) == 0 || len(tr.CommunicateInfo) == 0 || len(tr.DisallowRegex) == 0:
		t.Errorf("transcript rules %+v", tr)
	case len(g.TraceChecks.Constraints) != 2:
		t.Errorf("trace checks %+v: want two", g.TraceChecks)
	case len(g.LLMJudge.Rubric.Criteria) != 2 || g.LLMJudge.ModelRef != "judge":
		t.Errorf("judge %+v: want two criteria", g.LLMJudge)
	case !g.CustomChecks.Enabled || len(g.CustomChecks.Checks) != 1:
		t.Errorf("custom checks %+v: want one", g.CustomChecks)
	}
	if _, err := task.CompileCustomCheck(g.CustomChecks.Checks[0].Expr); err != nil {
		t.Errorf("custom check: %v", err)
	}
}
