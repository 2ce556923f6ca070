package host_test

import (
	"math"
	"strings"
	"testing"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"

	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/controllers/host"
	"tolokaforge.io/operator/results/local"
	"tolokaforge.io/operator/test/fakellm"
)

const placeArgs = `{"customer_id":"C-101","items":[{"product_id":"P-001","quantity":1,"unit_price":89.99},{"product_id":"P-002","quantity":2,"unit_price":34.5}]}`

func TestScriptedAgentCompletesShop(t *testing.T) {
	s := startStack(t, local.StackConfig{})
	f := fakeLLM(t, map[string][]fakellm.Reply{"agent": {
		{ToolCalls: []fakellm.ToolCall{call("c1", "list_products", `{}`)}, Usage: fakellm.Usage{PromptTokens: 100, CompletionTokens: 10}},
		{ToolCalls: []fakellm.ToolCall{call("c2", "get_customer", `{"customer_id":"C-101"}`)}, Usage: fakellm.Usage{PromptTokens: 200, CompletionTokens: 10}},
		{ToolCalls: []fakellm.ToolCall{call("c3", "place_order", placeArgs)}, Usage: fakellm.Usage{PromptTokens: 300, CompletionTokens: 40}},
		{ToolCalls: []fakellm.ToolCall{call("c4", "confirm_payment", `{"order_id":"O-001"}`)}, Usage: fakellm.Usage{PromptTokens: 400, CompletionTokens: 10}},
		{Content: "Order O-001 is paid. Your remaining balance is 141.01.", Usage: fakellm.Usage{PromptTokens: 500, CompletionTokens: 20, ReasoningTokens: 5}},
	}})
	tk := shopTask(t)
	agent, cfg := llmActor(t, f, "agent", &task.Pricing{InputUSDPerMTok: 1, OutputUSDPerMTok: 4})
	spec := specFor(s, tk, cfg)
	var events []host.TurnEvent
	ac := attempt(s, spec, agent, nil)
	ac.Progress = func(ev host.TurnEvent) { events = append(events, ev) }
	res := host.RunAttempt(ctxT(t), ac)

	if res.GradedBy != host.GradedByRunner || res.Reason != evalv1.ReasonPassed || res.TerminationReason != task.TerminationUserStop {
		t.Fatalf("%s: %s", res, res.Message)
	}
	if g := res.Grade; !g.GetBinaryPass() || g.GetScore() != 1 || g.GetStateDiffJson() != "" {
		t.Fatalf("grade = %v", g)
	}
	if res.Turns != 5 {
		t.Fatalf("turns = %d, want 5", res.Turns)
	}
	wantUsage := host.Usage{Calls: 5, PromptTokens: 1500, CompletionTokens: 90, ReasoningTokens: 5}
	cost := res.AgentUsage.CostUSD
	res.AgentUsage.CostUSD = 0
	if res.AgentUsage != wantUsage || math.Abs(cost-(1500*1+90*4)/1e6) > 1e-12 {
		t.Fatalf("agent usage = %+v cost %g", res.AgentUsage, cost)
	}
	if res.UserUsage != (host.Usage{}) {
		t.Fatalf("scripted user usage = %+v", res.UserUsage)
	}
	// Progress: the opening, five agent turns, the user's stop.
	var lines []string
	for _, ev := range events {
		lines = append(lines, ev.Actor+":"+strings.Join(ev.ToolCalls, ",")+":"+strings.Join(ev.ToolStatuses, ","))
	}
	want := "user::|agent:list_products:success|agent:get_customer:success|agent:place_order:success|agent:confirm_payment:success|agent::|user::"
	if got := strings.Join(lines, "|"); got != want {
		t.Fatalf("progress = %s\nwant %s", got, want)
	}
	// Running totals: after the third agent turn (place_order), three turns,
	// three calls executed and the spend of three LLM calls.
	if ev := events[3]; ev.Turn != 3 || ev.ToolCallCount != 3 || ev.AgentUsage.Calls != 3 ||
		ev.AgentUsage.PromptTokens != 600 || ev.AgentUsage.CompletionTokens != 60 ||
		math.Abs(ev.AgentUsage.CostUSD-(600*1+60*4)/1e6) > 1e-12 {
		t.Fatalf("progress after turn 3 = turn %d, %d tool calls, agent usage %+v", ev.Turn, ev.ToolCallCount, ev.AgentUsage)
	}
	if last := events[len(events)-1]; last.Turn != 5 || last.ToolCallCount != 4 || last.AgentUsage.PromptTokens != 1500 {
		t.Fatalf("last progress = turn %d, %d tool calls, agent usage %+v", last.Turn, last.ToolCallCount, last.AgentUsage)
	}

	reqs := f.RequestsFor("agent")
	if len(reqs) != 5 {
		t.Fatalf("%d agent requests, want 5", len(reqs))
	}
	first := reqs[0]
	if first.Messages[0].Role != "system" || first.Messages[0].Content != tk.SystemPrompt ||
		first.Messages[1].Role != "user" || first.Messages[1].Content != ac.InitialUserMessage {
		t.Fatalf("first request messages = %+v", first.Messages[:2])
	}
	var names []string
	for _, tl := range first.Tools {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "list_products,get_customer,place_order,confirm_payment" {
		t.Fatalf("tools offered = %v", names)
	}
	// The runner's output reaches the model as the tool message of its call.
	last := reqs[4].Messages
	tm := last[len(last)-1]
	if tm.Role != "tool" || tm.ToolCallID != "c4" || !strings.Contains(tm.Content, `"status": "paid"`) {
		t.Fatalf("confirm_payment result sent as %+v", tm)
	}
	// Host mirror of the record: four agent calls in order.
	if len(res.ToolCalls) != 4 {
		t.Fatalf("record = %+v", res.ToolCalls)
	}
	for i, rc := range res.ToolCalls {
		if rc.Sequence != i || rc.Executor != task.ExecutorAgent || rc.Status != task.ToolCallSuccess || rc.CallID != "c"+string(rune('1'+i)) {
			t.Fatalf("record[%d] = %+v", i, rc)
		}
	}
}

func TestPayBeforePlacingFailsWithDiff(t *testing.T) {
	s := startStack(t, local.StackConfig{})
	f := fakeLLM(t, map[string][]fakellm.Reply{"agent": {
		{ToolCalls: []fakellm.ToolCall{call("c1", "confirm_payment", `{"order_id":"O-001"}`)}},
		{ToolCalls: []fakellm.ToolCall{call("c2", "place_order", placeArgs)}},
		{Content: "Your order O-001 is placed."},
	}})
	tk := shopTask(t)
	agent, cfg := llmActor(t, f, "agent", nil)
	res := host.RunAttempt(ctxT(t), attempt(s, specFor(s, tk, cfg), agent, nil))
	if res.GradedBy != host.GradedByRunner || res.Reason != evalv1.ReasonFailed || res.TerminationReason != task.TerminationUserStop {
		t.Fatalf("%s: %s", res, res.Message)
	}
	g := res.Grade
	if g.GetBinaryPass() || g.GetStateDiffJson() == "" || !strings.Contains(g.GetReasons(), "State: ") || strings.Contains(g.GetReasons(), "hash match") {
		t.Fatalf("grade = %v", g)
	}
	if !strings.Contains(g.GetStateDiffJson(), `"pending"`) {
		t.Fatalf("diff does not show the unpaid order: %s", g.GetStateDiffJson())
	}
	// The tool error went back to the model, and the trial went on.
	second := f.RequestsFor("agent")[1].Messages
	tm := second[len(second)-1]
	if tm.Role != "tool" || tm.ToolCallID != "c1" || tm.Content != "Error: Order 'O-001' not found" {
		t.Fatalf("error result sent as %+v", tm)
	}
	if rc := res.ToolCalls[0]; rc.Status != task.ToolCallError || rc.Output != "Order 'O-001' not found" {
		t.Fatalf("record[0] = %+v", rc)
	}
}
