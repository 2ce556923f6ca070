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
