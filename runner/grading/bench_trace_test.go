package grading

import (
	"context"
	"fmt"
	"testing"
	"time"

	"tolokaforge.io/operator/api/task"
)

// benchTurns is the transcript length the trace/CEL benchmark grades: turns of user
// message, a get_customer call and its result, and an assistant reply.
const benchTurns = 200

// benchTraceBlock is a realistic trace_checks block: presence, ordering, a response
// window, uniqueness, a gate and a binding.
const benchTraceBlock = `{"constraints":[
	{"id":"ordered","kind":"occurs","match":{"tool":"place_order","status":"success"}},
	{"id":"looked-up-first","kind":"precedes","first":{"tool":"get_customer"},"then":{"tool":"place_order"}},
	{"id":"answers","kind":"responds","trigger":{"event":"message","role":"user"},"response":{"event":"message","role":"assistant"},"within":4},
	{"id":"paid-once","kind":"unique","match":{"tool":"confirm_payment"},"by":["order_id"]},
	{"id":"no-errors","kind":"absent","severity":"gate","match":{"event":"tool_call","status":"error"}},
	{"id":"pays-its-order","kind":"occurs","bind":{"var":"oid","from":{"tool":"place_order"},"value":"result.id"},
		"require":{"kind":"order","sequence":[{"tool":"place_order"},{"tool":"confirm_payment","args":{"order_id":"${oid}"}},
			{"event":"message","role":"assistant","content_matches":"${oid}"}]}}]}`

const benchCustomBlock = `{"enabled":true,"checks":[
	{"name":"paid-once","expr":"timeline.filter(e, e.tool == 'confirm_payment' && e.status == 'success').size() == 1"},
	{"name":"order-paid","expr":"db.orders.exists(o, o.status == 'paid') && db.customers[0].balance < 300.0"},
	{"name":"finished","when":"termination_reason != ''","expr":"termination_reason == 'agent_done'"}]}`

// BenchmarkGradeTraceCEL grades the shop task (hash, JSONPath and transcript rules) over
// a 200-turn transcript with and without trace checks and CEL custom checks, and
// reports the ratio of the two in this run. Target <= 1.2x.
func BenchmarkGradeTraceCEL(b *testing.B) {
	db := newTestDB(b)
	env := newTrial(b, db, loadShopTask(b, nil))
	without := env.spec.Task.Grading
	with := *without
	extra, err := task.DecodeGradingConfig([]byte(`{"weights":{"trace_checks":1,"custom_checks":1},"trace_checks":` + benchTraceBlock +
		`,"custom_checks":` + benchCustomBlock + `}`))
	if err != nil {
		b.Fatal(err)
	}
	with.TraceChecks, with.CustomChecks = extra.TraceChecks, extra.CustomChecks
	with.Weights = map[string]float64{"state_checks": 0.5, "transcript_rules": 0.2, "trace_checks": 0.2, "custom_checks": 0.1}

	msgs := []turn{{Role: task.RoleSystem, Content: env.spec.Task.SystemPrompt}}
	n := 0
	step := func(tool, args string) {
		n++
		id := fmt.Sprintf("call_%d", n)
		msgs = append(msgs, calls([3]string{id, tool, args}))
		rec := env.call(b, id, task.ExecutorAgent, tool, args)
		msgs = append(msgs, toolResult(id, rec.Output))
	}
	for i := range benchTurns - 1 {
		msgs = append(msgs, user(fmt.Sprintf("Question %d: what is my balance?", i)))
		step("get_customer", `{"customer_id":"C-101"}`)
		msgs = append(msgs, assistant("Your balance is $300.00."))
	}
	msgs = append(msgs, user("Order 1 x Wireless Headphones and 2 x USB-C Hub 7-Port, please."))
	step("place_order", goldenPlaceOrderArgs)
	step("confirm_payment", `{"order_id":"O-001"}`)
	msgs = append(msgs, assistant(goldenFinal))
	transcript := wire(b, msgs...)

	grader := New()
	ctx := context.Background()
	req := Request{Transcript: transcript, TerminationReason: "agent_done"}
	grade := func(cfg *task.GradingConfig) time.Duration {
		env.spec.Task.Grading = cfg
		start := time.Now()
		g, err := grader.Grade(ctx, env, req)
		d := time.Since(start)
		if err != nil {
			b.Fatalf("grade: %v", err)
		}
		if cfg == &with && (g.Components.TraceChecks == nil || *g.Components.TraceChecks != 1 || g.Components.CustomChecks != 1) {
			b.Fatalf("the trace and CEL checks did not all pass: %v", g)
		}
		return d
	}
	grade(without)
	grade(&with)

	// The machine is shared and its load drifts, so the two are measured alternately
	// and the ratio is of the two sums.
	var withTotal, withoutTotal time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		withoutTotal += grade(without)
		b.StartTimer()
		withTotal += grade(&with)
	}
	b.StopTimer()
	per := float64(b.N)
	b.ReportMetric(float64(withoutTotal.Microseconds())/per/1e3, "without-ms")
	b.ReportMetric(float64(withTotal)/float64(withoutTotal), "x-without")
}
