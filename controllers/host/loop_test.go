package host_test

import (
	"strings"
	"testing"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"

	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/controllers/host"
	"tolokaforge.io/operator/results/local"
	"tolokaforge.io/operator/test/fakellm"
)

func TestStopMarkers(t *testing.T) {
	s := startStack(t, local.StackConfig{})
	cases := []struct {
		name   string
		agent  []fakellm.Reply
		user   []fakellm.Reply // nil: a scripted user
		lines  []string        // the scripted user's lines (nil: the default user)
		term   task.TerminationReason
		turns  int
		agentN int
	}{
		{"agent writes the marker", []fakellm.Reply{calcCall("a", "1+1"), text("2. ###STOP###")}, []fakellm.Reply{text("what is 1+1?")}, nil,
			task.TerminationAgentDone, 2, 2},
		{"llm user writes the marker", []fakellm.Reply{text("It is 2.")}, []fakellm.Reply{text("what is 1+1?"), text("thanks ###STOP###")}, nil,
			task.TerminationUserStop, 1, 1},
		{"scripted user runs out of lines", []fakellm.Reply{text("It is 2.")}, nil, nil, task.TerminationUserStop, 1, 1},
		// Matching is case-sensitive: "###stop###" is not the marker (the
		// Python host lowercased the text and never matched at all).
		{"lower-case marker is just text", []fakellm.Reply{text("###stop###"), text("###STOP###")}, nil, []string{"q1", "q2"}, task.TerminationAgentDone, 2, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			scripts := map[string][]fakellm.Reply{"agent": tc.agent}
			if tc.user != nil {
				scripts["user"] = tc.user
			}
			f := fakeLLM(t, scripts)
			td := calcTask(t)
			agent, cfg := llmActor(t, f, "agent", nil)
			ac := attempt(s, specFor(s, td, cfg), agent, nil)
			if tc.user != nil {
				ac.User = llmUser(t, f, "user", td, "")
			}
			if tc.lines != nil {
				ac.User = host.NewScriptedUser(tc.lines...)
			}
			res := host.RunAttempt(ctxT(t), ac)
			if res.GradedBy != host.GradedByRunner || res.TerminationReason != tc.term || res.Turns != tc.turns {
				t.Fatalf("%s: %s", res, res.Message)
			}
			if n := len(f.RequestsFor("agent")); n != tc.agentN {
				t.Fatalf("%d agent requests, want %d", n, tc.agentN)
			}
			last := res.Transcript[len(res.Transcript)-1]
			if !strings.Contains(last.Content, host.StopMarker) {
				t.Fatalf("last message %+v does not carry the marker", last)
			}
		})
	}
}

func TestMaxTurns(t *testing.T) {
	s := startStack(t, local.StackConfig{})
	f := fakeLLM(t, map[string][]fakellm.Reply{"agent": {calcCall("a", "1"), calcCall("b", "2"), calcCall("c", "3"), calcCall("d", "4")}})
	agent, cfg := llmActor(t, f, "agent", nil)
	ac := attempt(s, specFor(s, calcTask(t), cfg), agent, nil)
	ac.MaxTurns = 3
	res := host.RunAttempt(ctxT(t), ac)
	if res.GradedBy != host.GradedByRunner || res.TerminationReason != task.TerminationMaxTurns || res.Turns != 3 || len(res.ToolCalls) != 3 {
		t.Fatalf("%s: %s", res, res.Message)
	}
	if n := len(f.RequestsFor("agent")); n != 3 {
		t.Fatalf("%d agent requests, want 3", n)
	}
}

