package grading

import (
	"context"
	"strings"
	"testing"

	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner/grading/gradefmt"
)

func TestLedgerRecordedSkips(t *testing.T) {
	db := newTestDB(t)
	trace := &task.TraceChecks{Constraints: []task.TraceConstraint{{ID: "c", Kind: task.TraceOccurs, Match: &task.Selector{Event: task.EventMessage}}}}
	judge := &task.LLMJudge{ModelRef: "judge", Rubric: task.Rubric{Criteria: []task.Criterion{{ID: "p", Description: "polite"}}}}
	for _, c := range []struct {
		name       string
		edit       func(g *task.GradingConfig)
		transcript func(t *testing.T, env *testEnv) []byte
		reasons    string
		err        string
	}{
		{
			name: "custom checks populated but disabled",
			edit: func(g *task.GradingConfig) {
				g.CustomChecks = &task.CustomChecks{Enabled: false, Checks: []task.CustomCheck{{Name: "x", Expr: "true"}}}
			},
			reasons: "State: hash match | custom_checks.checks: skipped: custom checks not enabled",
		},
		{
			name:       "llm_judge with no transcript messages",
			edit:       func(g *task.GradingConfig) { g.LLMJudge = judge },
			transcript: func(*testing.T, *testEnv) []byte { return nil },
			reasons:    "State: hash match | llm_judge: skipped: no transcript messages",
		},
		{
			name: "a weighted llm_judge that cannot run fails loud",
			edit: func(g *task.GradingConfig) {
				g.LLMJudge = judge
				g.Weights["llm_judge"] = 1
			},
			transcript: func(t *testing.T, _ *testEnv) []byte { return wire(t, user("hi"), assistant("hello")) },
			err: "Grading error: llm_judge: JUDGE_STATUS_ERRORED (no score; llm_judge carries a weight share, so the grade cannot be computed without it): " +
				`llm_judge.model_ref "judge" names TrialSpec.judge, but the trial was registered without a judge model config`,
		},
		{
			name:       "trace_checks on an empty timeline",
			edit:       func(g *task.GradingConfig) { g.TraceChecks = trace },
			transcript: func(*testing.T, *testEnv) []byte { return []byte("[]") },
			reasons:    "State: hash match | trace_checks.constraints.occurs: skipped: the trial's timeline carries no events",
		},
		{
			name: "a component left out of grading_components is not owed",
			edit: func(g *task.GradingConfig) { g.TraceChecks = trace },
			// The default request names state_checks only (below).
			transcript: func(t *testing.T, _ *testEnv) []byte { return wire(t, user("hi")) },
			reasons:    "State: hash match",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := newTrial(t, db, loadShopTask(t, hashOnly(func(*task.StateChecks) {})))
			c.edit(env.spec.Task.Grading)
			tr := agentRun(t, env, goldenPlaceOrderArgs, "O-001", goldenFinal)
			if c.transcript != nil {
				// The state stays the agent's; the timeline is only what this transcript
				// says, so the record that would contradict it is dropped.
				tr = c.transcript(t, env)
				env.records = nil
			}
			req := Request{Transcript: tr}
			if strings.Contains(c.name, "grading_components") {
				req.Components = []string{"state_checks"}
			}
			g, err := New().Grade(context.Background(), env, req)
			if c.err != "" {
				if err == nil || err.Error() != c.err {
					t.Fatalf("err = %v\nwant %s", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if g.Reasons != c.reasons || g.Score != 1 || g.Components.LlmJudge != -1 || g.Components.CustomChecks != -1 || g.Components.TraceChecks != nil {
				t.Errorf("grade = %v\nwant reasons %s", g, c.reasons)
			}
		})
	}
}

func TestGradingComponentsLimitWhatIsComputed(t *testing.T) {
	db := newTestDB(t)
	env := newTrial(t, db, loadShopTask(t, nil))
	transcript := agentRun(t, env, wrongQtyPlaceOrder, "O-001", "Order O-001 is paid; balance 106.51")
	g, err := New().Grade(context.Background(), env, Request{Transcript: transcript, Components: []string{"transcript_rules"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(env.replayed) != 0 || env.syncs != 0 {
		t.Errorf("state checks ran: replayed %v, syncs %d", env.replayed, env.syncs)
	}
	want := `Transcript: 1 of 9 rules failed: communicate_info[2]: "141.01" was never communicated in an assistant message`
	if g.Components.StateChecks != -1 || g.Components.TranscriptRules != 8.0/9 || g.Score != gradefmt.Round6(8.0/9) || !g.BinaryPass || g.Reasons != want || g.StateDiffJson != "" {
		t.Errorf("grade = %v", g)
	}
}

func TestNoComponentSentences(t *testing.T) {
	db := newTestDB(t)
	for _, c := range []struct {
		name    string
		grading *task.GradingConfig
		score   float64
		pass    bool
		reasons string
	}{
		{"no grading block at all", nil, 1, true, sentenceNothingOwed},
		{"an empty grading block", &task.GradingConfig{Weights: map[string]float64{}}, 1, true, sentenceNothingOwed},
		{"a weight naming a component nobody configured", &task.GradingConfig{Weights: map[string]float64{"llm_judge": 1}}, 0, false,
			"no component was scored, yet the task asked for llm_judge (weighted): nothing it asked for was counted"},
		{"a configured component that skipped", &task.GradingConfig{Weights: map[string]float64{"state_checks": 1},
			StateChecks: &task.StateChecks{GoldenActions: []task.GoldenAction{{ToolName: "place_order", Arguments: []byte(`{}`)}}}}, 0, false,
			"no component was scored, yet the task asked for state_checks (configured and weighted): nothing it asked for was counted | state_checks.golden_actions: skipped: hash grading not enabled"},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := newTrial(t, db, loadShopTask(t, func(td *task.TaskDescription) { td.Grading = c.grading }))
			g := mustGrade(t, env, wire(t, user("hi"), assistant("hello")))
			if g.Score != c.score || g.BinaryPass != c.pass || g.Reasons != c.reasons {
				t.Errorf("grade = %v\nwant score %v pass %v reasons %s", g, c.score, c.pass, c.reasons)
			}
			comps := g.Components
			if comps.StateChecks != -1 || comps.TranscriptRules != -1 || comps.LlmJudge != -1 || comps.CustomChecks != -1 || comps.TraceChecks != nil {
				t.Errorf("components = %v, want every one not evaluated", comps)
			}
		})
	}
}

func TestLedgerCheckNamesEveryKeyInManifestOrder(t *testing.T) {
	cfg := &task.GradingConfig{
		StateChecks:     &task.StateChecks{HashEnabled: true, JSONPaths: []task.JSONPathCheck{{Path: "$.db"}}},
		TranscriptRules: &task.TranscriptRules{MaxTurns: ptrTo(3)},
	}
	populated := populatedKeys(cfg, func(string) bool { return true })
	var keys []string
	for _, k := range populated {
		keys = append(keys, k.key)
	}
	if got := strings.Join(keys, ","); got != "state_checks.hash_enabled,state_checks.jsonpaths,transcript_rules.max_turns" {
		t.Fatalf("populated = %s", got)
	}
	l := newLedger()
	l.evaluated("state_checks.jsonpaths")
	err := l.check(populated, func(name string) bool { return name != evalTranscript })
	want := "Grading config populates scored keys the runner neither evaluated nor recorded a skip for: " +
		"state_checks.hash_enabled (expects runner evaluator hash, which neither evaluated nor skipped it); " +
		"transcript_rules.max_turns (expects runner evaluator transcript_rules, which this runner does not implement yet)"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
	l.skipped("because", "state_checks.hash_enabled", "transcript_rules.max_turns")
	if err := l.check(populated, func(string) bool { return true }); err != nil {
		t.Errorf("after skips: %v", err)
	}
	if got := strings.Join(l.notes(), " | "); got != "state_checks.hash_enabled, transcript_rules.max_turns: skipped: because" {
		t.Errorf("notes = %s", got)
	}
}
