package task

import (
	"math"
	"strings"
	"testing"
)

// TestRefusedBeforeSpending covers the grading blocks no trial could grade as
// authored: each is refused by the one validation every entrance runs
// (RegisterTrial, the Task's Valid condition, pack validate and pack import).
func TestRefusedBeforeSpending(t *testing.T) {
	for _, c := range []struct {
		name, doc, want string
	}{
		{
			name: "a configured component with no weight",
			doc:  `{"weights":{"state_checks":1},"state_checks":{"hash_enabled":true,"golden_actions":[{"tool_name":"put"}]},"transcript_rules":{"max_turns":3}}`,
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
			doc:  `{"weights":{"state_checks":0,"llm_judge":2},"state_checks":{"hash_enabled":true,"golden_actions":[{"tool_name":"put"}]}}`,
			want: "weights: the weights of the configured components (state_checks=0) sum to zero, so under combine_method weighted the mean has no share " +
				"to divide by and every trial would fail; give at least one configured component a positive weight",
		},
		{
			name: "a 0 weight under any, which reads no share",
			doc:  `{"combine_method":"any","weights":{"state_checks":1,"transcript_rules":0},"state_checks":{"hash_enabled":true,"golden_actions":[{"tool_name":"put"}]},"transcript_rules":{"max_turns":3}}`,
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
			want: "trace_checks.constraints[0].match.args.order_id: ${oid} in constraint \"c\" names no bound variable (no enclosing bind defines a variable)",
		},
		{
			name: "a binder's own variable is not in scope in its from",
			doc: `{"weights":{"trace_checks":1},"trace_checks":{"alternatives":[{"id":"r","constraints":[{"id":"c","kind":"occurs",
				"bind":{"var":"oid","from":{"content_matches":"${oid}"},"value":"args.id"},
				"require":{"kind":"occurs","bind":{"var":"cid","from":{"args":{"order_id":"${oid}"}},"value":"args.c"},
					"require":{"kind":"absent","match":{"role":"${who}"}}}}]}]}}`,
			want: "trace_checks.alternatives[0].constraints[0].bind.from.content_matches: ${oid} in constraint \"c\" names no bound variable (no enclosing bind defines a variable)",
		},
		{
			name: "a nested require sees only its enclosing binds",
			doc: `{"weights":{"trace_checks":1},"trace_checks":{"constraints":[{"id":"c","kind":"occurs",
				"bind":{"var":"oid","from":{},"value":"args.id"},
				"require":{"kind":"occurs","bind":{"var":"cid","from":{"args":{"order_id":"${oid}"}},"value":"args.c"},
					"require":{"kind":"absent","match":{"role":"${who}"}}}}]}}`,
			want: "trace_checks.constraints[0].require.require.match.role: ${who} in constraint \"c\" names no bound variable (the enclosing binds define oid, cid)",
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
		{
			name: "hash_enabled with no source (neither golden_actions nor expected_hash)",
			doc:  `{"weights":{"state_checks":1},"state_checks":{"hash_enabled":true}}`,
			want: "state_checks.hash_enabled: true, but neither golden_actions nor expected_hash is declared, so the hash has no source " +
				"to compare the trial's state against; declare golden_actions (the reference solution, replayed at grade time) or " +
				"expected_hash (the digest of the golden stable state), or set hash_enabled: false",
		},
		{
			name: "no source is named before the missing hash_weight it would lead to",
			doc:  `{"weights":{"state_checks":1},"state_checks":{"hash_enabled":true,"jsonpaths":[{"path":"$.db.t","exists":true}]}}`,
			want: "state_checks.hash_enabled: true, but neither golden_actions nor expected_hash is declared, so the hash has no source " +
				"to compare the trial's state against; declare golden_actions (the reference solution, replayed at grade time) or " +
				"expected_hash (the digest of the golden stable state), or set hash_enabled: false",
		},
		{
			name: "hash and jsonpaths with no hash_weight",
			doc:  `{"weights":{"state_checks":1},"state_checks":{"hash_enabled":true,"golden_actions":[{"tool_name":"put"}],"jsonpaths":[{"path":"$.db.t","exists":true}]}}`,
			want: "state_checks.hash_weight: required when hash_enabled is true and jsonpaths is not empty: the hash verdict and the " +
				"JSONPath score are both real and nothing says how to fold them, so every trial would fail grading after the agent's " +
				"budget is spent; declare state_checks.hash_weight in [0, 1] (the hash verdict's share)",
		},
		{
			name: "a rubric whose criteria weights are all 0",
			doc: `{"weights":{"llm_judge":1},"llm_judge":{"model_ref":"judge","rubric":{"criteria":[
				{"id":"a","description":"d","weight":0},{"id":"b","description":"d","weight":0}]}}}`,
			want: "llm_judge.rubric.criteria: every criterion's weight is 0, so the rubric's weighted mean has no share to divide by and " +
				"the judge would error on every trial after the agent's budget is spent; give at least one criterion a positive weight",
		},
		{
			name: "an enabled custom_checks suite whose check weights are all 0",
			doc:  `{"weights":{"custom_checks":1},"custom_checks":{"enabled":true,"checks":[{"name":"a","expr":"true","weight":0}]}}`,
			want: "custom_checks.checks: every check's weight is 0, so no check can reach a scored verdict and custom_checks would be " +
				"left unscored on every trial after the agent's budget is spent; give at least one check a positive weight",
		},
		{
			name: "an unbound variable in a string in an array",
			doc:  `{"weights":{"trace_checks":1},"trace_checks":{"constraints":[{"id":"c","kind":"occurs","match":{"args":{"items":["x","${sku}"]}}}]}}`,
			want: `trace_checks.constraints[0].match.args.items[1]: ${sku} in constraint "c" names no bound variable (no enclosing bind defines a variable)`,
		},
		{
			name: "an unbound variable in an object in an array in a result",
			doc: `{"weights":{"trace_checks":1},"trace_checks":{"constraints":[{"id":"refund","kind":"occurs",
				"bind":{"var":"oid","from":{"tool":"list"},"value":"result.id"},
				"require":{"kind":"occurs","match":{"result":{"lines":[{"order":"${oid}","sku":"SKU-${sku}"}]}}}}]}}`,
			want: `trace_checks.constraints[0].require.match.result.lines[0].sku: ${sku} in constraint "refund" names no bound variable (the enclosing binds define oid)`,
		},
		{
			name: "an escaped reference is the reference the grader sees",
			doc:  `{"weights":{"trace_checks":1},"trace_checks":{"constraints":[{"id":"c","kind":"occurs","match":{"args":{"o":{"id":"\u0024{oid}"}}}}]}}`,
			want: `trace_checks.constraints[0].match.args.o.id: ${oid} in constraint "c" names no bound variable (no enclosing bind defines a variable)`,
		},
		{
			name: "a reference in an object key, which is matched literally",
			doc: `{"weights":{"trace_checks":1},"trace_checks":{"constraints":[{"id":"c","kind":"occurs",
				"bind":{"var":"k","from":{},"value":"args.k"},"require":{"kind":"occurs","match":{"args":{"m":{"${k}":1}}}}}]}}`,
			want: `trace_checks.constraints[0].require.match.args.m.${k}: object keys are matched literally; ${var} is substituted in values only (constraint "c")`,
		},
		{
			name: "a float literal outside the float64 range in a selector",
			doc:  `{"weights":{"trace_checks":1},"trace_checks":{"constraints":[{"id":"c","kind":"occurs","match":{"args":{"q":[1, {"n":1e400}]}}}]}}`,
			want: "trace_checks.constraints[0].match.args.q[1].n: number 1e400 is outside the float64 range",
		},
		{
			name: "a float literal outside the float64 range in a golden action",
			doc:  `{"weights":{"state_checks":1},"state_checks":{"hash_enabled":true,"golden_actions":[{"tool_name":"put","arguments":{"amount":-2e308}}]}}`,
			want: "state_checks.golden_actions[0].arguments.amount: number -2e308 is outside the float64 range",
		},
		{
			name: "a float literal outside the float64 range in a JSONPath operand",
			doc:  `{"weights":{"state_checks":1},"state_checks":{"jsonpaths":[{"path":"$.db.t[0].n","lte":1.8e309}]}}`,
			want: "state_checks.jsonpaths[0].lte: number 1.8e309 is outside the float64 range",
		},
		{
			name: "a verifier timeout no duration can hold",
			doc:  `{"grading_method":"test_execution","test_execution":{"command":["true"],"timeout_s":1e300}}`,
			want: "test_execution.timeout_s: 1e+300 exceeds the longest duration, 9223372036 seconds",
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
		`{"combine_method":"all","weights":{"state_checks":0.5},"state_checks":{"hash_enabled":true,"golden_actions":[{"tool_name":"put"}]}}`,
		`{"weights":{"custom_checks":1},"custom_checks":{"enabled":true,"checks":[{"name":"c","when":"termination_reason != ''","expr":"timeline.exists(e, e.tool == 'pay' && e.args.order_id == 'O-1') && task.metadata.tier == 'gold' && db.orders.size() > 0"}]}}`,
		// Weights near the float64 maximum are finite; the fold normalises them.
		`{"weights":{"state_checks":1e308,"transcript_rules":1.7976931348623157e308},"state_checks":{"hash_enabled":true,"expected_hash":"` + strings.Repeat("0", 64) + `"},"transcript_rules":{"max_turns":3}}`,
		// Bound variables at any depth, whole or mid-text; an integer literal of any size is exact.
		`{"weights":{"trace_checks":1},"trace_checks":{"constraints":[{"id":"c","kind":"occurs","bind":{"var":"oid","from":{"tool":"list"},"value":"result.id"},
			"require":{"kind":"occurs","match":{"args":{"items":[{"order":"${oid}","note":"re ${oid}!"}],"big":123456789012345678901234567890}}}}]}}`,
		// A zero weight beside a positive one excludes that criterion or check.
		`{"weights":{"llm_judge":1,"custom_checks":1},"llm_judge":{"model_ref":"j","rubric":{"criteria":[{"id":"a","description":"d","weight":0},{"id":"b","description":"d"}]}},
			"custom_checks":{"enabled":true,"checks":[{"name":"a","expr":"true","weight":0},{"name":"b","expr":"true"}]}}`,
		// A disabled suite is a recorded skip: its weights are never folded.
		`{"custom_checks":{"checks":[{"name":"a","expr":"true","weight":0}]}}`,
	} {
		if _, err := DecodeGradingConfig([]byte(doc)); err != nil {
			t.Errorf("%s: %v", doc, err)
		}
	}
}

// TestNonFiniteRefused covers what JSON cannot carry but YAML (.inf, .nan, through the
// pack converter) and Go-built values can: every number the fold, a mean or a clock
// reads is refused unless finite, with its key's path.
func TestNonFiniteRefused(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	f := func(v float64) *float64 { return &v }
	hash := strings.Repeat("0", 64)
	for _, c := range []struct {
		name string
		edit func(g *GradingConfig)
		want string
	}{
		{"a component weight of +Inf", func(g *GradingConfig) { g.Weights["state_checks"] = inf },
			"weights.state_checks: +Inf is not a finite number"},
		{"a component weight of NaN", func(g *GradingConfig) { g.Weights["state_checks"] = nan },
			"weights.state_checks: NaN is not a finite number"},
		{"a component weight of -Inf", func(g *GradingConfig) { g.Weights["state_checks"] = math.Inf(-1) },
			"weights.state_checks: -Inf is not a finite number"},
		{"pass_threshold NaN", func(g *GradingConfig) { g.PassThreshold = f(nan) },
			"pass_threshold: NaN is outside [0, 1]"},
		{"pass_threshold +Inf", func(g *GradingConfig) { g.PassThreshold = f(inf) },
			"pass_threshold: +Inf is outside [0, 1]"},
		{"hash_weight NaN", func(g *GradingConfig) { g.StateChecks.HashWeight = f(nan) },
			"state_checks.hash_weight: NaN is outside [0, 1]"},
		{"a trace constraint weight of +Inf", func(g *GradingConfig) { g.TraceChecks.Constraints[0].Weight = f(inf) },
			"trace_checks.constraints[0].weight: +Inf is not a finite number"},
		{"a trace weight inside require", func(g *GradingConfig) {
			g.TraceChecks.Alternatives[0].Constraints[0].Require.Weight = f(nan)
		}, "trace_checks.alternatives[0].constraints[0].require.weight: NaN is not a finite number"},
		{"a criterion weight of +Inf", func(g *GradingConfig) { g.LLMJudge.Rubric.Criteria[0].Weight = f(inf) },
			"llm_judge.rubric.criteria[0].weight: +Inf is not a finite number"},
		{"a criterion bar of NaN", func(g *GradingConfig) { g.LLMJudge.Rubric.Criteria[0].Bar = f(nan) },
			"llm_judge.rubric.criteria[0].bar: NaN is outside [0, 1]"},
		{"a check weight of NaN", func(g *GradingConfig) { g.CustomChecks.Checks[0].Weight = f(nan) },
			"custom_checks.checks[0].weight: NaN is not a finite number"},
		{"a verifier timeout of +Inf", func(g *GradingConfig) {
			*g = GradingConfig{GradingMethod: GradingTestExecution, TestExecution: &TestExecution{Command: []string{"true"}, TimeoutS: inf}}
		}, "test_execution.timeout_s: +Inf is not a finite number"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := &GradingConfig{
				Weights:     map[string]float64{"state_checks": 1, "trace_checks": 1, "llm_judge": 1, "custom_checks": 1},
				StateChecks: &StateChecks{HashEnabled: true, ExpectedHash: &hash},
				TraceChecks: &TraceChecks{
					Constraints: []TraceConstraint{{ID: "c", Kind: TraceAbsent, Match: &Selector{Tool: "t"}}},
					Alternatives: []traceAlternative{{ID: "r", Constraints: []TraceConstraint{{ID: "b", Kind: TraceOccurs,
						Bind:    &traceBinding{Var: "v", Value: "args.id"},
						Require: &TraceConstraint{Kind: TraceAbsent, Match: &Selector{Tool: "t"}}}}}},
				},
				LLMJudge:     &LLMJudge{ModelRef: "j", Rubric: Rubric{Criteria: []Criterion{{ID: "a", Description: "d", Kind: CriterionGraded}}}},
				CustomChecks: &CustomChecks{Enabled: true, Checks: []CustomCheck{{Name: "a", Expr: "true"}}},
			}
			g.ApplyDefaults()
			if err := g.Validate(); err != nil {
				t.Fatalf("the base config is refused: %v", err)
			}
			c.edit(g)
			wantErr(t, g.Validate(), c.want)
		})
	}
}
