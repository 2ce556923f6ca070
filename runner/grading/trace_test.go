package grading

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner/grading/timeline"
)

// script builds a transcript and the runner's matching record without running tools:
// trace checks read the timeline only.
type script struct {
	msgs []turn
	recs []task.RecordedToolCall
}

func (s *script) say(role, content string) *script {
	s.msgs = append(s.msgs, turn{Role: role, Content: content})
	return s
}

// call adds a turn declaring one tool call (two events: the turn, then the call) and
// its recorded outcome.
func (s *script) call(executor, tool, args string, status task.ToolCallStatus, output string) *script {
	id := fmt.Sprintf("call_%d", len(s.recs)+1)
	m := calls([3]string{id, tool, args})
	m.Role = timeline.RoleOf(executor)
	s.msgs = append(s.msgs, m, toolResult(id, output))
	s.recs = append(s.recs, task.RecordedToolCall{CallID: id, Sequence: len(s.recs), ToolName: tool, Arguments: json.RawMessage(args),
		Executor: executor, Status: status, Output: output, Timestamp: time.Unix(1700000000, 0).UTC()})
	return s
}

// goodRefund: 0 user, 1-2 get_order, 3-4 refund, 5 the closing message.
func goodRefund() *script {
	return (&script{}).say(task.RoleUser, "I want a refund for order O-1").
		call(task.ExecutorAgent, "shop_get_order", `{"order_id":"O-1"}`, task.ToolCallSuccess, `{"id":"O-1","status":"delivered","total":20}`).
		call(task.ExecutorAgent, "refund", `{"order_id":"O-1"}`, task.ToolCallSuccess, `{"refund_id":"R-9"}`).
		say(task.RoleAssistant, "Your refund R-9 is on its way.")
}

// badRefund: 0 user, 1-2 refund without a lookup, 3-4 the same refund again (error), 5 "Done."
func badRefund() *script {
	return (&script{}).say(task.RoleUser, "I want a refund for order O-1").
		call(task.ExecutorAgent, "refund", `{"order_id":"O-1"}`, task.ToolCallSuccess, `{"refund_id":"R-9"}`).
		call(task.ExecutorAgent, "refund", `{"order_id":"O-1"}`, task.ToolCallError, "already refunded").
		say(task.RoleAssistant, "Done.")
}

// traceEnv is a trial graded on trace_checks alone (weight 1, threshold 1); block is
// the trace_checks block as the pack would write it (JSON), decoded strictly.
func traceEnv(t testing.TB, block string, s *script) (*testEnv, []byte) {
	t.Helper()
	cfg, err := task.DecodeGradingConfig([]byte(`{"weights":{"trace_checks":1},"trace_checks":` + block + `}`))
	if err != nil {
		t.Fatalf("decode trace block: %v", err)
	}
	td := &task.TaskDescription{TaskID: "refund", Name: "refund", Category: "shop", Description: "refund", AdapterType: task.AdapterNative,
		SystemPrompt: "policy", Grading: cfg,
		AgentTools: []task.ToolSchema{{Name: "shop_get_order"}, {Name: "refund"}, {Name: "place_order"}, {Name: "confirm_payment"}}}
	env := &testEnv{id: "refund:0", spec: &task.TrialSpec{TrialID: "refund:0", Task: td},
		agentTools: []string{"shop_get_order", "refund", "place_order", "confirm_payment"}, records: s.recs}
	return env, wire(t, s.msgs...)
}

func gradeTrace(t testing.TB, block string, s *script) *runnerpb.Grade {
	t.Helper()
	env, tr := traceEnv(t, block, s)
	g, err := New().Grade(context.Background(), env, Request{Transcript: tr})
	if err != nil {
		t.Fatalf("grade: %v", err)
	}
	return g
}