func TestStuckDetection(t *testing.T) {
	s := startStack(t, local.StackConfig{})
	same := func(args string) fakellm.Reply {
		return fakellm.Reply{ToolCalls: []fakellm.ToolCall{call("", "calculator", args)}}
	}
	cases := []struct {
		name     string
		agent    []fakellm.Reply
		user     []fakellm.Reply
		turns    int
		executed int
		msg      string
	}{
		{"same call five times", []fakellm.Reply{same(`{"expression":"1+1"}`), same(`{"expression": "1+1"}`), same(`{ "expression":"1+1"}`), same(`{"expression":"1+1"}`), same(`{"expression":"1+1"}`)},
			nil, 5, 4, `stuck: tool call calculator with arguments {"expression":"1+1"} 5 times in a row`},
		{"five in one turn", []fakellm.Reply{{ToolCalls: []fakellm.ToolCall{
			call("", "think", `{"thought":"x"}`), call("", "think", `{"thought":"x"}`), call("", "think", `{"thought":"x"}`),
			call("", "think", `{"thought":"x"}`), call("", "think", `{"thought":"x"}`)}}},
			nil, 1, 0, `stuck: tool call think with arguments {"thought":"x"} 5 times in a row`},
		{"idle turns", []fakellm.Reply{text(""), text("  "), text("")}, nil, 3, 0,
			"stuck: 3 agent turns in a row with neither text nor a tool call"},
		{"user never answers", []fakellm.Reply{text("hello?")},
			[]fakellm.Reply{text("hi"), text(""), text(""), text(""), text(""), text(""), text(""), text(""), text("")}, 1, 0,
			"stuck: the user simulator produced no message for the agent in 8 rounds"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			scripts := map[string][]fakellm.Reply{"agent": tc.agent}
			if tc.user != nil {
				scripts["user"] = tc.user
			}
			f := fakeLLM(t, scripts)
			td := calcTask(t)
			agent, cfg := llmActor(t, f, "agent", nil)
			ac := attempt(s, specFor(s, td, cfg), agent, nil)
			if tc.user != nil {
				ac.User = llmUser(t, f, "user", td, "")
			}
			res := host.RunAttempt(ctxT(t), ac)
			if res.GradedBy != host.GradedByHost || res.Reason != evalv1.ReasonStuckDetected ||
				res.TerminationReason != task.TerminationStuckDetected || res.Turns != tc.turns || res.Message != tc.msg {
				t.Fatalf("%s: %q", res, res.Message)
			}
			if len(res.ToolCalls) != tc.executed {
				t.Fatalf("%d calls executed, want %d", len(res.ToolCalls), tc.executed)
			}
			g := res.Grade
			if g.GetScore() != 0 || g.GetBinaryPass() || g.GetReasons() != "Not graded: the trial ended with termination_reason stuck_detected ("+tc.msg+")" ||
				g.GetComponents().GetStateChecks() != -1 {
				t.Fatalf("self grade = %v", g)
			}
		})
	}
}

func TestDuplicateProviderToolCallIDs(t *testing.T) {
	s := startStack(t, local.StackConfig{})
	f := fakeLLM(t, map[string][]fakellm.Reply{"agent": {
		{ToolCalls: []fakellm.ToolCall{call("call_0", "calculator", `{"expression":"1+1"}`), call("call_0", "calculator", `{"expression":"1+1"}`)}},
		{ToolCalls: []fakellm.ToolCall{call("call_0", "calculator", `{"expression":"2+2"}`), call("call_0#1", "think", `{"thought":"a"}`)}},
		text("done ###STOP###"),
	}})
	agent, cfg := llmActor(t, f, "agent", nil)
	res := host.RunAttempt(ctxT(t), attempt(s, specFor(s, calcTask(t), cfg), agent, nil))
	// Graded: the runner joined every call to its result by these ids.
	if res.GradedBy != host.GradedByRunner || res.TerminationReason != task.TerminationAgentDone {
		t.Fatalf("%s: %s", res, res.Message)
	}
	var ids []string
	for _, rc := range res.ToolCalls {
		ids = append(ids, rc.CallID)
	}
	if got := strings.Join(ids, ","); got != "call_0,call_0#1,call_0#2,call_0#1#1" {
		t.Fatalf("call ids = %s", got)
	}
	// The model saw its calls under the same ids, joined to their results.
	msgs := f.RequestsFor("agent")[2].Messages
	var sent []string
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			sent = append(sent, "call:"+c.ID)
		}
		if m.Role == "tool" {
			sent = append(sent, "result:"+m.ToolCallID)
		}
	}
	want := "call:call_0,call:call_0#1,result:call_0,result:call_0#1,call:call_0#2,call:call_0#1#1,result:call_0#2,result:call_0#1#1"
	if got := strings.Join(sent, ","); got != want {
		t.Fatalf("sent %s\nwant %s", got, want)
	}
}
