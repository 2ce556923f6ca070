package runner_test

import "testing"

// TestRegisterRefusesUngradableGrading: a grading block no trial could grade is refused
// at registration, before the host spends a token, and leaves nothing behind.
func TestRegisterRefusesUngradableGrading(t *testing.T) {
	h := startRunner(t, nil)
	for _, c := range []struct {
		name    string
		grading obj
		want    string
	}{
		{
			name: "uncompilable CEL",
			grading: obj{"weights": obj{"custom_checks": 1}, "custom_checks": obj{"enabled": true,
				"checks": []any{obj{"name": "paid", "expr": "db.orders.exists(o, o.status = 'paid')"}}}},
			want: `Invalid trial_spec_json: task.grading.custom_checks.checks[0].expr: check "paid": CEL expression "db.orders.exists(o, o.status = 'paid')" ` +
				`does not compile: line 1, column 30: Syntax error: token recognition error at: '= '; line 1, column 32: Syntax error: extraneous input ''paid'' expecting ')'`,
		},
		{
			name:    "a configured component with no weight",
			grading: obj{"weights": obj{}, "transcript_rules": obj{"max_turns": 3}},
			want: "Invalid trial_spec_json: task.grading.weights: transcript_rules is configured but weights declares no share for it (weights declares none): " +
				"the fold would refuse every trial with MissingComponentWeight after the agent's budget is spent; declare weights.transcript_rules",
		},
		{
			name: "hash and jsonpaths with no hash_weight",
			grading: obj{"weights": obj{"state_checks": 1}, "state_checks": obj{"hash_enabled": true,
				"golden_actions": []any{obj{"tool_name": "think"}}, "jsonpaths": []any{obj{"path": "$.db.notes", "exists": true}}}},
			want: "Invalid trial_spec_json: task.grading.state_checks.hash_weight: required when hash_enabled is true and jsonpaths is not empty: " +
				"the hash verdict and the JSONPath score are both real and nothing says how to fold them, so every trial would fail grading after " +
				"the agent's budget is spent; declare state_checks.hash_weight in [0, 1] (the hash verdict's share)",
		},
		{
			name: "a rubric whose criteria weights are all 0",
			grading: obj{"weights": obj{"llm_judge": 1}, "llm_judge": obj{"model_ref": "judge", "rubric": obj{"criteria": []any{
				obj{"id": "a", "description": "polite", "weight": 0}}}}},
			want: "Invalid trial_spec_json: task.grading.llm_judge.rubric.criteria: every criterion's weight is 0, so the rubric's weighted mean " +
				"has no share to divide by and the judge would error on every trial after the agent's budget is spent; give at least one criterion a positive weight",
		},
		{
			name: "an unbound variable nested in a trace selector",
			grading: obj{"weights": obj{"trace_checks": 1}, "trace_checks": obj{"constraints": []any{obj{"id": "paid", "kind": "occurs",
				"match": obj{"args": obj{"items": []any{obj{"order": "${oid}"}}}}}}}},
			want: `Invalid trial_spec_json: task.grading.trace_checks.constraints[0].match.args.items[0].order: ${oid} in constraint "paid" names no bound variable ` +
				`(no enclosing bind defines a variable)`,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			doc := baseTask([]any{tool("think")}, nil, nil)
			doc["grading"] = c.grading
			resp := h.register(t, "ungradable", doc)
			if resp.GetSuccess() || resp.GetError() != c.want {
				t.Fatalf("got success=%v\n error %q\n want  %q", resp.GetSuccess(), resp.GetError(), c.want)
			}
			assertNothingLeft(t, h, "ungradable")
		})
	}
}