// TestTraceKinds grades each of the ten kinds against a transcript that satisfies it
// and one that does not, asserting the verdict, the positions that decided it and the
// exact reason text.
func TestTraceKinds(t *testing.T) {
	for _, c := range []struct {
		kind       string
		constraint string
		goodPos    []int32
		badPos     []int32
		badReason  string
	}{
		{"occurs", `"match":{"event":"tool_call","tool":"get_order"}`, []int32{2}, nil,
			"expected at least 1 event(s) matching {event=tool_call, tool=get_order}, found 0"},
		{"absent", `"match":{"event":"tool_call","status":"error"}`, nil, []int32{4},
			"expected no event matching {event=tool_call, status=error}, found 1 at position 4"},
		{"precedes", `"first":{"tool":"get_order"},"then":{"tool":"refund"}`, []int32{2, 4}, []int32{2, 4},
			"the event at position 2 matches then {tool=refund} with no earlier event matching first {tool=get_order} (and 1 more such event)"},
		{"responds", `"trigger":{"event":"message","role":"user"},"response":{"event":"message","role":"assistant","content_matches":"(?i)refund"},"within":5`,
			[]int32{0, 5}, []int32{0},
			`the trigger at position 0 matching {event=message, role=user} has no response matching {event=message, role=assistant, content_matches="(?i)refund"} within 5 events`},
		{"immediately_follows", `"trigger":{"tool":"refund","status":"success"},"next":{"event":"message","role":"assistant","content_matches":"R-9"}`,
			[]int32{4, 5}, []int32{2},
			`the event at position 3 right after the trigger at position 2 does not match next {event=message, role=assistant, content_matches="R-9"}`},
		{"order", `"sequence":[{"event":"message","role":"user"},{"tool":"get_order"},{"tool":"refund"}]`, []int32{0, 2, 4}, []int32{0},
			"sequence[1] {tool=get_order} matches no event after position 0, where sequence[0] matched"},
		{"first", `"scope":{"event":"tool_call"},"match":{"tool":"get_order"}`, []int32{2}, []int32{2},
			"the first event matching scope {event=tool_call} (position 2) does not match {tool=get_order}"},
		{"last", `"scope":{"event":"tool_call"},"match":{"status":"success"}`, []int32{4}, []int32{4},
			"the last event matching scope {event=tool_call} (position 4) does not match {status=success}"},
		{"between", `"after":{"event":"message","role":"user"},"before":{"event":"message","role":"assistant","content_matches":"\\S"},"match":{"tool":"refund"},"max":1`,
			[]int32{0, 4, 5}, []int32{0, 2, 4, 5},
			"expected exactly 1 event(s) matching {tool=refund} between positions 0 and 5, found 2 (positions 2, 4)"},
		{"unique", `"match":{"tool":"refund"},"by":["order_id"]`, []int32{4}, []int32{2, 4},
			`the events at positions 2 and 4 match {tool=refund} and share order_id="O-1"`},
	} {
		block := fmt.Sprintf(`{"constraints":[{"id":"c-%s","kind":%q,%s}]}`, c.kind, c.kind, c.constraint)
		t.Run(c.kind+"/passes", func(t *testing.T) {
			g := gradeTrace(t, block, goodRefund())
			want := &runnerpb.TraceConstraintResult{Id: "c-" + c.kind, Kind: c.kind, Passed: true, Weight: 1, Severity: "scored", MatchedPositions: c.goodPos}
			assertTrace(t, g, []*runnerpb.TraceConstraintResult{want})
			if len(g.TraceChecks) != 1 {
				t.Errorf("trace_checks = %v", g.TraceChecks)
			}
			if g.Score != 1 || !g.BinaryPass || g.Reasons != "Trace checks: score=1" || g.Components.TraceChecks == nil || *g.Components.TraceChecks != 1 {
				t.Errorf("grade = %v", g)
			}
		})
		t.Run(c.kind+"/fails", func(t *testing.T) {
			g := gradeTrace(t, block, badRefund())
			want := &runnerpb.TraceConstraintResult{Id: "c-" + c.kind, Kind: c.kind, Weight: 1, Severity: "scored", MatchedPositions: c.badPos, Message: c.badReason}
			assertTrace(t, g, []*runnerpb.TraceConstraintResult{want})
			reasons := fmt.Sprintf("Trace checks: score=0 | Trace check c-%s: %s", c.kind, c.badReason)
			if g.Score != 0 || g.BinaryPass || g.Reasons != reasons || g.Components.TraceChecks == nil || *g.Components.TraceChecks != 0 {
				t.Errorf("grade = %v\nwant reasons %s", g, reasons)
			}
			if s := g.TraceChecksSummary; s == nil || s.GateFailed || s.WinningPath != "" || len(s.Paths) != 0 {
				t.Errorf("summary = %v", s)
			}
		})
	}
}

