package task

import "testing"

// TestRefusedBeforeSpending covers the grading blocks no trial could grade as
// authored: each is refused by the one validation every entrance runs
// (RegisterTrial, the Task's Valid condition, pack validate and pack import).
func TestRefusedBeforeSpending(t *testing.T) {
	for _, c := range []struct {
		name, doc, want string
	}{
		{
			name: "a configured component with no weight",
			doc:  `{"weights":{"state_checks":1},"state_checks":{"hash_enabled":true},"transcript_rules":{"max_turns":3}}`,
			want: "weights: transcript_rules is configured but weights declares no share for it (weights declares state_checks=1): " +
				"the fold would refuse every trial with MissingComponentWeight after the agent's budget is spent; declare weights.transcript_rules",
		},
		{
			name: "several, named in component order, under any method",
			doc: `{"combine_method":"all","custom_checks":{"enabled":true,"checks":[{"name":"c","expr":"true"}]},
				"llm_judge":{"model_ref":"judge","rubric":{"criteria":[{"id":"a","description":"d"}]}}}`,
			want: "weights: llm_judge, custom_checks are configured but weights declares no share for them (weights declares none): " +
				"the fold would refuse every trial with MissingComponentWeight after the agent's budget is spent; declare weights.llm_judge, weights.custom_checks",
		},
		{
			name: "weighted shares that sum to zero over the configured components",
			doc:  `{"weights":{"state_checks":0,"llm_judge":2},"state_checks":{"hash_enabled":true}}`,
			want: "weights: the weights of the configured components (state_checks=0) sum to zero, so under combine_method weighted the mean has no share " +
				"to divide by and every trial would fail; give at least one configured component a positive weight",
		},
		{
			name: "a 0 weight under any, which reads no share",
			doc:  `{"combine_method":"any","weights":{"state_checks":1,"transcript_rules":0},"state_checks":{"hash_enabled":true},"transcript_rules":{"max_turns":3}}`,
			want: "weights.transcript_rules: 0 under combine_method any excludes nothing: any reads no share and folds every configured component, " +
				"transcript_rules included; drop the transcript_rules block, or combine with weighted",
		},
		{
			name: "an uncompilable CEL expression names the check, the expression and the position",
			doc:  `{"weights":{"custom_checks":1},"custom_checks":{"enabled":true,"checks":[{"name":"ok","expr":"true"},{"name":"balance","expr":"db.customers[0].balance =="}]}}`,
			want: `custom_checks.checks[1].expr: check "balance": CEL expression "db.customers[0].balance ==" does not compile: line 1, column 27: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}`,
		},
		{
			name: "an undeclared variable, even in a disabled suite",
			doc:  `{"custom_checks":{"checks":[{"name":"state","expr":"state.orders.size() == 1"}]}}`,
			want: `custom_checks.checks[0].expr: check "state": CEL expression "state.orders.size() == 1" does not compile: line 1, column 1: undeclared reference to 'state'`,
		},
		{
			name: "a trace selector naming a variable no bind defines",
			doc:  `{"weights":{"trace_checks":1},"trace_checks":{"constraints":[{"id":"c","kind":"occurs","match":{"tool":"pay","args":{"order_id":"${oid}"}}}]}}`,
			want: "trace_checks.constraints[0].match.args.order_id: ${oid} names no bound variable (no enclosing bind defines a variable)",
		},
		{
			name: "a binder's own variable is not in scope in its from",
			doc: `{"weights":{"trace_checks":1},"trace_checks":{"alternatives":[{"id":"r","constraints":[{"id":"c","kind":"occurs",
				"bind":{"var":"oid","from":{"content_matches":"${oid}"},"value":"args.id"},
				"require":{"kind":"occurs","bind":{"var":"cid","from":{"args":{"order_id":"${oid}"}},"value":"args.c"},
					"require":{"kind":"absent","match":{"role":"${who}"}}}}]}]}}`,
			want: "trace_checks.alternatives[0].constraints[0].bind.from.content_matches: ${oid} names no bound variable (no enclosing bind defines a variable)",
		},
		{
			name: "a nested require sees only its enclosing binds",
			doc: `{"weights":{"trace_checks":1},"trace_checks":{"constraints":[{"id":"c","kind":"occurs",
				"bind":{"var":"oid","from":{},"value":"args.id"},
				"require":{"kind":"occurs","bind":{"var":"cid","from":{"args":{"order_id":"${oid}"}},"value":"args.c"},
					"require":{"kind":"absent","match":{"role":"${who}"}}}}]}}`,
			want: "trace_checks.constraints[0].require.require.match.role: ${who} names no bound variable (the enclosing binds define oid, cid)",
		},
		{
			name: "no clock: the environment declares no now()",
			doc:  `{"weights":{"custom_checks":1},"custom_checks":{"enabled":true,"checks":[{"name":"fresh","expr":"now() > timestamp('2020-01-01T00:00:00Z')"}]}}`,
			want: `custom_checks.checks[0].expr: check "fresh": CEL expression "now() > timestamp('2020-01-01T00:00:00Z')" does not compile: line 1, column 4: undeclared reference to 'now'`,
		},
		{
			name: "a when guard that is not a bool",
			doc:  `{"weights":{"custom_checks":1},"custom_checks":{"enabled":true,"checks":[{"name":"g","when":"size(timeline)","expr":"true"}]}}`,
			want: `custom_checks.checks[0].when: check "g": CEL expression "size(timeline)" does not compile: line 1, column 1: yields int, not bool`,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeGradingConfig([]byte(c.doc))
			wantErr(t, err, c.want)
		})
	}
}

func TestFoldRulesAccept(t *testing.T) {
	for _, doc := range []string{
		// A block the runner only records a skip for needs no share.
		`{"state_checks":{"golden_actions":[{"tool_name":"put"}]},"custom_checks":{"checks":[{"name":"c","expr":"true"}]}}`,
		// A share for a component nobody configured is the runner's to report at grade time.
		`{"weights":{"llm_judge":1}}`,
		// test_execution folds no components.
		`{"grading_method":"test_execution","test_execution":{"command":["true"]},"transcript_rules":{"max_turns":3}}`,
		`{"combine_method":"all","weights":{"state_checks":0.5},"state_checks":{"hash_enabled":true}}`,
		`{"weights":{"custom_checks":1},"custom_checks":{"enabled":true,"checks":[{"name":"c","when":"termination_reason != ''","expr":"timeline.exists(e, e.tool == 'pay' && e.args.order_id == 'O-1') && task.metadata.tier == 'gold' && db.orders.size() > 0"}]}}`,
	} {
		if _, err := DecodeGradingConfig([]byte(doc)); err != nil {
			t.Errorf("%s: %v", doc, err)
		}
	}
}
