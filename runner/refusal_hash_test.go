package runner_test

import (
	"strings"
	"testing"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/runner/grading"
)

// TestRefusalShapedHashIsGradedAgainstTheInitialState: hash_enabled with
// golden_actions: [] (or no declared source at all) registers, and GradeTrial grades
// the hash against the trial's initial state, exactly as runner-protocol.md's
// GradeTrial error table says: alone it is a verdict; beside db_probes or beside
// jsonpaths with no hash_weight it is refused at grade time, never at registration;
// beside jsonpaths with a hash_weight it folds by that weight.
func TestRefusalShapedHashIsGradedAgainstTheInitialState(t *testing.T) {
	h := startRunner(t, nil, withGrader(grading.New()))
	const insert = `{"table":"items","record":{"id":"i-2","name":"extra"}}`
	for _, c := range []struct {
		name        string
		stateChecks obj
		exec        string // a db_insert the "agent" makes before grading, "" for none
		wantErr     string // GradeTrial's error; "" when it grades
		wantState   float64
		wantReason  string
	}{
		{
			name:        "alone, nothing changed: the hash matches the initial state",
			stateChecks: obj{"hash_enabled": true, "golden_actions": []any{}},
			wantState:   1, wantReason: "State: hash match",
		},
		{
			name:        "alone, the agent changed the state: the hash differs from the initial state",
			stateChecks: obj{"hash_enabled": true, "golden_actions": []any{}},
			exec:        insert,
			wantState:   0, wantReason: "State: ",
		},
		{
			name:        "no declared source at all: the runner grades against the initial state too",
			stateChecks: obj{"hash_enabled": true},
			wantState:   1, wantReason: "State: hash match",
		},
		{
			name:        "beside non-empty db_probes: refused at grade time, not at registration",
			stateChecks: obj{"hash_enabled": true, "golden_actions": []any{}, "db_probes": []any{obj{"id": "p", "query": "$.db.items[*]", "expect": obj{"count": 1}}}},
			wantErr: "Trial '%s' is not gradeable: ValueError: state_checks.db_probes is the sole state source for a task that declares it, " +
				"yet this task also declares an enabled hash (state_checks.hash_enabled: true): two verdicts for one state_checks component " +
				"with no declared share between them; drop the probes or the other source",
		},
		{
			name:        "beside jsonpaths with no hash_weight: refused at grade time, not at registration",
			stateChecks: obj{"hash_enabled": true, "golden_actions": []any{}, "jsonpaths": []any{obj{"path": "$.db.items[0].name", "equals": "first"}}},
			wantErr: "Trial '%s' is not gradeable: ValueError: state_checks.hash.weight is required when a hash verdict and a JSONPath score " +
				"are both real (hash_enabled with 1 jsonpaths) and nothing says how to fold them; declare state_checks.hash_weight in [0, 1]",
		},
		{
			name: "beside jsonpaths with a hash_weight: folded by it (jsonpath 1, hash 0, weight 0.25)",
			stateChecks: obj{"hash_enabled": true, "golden_actions": []any{}, "hash_weight": 0.25,
				"jsonpaths": []any{obj{"path": "$.db.items[0].name", "equals": "first"}}},
			exec:      insert,
			wantState: 0.75, wantReason: "State: ",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := "refusal-" + strings.NewReplacer(" ", "-", ",", "", ":", "", "(", "", ")", "", ".", "").Replace(c.name)
			if len(id) > 60 {
				id = id[:60]
			}
			doc := baseTask([]any{tool("db_insert", "category", "write")}, nil, obj{"items": []any{obj{"id": "i-1", "name": "first"}}})
			doc["grading"] = obj{"weights": obj{"state_checks": 1}, "state_checks": c.stateChecks}
			if r := h.register(t, id, doc); !r.GetSuccess() {
				t.Fatalf("RegisterTrial refused a shape the spec says the runner grades: %s", r.GetError())
			}
			var msgs = `[{"role":"user","content":"change nothing"}]`
			if c.exec != "" {
				h.mustExec(t, id, call{tool: "db_insert", args: c.exec, callID: "c1"})
				msgs = `[{"role":"user","content":"change nothing"},` +
					`{"role":"assistant","content":"","tool_calls":[{"id":"c1","function":{"name":"db_insert","arguments":` + mustJSON(c.exec) + `}}]},` +
					`{"role":"tool","content":"ok","tool_call_id":"c1"}]`
			}
			r := grade(t, h, &runnerpb.GradeTrialRequest{TrialId: id, LlmMessagesJson: msgs, TerminationReason: "agent_done"})
			if c.wantErr != "" {
				if want := strings.Replace(c.wantErr, "%s", id, 1); r.GetSuccess() || r.GetError() != want {
					t.Fatalf("GradeTrial: success=%v\n error %q\n want  %q", r.GetSuccess(), r.GetError(), want)
				}
				return
			}
			if !r.GetSuccess() {
				t.Fatalf("GradeTrial: %s", r.GetError())
			}
			g := r.GetGrade()
			if got := g.GetComponents().GetStateChecks(); got != c.wantState || !strings.Contains(g.GetReasons(), c.wantReason) {
				t.Fatalf("state_checks = %v (want %v), reasons %q (want it to contain %q)", got, c.wantState, g.GetReasons(), c.wantReason)
			}
			if c.wantState == 1 && !g.GetBinaryPass() {
				t.Fatalf("an unchanged state must pass a refusal task: %+v", g)
			}
		})
	}
}