func assertTrace(t *testing.T, g *runnerpb.Grade, want []*runnerpb.TraceConstraintResult) {
	t.Helper()
	if len(g.TraceChecks) < len(want) {
		t.Fatalf("trace_checks = %v, want at least %d results", g.TraceChecks, len(want))
	}
	for i, w := range want {
		got := g.TraceChecks[i]
		if got.Id != w.Id || got.Kind != w.Kind || got.Passed != w.Passed || got.Undecided != w.Undecided || got.Weight != w.Weight ||
			got.Severity != w.Severity || got.Message != w.Message || !reflect.DeepEqual(got.MatchedPositions, w.MatchedPositions) {
			t.Errorf("trace_checks[%d] = %v\nwant %v", i, got, w)
		}
	}
}

func TestTraceSeverityWeightsAndUndecided(t *testing.T) {
	for _, c := range []struct {
		name    string
		block   string
		s       *script
		score   float64
		comp    *float64
		pass    bool
		reasons string
		gates   []string
	}{
		{
			name: "weights: the weighted mean of the scored constraints",
			block: `{"constraints":[{"id":"looked-up","kind":"occurs","weight":3,"match":{"tool":"refund"}},
				{"id":"once","kind":"unique","weight":1,"match":{"tool":"refund"},"by":["order_id"]}]}`,
			s: badRefund(), score: 0.75, comp: ptrTo(0.75),
			reasons: `Trace checks: score=0.75 | Trace check once: the events at positions 2 and 4 match {tool=refund} and share order_id="O-1"`,
		},
		{
			name: "a failed gate fails the trial whatever the score",
			block: `{"constraints":[{"id":"refunded","kind":"occurs","match":{"tool":"refund"}},
				{"id":"no-errors","kind":"absent","severity":"gate","message":"a refund failed","match":{"status":"error"}}]}`,
			s: badRefund(), score: 0, comp: ptrTo(1.0), gates: []string{"no-errors"},
			reasons: "Trace checks: score=1 | FAILED trace gates: no-errors | Trace check no-errors: a refund failed",
		},
		{
			name: "a gate that holds is no part of the score",
			block: `{"constraints":[{"id":"looked-up","kind":"occurs","match":{"tool":"get_order"}},
				{"id":"no-errors","kind":"absent","severity":"gate","match":{"status":"error"}}]}`,
			s: goodRefund(), score: 1, comp: ptrTo(1.0), pass: true, reasons: "Trace checks: score=1",
		},
		{
			name: "an undecided constraint is excluded from the mean",
			block: `{"constraints":[{"id":"refunded","kind":"occurs","match":{"tool":"refund"}},
				{"id":"user-first","kind":"first","scope":{"executor":"user"},"match":{"tool":"refund"}}]}`,
			s: badRefund(), score: 1, comp: ptrTo(1.0), pass: true, reasons: "Trace checks: score=1",
		},
		{
			name:  "only undecided constraints leave the component unscored",
			block: `{"constraints":[{"id":"user-first","kind":"first","scope":{"executor":"user"},"match":{"tool":"refund"}}]}`,
			s:     badRefund(), score: 0, pass: false,
			reasons: "Trace checks: score=n/a (no scored constraint reached a verdict) | no component was scored, yet the task asked for trace_checks (configured and weighted): nothing it asked for was counted",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := gradeTrace(t, c.block, c.s)
			if g.Score != c.score || g.BinaryPass != c.pass || g.Reasons != c.reasons {
				t.Errorf("grade = %v\nwant score %v pass %v reasons %s", g, c.score, c.pass, c.reasons)
			}
			if (g.Components.TraceChecks == nil) != (c.comp == nil) || (c.comp != nil && *g.Components.TraceChecks != *c.comp) {
				t.Errorf("component = %v, want %v", g.Components.TraceChecks, c.comp)
			}
			s := g.TraceChecksSummary
			if s == nil || s.GateFailed != (len(c.gates) > 0) || !reflect.DeepEqual(s.FailedGateIds, c.gates) {
				t.Errorf("summary = %v, want failed gates %v", s, c.gates)
			}
		})
	}
	t.Run("undecided is recorded, never beside passed", func(t *testing.T) {
		g := gradeTrace(t, `{"constraints":[{"id":"u","kind":"between","after":{"executor":"user"},"before":{"tool":"refund"},"match":{"tool":"refund"}}]}`, goodRefund())
		assertTrace(t, g, []*runnerpb.TraceConstraintResult{{Id: "u", Kind: "between", Undecided: true, Weight: 1, Severity: "scored",
			Message: "no event matches after {executor=user}, so the window never opens"}})
	})
}

func TestTraceAlternatives(t *testing.T) {
	block := `{"constraints":[{"id":"refunded","kind":"occurs","match":{"tool":"refund"}}],
		"alternatives":[
			{"id":"lookup-route","constraints":[{"id":"looked-up","kind":"precedes","first":{"tool":"get_order"},"then":{"tool":"refund"}}]},
			{"id":"direct-route","constraints":[{"id":"once","kind":"unique","match":{"tool":"refund"},"by":["order_id"]},
				{"id":"no-errors","kind":"absent","severity":"gate","match":{"status":"error"}}]}]}`
	t.Run("the highest-scoring route whose gates hold wins", func(t *testing.T) {
		g := gradeTrace(t, block, goodRefund())
		// Both score 1; the tie keeps declaration order.
		s := g.TraceChecksSummary
		if s.WinningPath != "lookup-route" || s.GateFailed || len(s.Paths) != 2 || s.Paths[0].Score != 1 || s.Paths[1].Score != 1 {
			t.Errorf("summary = %v", s)
		}
		var ids []string
		for _, r := range g.TraceChecks {
			ids = append(ids, r.Id)
		}
		if strings.Join(ids, ",") != "refunded,lookup-route/looked-up,direct-route/once,direct-route/no-errors" {
			t.Errorf("ids = %v", ids)
		}
		if g.Reasons != "Trace checks: score=1 (winning path lookup-route)" || g.Score != 1 {
			t.Errorf("grade = %v", g)
		}
	})
	t.Run("a route whose gate fails loses to a lower-scoring open one", func(t *testing.T) {
		g := gradeTrace(t, block, badRefund())
		s := g.TraceChecksSummary
		want := []*runnerpb.TracePathResult{{Id: "lookup-route", Score: 0.5}, {Id: "direct-route", Score: 0.5, GateFailed: true}}
		if s.WinningPath != "lookup-route" || s.GateFailed || len(s.Paths) != 2 ||
			s.Paths[0].String() != want[0].String() || s.Paths[1].String() != want[1].String() {
			t.Errorf("summary = %v", s)
		}
		reasons := "Trace checks: score=0.5 (winning path lookup-route) | Trace check lookup-route/looked-up: the event at position 2 matches then {tool=refund} " +
			"with no earlier event matching first {tool=get_order} (and 1 more such event)"
		if g.Reasons != reasons || g.Score != 0.5 || *g.Components.TraceChecks != 0.5 {
			t.Errorf("grade = %v\nwant reasons %s", g, reasons)
		}
	})
	t.Run("when no route's gates hold the trial fails on the best one", func(t *testing.T) {
		g := gradeTrace(t, `{"alternatives":[{"id":"a","constraints":[{"id":"g","kind":"absent","severity":"gate","match":{"status":"error"}}]}]}`, badRefund())
		s := g.TraceChecksSummary
		if s.WinningPath != "a" || !s.GateFailed || !reflect.DeepEqual(s.FailedGateIds, []string{"a/g"}) || g.BinaryPass || g.Score != 0 {
			t.Errorf("grade = %v", g)
		}
	})
}

func TestTraceBinding(t *testing.T) {
	paid := func(order string) *script {
		return (&script{}).say(task.RoleUser, "buy").
			call(task.ExecutorAgent, "place_order", `{"customer_id":"C-1"}`, task.ToolCallSuccess, `{"id":"O-7","total":10}`).
			call(task.ExecutorAgent, "confirm_payment", fmt.Sprintf(`{"order_id":%q}`, order), task.ToolCallSuccess, "paid").
			say(task.RoleAssistant, "Paid order O-7.")
	}
	bound := func(onUnbound string) string {
		return `{"constraints":[{"id":"paid-what-was-placed","kind":"occurs",` + onUnbound + `
			"bind":{"var":"oid","from":{"tool":"place_order","status":"success"},"value":"result.id"},
			"require":{"kind":"precedes","first":{"tool":"place_order"},"then":{"tool":"confirm_payment","args":{"order_id":"${oid}"}}}},
			{"id":"said-it","kind":"occurs","match":{"event":"message","role":"assistant","content_matches":"Paid"}}]}`
	}
	for _, c := range []struct {
		name    string
		block   string
		s       *script
		result  *runnerpb.TraceConstraintResult
		score   float64
		reasons string
	}{
		{
			name: "the require tree passes for the bound value", block: bound(""), s: paid("O-7"),
			result: &runnerpb.TraceConstraintResult{Id: "paid-what-was-placed", Kind: "occurs", Passed: true, Weight: 1, Severity: "scored", MatchedPositions: []int32{2, 4}},
			score:  1, reasons: "Trace checks: score=1",
		},
		{
			// The payment names another order, so no then event exists for O-7: precedes
			// holds vacuously. The binding is what makes the value matter: occurs would
			// catch it, precedes by design does not.
			name: "a vacuous require still passes", block: bound(""), s: paid("O-8"),
			result: &runnerpb.TraceConstraintResult{Id: "paid-what-was-placed", Kind: "occurs", Passed: true, Weight: 1, Severity: "scored", MatchedPositions: []int32{2}},
			score:  1, reasons: "Trace checks: score=1",
		},
		{
			name: "unbound: fail (the default) and the recorded skip", block: bound(""), s: badRefund(),
			result: &runnerpb.TraceConstraintResult{Id: "paid-what-was-placed", Kind: "occurs", Weight: 1, Severity: "scored",
				Message: "the binding yielded no assignment: no event matches bind.from {tool=place_order, status=success}"},
			score: 0,
			reasons: "Trace checks: score=0 | Trace check paid-what-was-placed: the binding yielded no assignment: no event matches bind.from {tool=place_order, status=success} | " +
				"Trace check said-it: expected at least 1 event(s) matching {event=message, role=assistant, content_matches=\"Paid\"}, found 0 | " +
				"trace_checks.constraints.precedes: skipped: the binding yielded no assignment",
		},
		{
			name: "unbound: pass", block: bound(`"on_unbound":"pass",`), s: badRefund(),
			result: &runnerpb.TraceConstraintResult{Id: "paid-what-was-placed", Kind: "occurs", Passed: true, Weight: 1, Severity: "scored"},
			score:  0.5,
			reasons: "Trace checks: score=0.5 | Trace check said-it: expected at least 1 event(s) matching {event=message, role=assistant, content_matches=\"Paid\"}, found 0 | " +
				"trace_checks.constraints.precedes: skipped: the binding yielded no assignment",
		},
		{
			name: "unbound: undecided", block: bound(`"on_unbound":"undecided",`), s: badRefund(),
			result: &runnerpb.TraceConstraintResult{Id: "paid-what-was-placed", Kind: "occurs", Undecided: true, Weight: 1, Severity: "scored",
				Message: "the binding yielded no assignment: no event matches bind.from {tool=place_order, status=success}"},
			score: 0,
			reasons: "Trace checks: score=0 | Trace check said-it: expected at least 1 event(s) matching {event=message, role=assistant, content_matches=\"Paid\"}, found 0 | " +
				"trace_checks.constraints.precedes: skipped: the binding yielded no assignment",
		},
		{
			name: "a failing assignment names the value",
			block: `{"constraints":[{"id":"paid","kind":"occurs","bind":{"var":"oid","from":{"tool":"place_order"},"value":"result.id"},
				"require":{"kind":"occurs","match":{"tool":"confirm_payment","args":{"order_id":"${oid}"}}}}]}`,
			s: paid("O-8"),
			result: &runnerpb.TraceConstraintResult{Id: "paid", Kind: "occurs", Weight: 1, Severity: "scored", MatchedPositions: []int32{2},
				Message: `with oid="O-7" (bound at position 2): expected at least 1 event(s) matching {tool=confirm_payment, args={"order_id":"${oid}"}}, found 0`},
			score: 0,
			reasons: `Trace checks: score=0 | Trace check paid: with oid="O-7" (bound at position 2): expected at least 1 event(s) matching ` +
				`{tool=confirm_payment, args={"order_id":"${oid}"}}, found 0`,
		},
		{
			name: "a bound value is matched literally inside content_matches",
			block: `{"constraints":[{"id":"told","kind":"occurs","bind":{"var":"total","from":{"tool":"place_order"},"value":"result.total"},
				"require":{"kind":"occurs","match":{"event":"message","content_matches":"total ${total}\\.$"}}}]}`,
			s: (&script{}).say(task.RoleUser, "buy").
				call(task.ExecutorAgent, "place_order", `{}`, task.ToolCallSuccess, `{"id":"O-7","total":10.5}`).
				say(task.RoleAssistant, "Your total 10.5."),
			result: &runnerpb.TraceConstraintResult{Id: "told", Kind: "occurs", Passed: true, Weight: 1, Severity: "scored", MatchedPositions: []int32{2, 3}},
			score:  1, reasons: "Trace checks: score=1",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := gradeTrace(t, c.block, c.s)
			assertTrace(t, g, []*runnerpb.TraceConstraintResult{c.result})
			if g.Score != c.score || g.Reasons != c.reasons {
				t.Errorf("grade = %v\nwant score %v reasons\n%s", g, c.score, c.reasons)
			}
		})
	}
}

func TestTraceEmptyTimelineAndUnboundVariable(t *testing.T) {
	g := gradeTrace(t, `{"constraints":[{"id":"c","kind":"occurs","match":{"tool":"refund"}}]}`, &script{})
	want := "no component was scored, yet the task asked for trace_checks (configured and weighted): nothing it asked for was counted | " +
		"trace_checks.constraints.occurs: skipped: the trial's timeline carries no events"
	if g.Reasons != want || g.TraceChecks != nil || g.TraceChecksSummary != nil || g.Components.TraceChecks != nil {
		t.Errorf("grade = %v\nwant reasons %s", g, want)
	}

	// Validation refuses this before the run; the grader still defends against a
	// TaskDescription built directly against it.
	env, tr := traceEnv(t, `{"constraints":[{"id":"c","kind":"occurs","match":{"tool":"refund"}}]}`, goodRefund())
	env.spec.Task.Grading.TraceChecks.Constraints[0].Match.Tool = "${nope}"
	_, err := New().Grade(context.Background(), env, Request{Transcript: tr})
	wantErr := `Trial 'refund:0' cannot be graded as authored: trace_checks.constraints[0] (id "c"): ${nope} names no variable an enclosing bind defines`
	if err == nil || err.Error() != wantErr {
		t.Errorf("err = %v\nwant %s", err, wantErr)
	}

	// Nested, the same defence: never a comparison against the literal text.
	env, tr = traceEnv(t, `{"constraints":[{"id":"c","kind":"occurs","match":{"tool":"refund"}}]}`, goodRefund())
	env.spec.Task.Grading.TraceChecks.Constraints[0].Match.Args = map[string]json.RawMessage{"order_id": []byte(`[{"id":"${nope}"}]`)}
	_, err = New().Grade(context.Background(), env, Request{Transcript: tr})
	if err == nil || err.Error() != wantErr {
		t.Errorf("nested: err = %v\nwant %s", err, wantErr)
	}
}

// TestTraceBindingAtAnyDepth: a ${var} is substituted wherever a selector's args or
// result hold a string, not only at the top: in an array, in an object, in an array in
// an object in an array, and mid-text. Each case passes only when the substitution
// happened: the literal "${...}" text is nowhere in the transcript.
func TestTraceBindingAtAnyDepth(t *testing.T) {
	placed := func(args, output string) *script {
		return (&script{}).say(task.RoleUser, "buy").
			call(task.ExecutorAgent, "place_order", `{"customer_id":"C-1"}`, task.ToolCallSuccess, `{"id":"O-7","total":10,"sku":"S-3"}`).
			call(task.ExecutorAgent, "confirm_payment", args, task.ToolCallSuccess, output).
			say(task.RoleAssistant, "Paid.")
	}
	block := func(bindValue, field, selector string) string {
		return `{"constraints":[{"id":"deep","kind":"occurs","bind":{"var":"v","from":{"tool":"place_order"},"value":"` + bindValue + `"},
			"require":{"kind":"occurs","match":{"tool":"confirm_payment","` + field + `":` + selector + `}}}]}`
	}
	for _, c := range []struct {
		name, block string
		s           *script
		want        float64
	}{
		{"a string in an array", block("result.id", "args", `{"orders":["${v}"]}`),
			placed(`{"orders":["O-7"]}`, "ok"), 1},
		{"a string in an array, another value", block("result.id", "args", `{"orders":["${v}"]}`),
			placed(`{"orders":["O-8"]}`, "ok"), 0},
		{"a string in an object", block("result.id", "args", `{"order":{"id":"${v}"}}`),
			placed(`{"order":{"id":"O-7"}}`, "ok"), 1},
		{"an array in an object in an array", block("result.id", "args", `{"lines":[{"refs":["x","${v}"]}]}`),
			placed(`{"lines":[{"refs":["x","O-7"]}]}`, "ok"), 1},
		{"a whole reference keeps the bound value's type", block("result.total", "args", `{"amounts":[{"value":"${v}"}]}`),
			placed(`{"amounts":[{"value":10}]}`, "ok"), 1},
		{"a whole reference keeps the bound value's type: a string 10 is not 10", block("result.total", "args", `{"amounts":[{"value":"${v}"}]}`),
			placed(`{"amounts":[{"value":"10"}]}`, "ok"), 0},
		{"mid-text, nested", block("result.sku", "args", `{"items":[{"label":"sku ${v} x2"}]}`),
			placed(`{"items":[{"label":"sku S-3 x2"}]}`, "ok"), 1},
		{"in a result path's nested value", block("result.id", "result", `{"paid":["${v}"]}`),
			placed(`{}`, `{"paid":["O-7"]}`), 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := gradeTrace(t, c.block, c.s)
			if g.Score != c.want {
				t.Errorf("score = %v, want %v; reasons: %s", g.Score, c.want, g.Reasons)
			}
		})
	}
}

// TestTraceHugeWeights: constraint weights whose naive sum overflows (+Inf, then Inf/Inf
// = NaN) still fold to the weighted mean of the route.
func TestTraceHugeWeights(t *testing.T) {
	g := gradeTrace(t, `{"constraints":[{"id":"refunded","kind":"occurs","weight":1e308,"match":{"tool":"refund"}},
		{"id":"never","kind":"occurs","weight":1e308,"match":{"tool":"place_order"}}]}`, goodRefund())
	if g.Score != 0.5 || g.GetComponents().GetTraceChecks() != 0.5 {
		t.Errorf("grade = %v, want score 0.5", g)
	}
}
