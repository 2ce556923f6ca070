package host

import (
	"context"
	"strings"
	"testing"

	"tolokaforge.io/operator/api/task"
)

func TestCallIDs(t *testing.T) {
	c := newCallIDs()
	in := []string{"call_0", "call_0", "call_1", "call_0", "", "call_0#1", "", "call_1"}
	want := []string{"call_0", "call_0#1", "call_1", "call_0#2", "call_1#1", "call_0#1#1", "call_2", "call_1#2"}
	for i, id := range in {
		if got := c.assign(id); got != want[i] {
			t.Fatalf("assign #%d (%q) = %q, want %q", i, id, got, want[i])
		}
	}
}

func TestCanonicalArgs(t *testing.T) {
	cases := map[string]string{
		`{"b": 1, "a": [1, 2.50]}`: `{"a":[1,2.50],"b":1}`,
		"  ":                       "{}",
		"":                         "{}",
		"null":                     "{}",
		"{bad json":                "{bad json",
		`{"a":1} {"b":2}`:          `{"a":1} {"b":2}`,
		`"<&>"`:                    `"<&>"`,
	}
	for in, want := range cases {
		if got := canonicalArgs(in); got != want {
			t.Errorf("canonicalArgs(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzCanonicalArgs(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"b": [1, {"c": null}]}`, "", "null", "[", `"x"`, "1e400", `{"a":1}{}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		once := canonicalArgs(s)
		if twice := canonicalArgs(once); twice != once {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, once, twice)
		}
	})
}

func turnWith(content string, calls ...string) Turn {
	t := Turn{Content: content}
	for _, c := range calls {
		name, args, _ := strings.Cut(c, " ")
		t.ToolCalls = append(t.ToolCalls, task.ToolCall{Function: task.FunctionCall{Name: name, Arguments: args}})
	}
	return t
}

func TestStuckDetector(t *testing.T) {
	cases := []struct {
		name  string
		turns []Turn
		stuck int // index of the turn that is stuck, -1 none
	}{
		{"four repeats are fine", []Turn{turnWith("", "a {}"), turnWith("", "a {}"), turnWith("", "a {}"), turnWith("", "a {}")}, -1},
		{"fifth repeat", []Turn{turnWith("", "a {}"), turnWith("", "a {}"), turnWith("", "a {}"), turnWith("", "a {}"), turnWith("", "a {}")}, 4},
		{"text between does not break the row", []Turn{turnWith("", "a {}", "a {}"), turnWith("hm"), turnWith("", "a {}", "a {}"), turnWith("", "a {}")}, 3},
		{"a different call breaks the row", []Turn{turnWith("", "a {}", "a {}", "a {}", "a {}"), turnWith("", "b {}"), turnWith("", "a {}", "a {}", "a {}", "a {}")}, -1},
		{"different arguments break the row", []Turn{turnWith("", `a {"x":1}`, `a {"x":1}`, `a {"x":2}`, `a {"x":1}`, `a {"x":1}`)}, -1},
		{"two idle turns are fine", []Turn{turnWith(""), turnWith(" \n"), turnWith("hi"), turnWith(""), turnWith("")}, -1},
		{"third idle turn", []Turn{turnWith("x"), turnWith(""), turnWith(" "), turnWith("")}, 3},
	}
	for _, tc := range cases {
		var s stuckDetector
		got := -1
		for i, tu := range tc.turns {
			if stuck, _ := s.observe(tu); stuck {
				got = i
				break
			}
		}
		if got != tc.stuck {
			t.Errorf("%s: stuck at %d, want %d", tc.name, got, tc.stuck)
		}
	}
}

func TestIsProtocolSkew(t *testing.T) {
	cases := map[string]bool{
		"engine protocol version 2 is below 3, the minimum this runner accepts: rebuild the runner image": true,
		"engine_protocol_version 1 < required 2":                                                          true,
		"EngineProtocolVersion too old":                                                                   true,
		"unsupported protocol version":                                                                    true,
		"engine/image protocol skew":                                                                      true,
		"version skew between host and runner":                                                            true,
		"Invalid trial_spec_json: task.agent_tools[0].source.invocation_style: \"x\"":                     false,
		`Tool reconstruction failed: tool "book": tau_sync cannot run in the Go runner`:                   false,
		"Trial 'x:0' is already registered":                                                               false,
		"":                                                                                                false,
	}
	for msg, want := range cases {
		if got := isProtocolSkew(msg); got != want {
			t.Errorf("isProtocolSkew(%q) = %t, want %t", msg, got, want)
		}
	}
}

func TestScriptedUser(t *testing.T) {
	u := &ScriptedUser{Lines: []task.ScriptedLine{
		{Message: "I want a hub."},
		{Message: "Yes, pay with my balance.", IfAssistantContains: "PAY"},
		{Message: "Thanks."},
	}}
	var conv []task.Message
	say := func(agent string) string {
		if agent != "" {
			conv = append(conv, task.Message{Role: task.RoleUser, Content: agent})
		}
		turn, err := u.Next(context.Background(), conv, nil)
		if err != nil {
			t.Fatal(err)
		}
		conv = append(conv, task.Message{Role: task.RoleAssistant, Content: turn.Content})
		return turn.Content
	}
	steps := []struct{ agent, want string }{
		{"", "I want a hub."},
		{"Which colour?", scriptedFiller}, // the next line waits for "pay"
		{"Shall I charge you? I can pay it now.", "Yes, pay with my balance."},
		{"Done.", "Thanks."},
		{"Anything else?", StopMarker},
		{"Bye.", StopMarker},
	}
	for i, st := range steps {
		if got := say(st.agent); got != st.want {
			t.Fatalf("step %d: user said %q, want %q", i, got, st.want)
		}
	}
}

func TestDefaultUser(t *testing.T) {
	scripted := &task.TaskDescription{UserSimulator: &task.UserSimulatorConfig{Mode: task.UserSimScripted,
		ScriptedFlow: []task.ScriptedLine{{Message: "a"}, {Message: "b"}}}}
	llm := &task.TaskDescription{UserSimulator: &task.UserSimulatorConfig{Mode: task.UserSimLLM,
		ScriptedFlow: []task.ScriptedLine{{Message: "ignored"}}}}
	cases := []struct {
		td      *task.TaskDescription
		initial string
		want    []string
	}{
		{scripted, "hello", []string{"a", "b"}},
		{llm, "hello", []string{"hello"}},
		{nil, "hello", []string{"hello"}},
		{nil, "", nil},
		// No opening line: the user asks for the task as described.
		{&task.TaskDescription{Description: "  Buy two hubs.\n"}, "", []string{"Buy two hubs."}},
		{&task.TaskDescription{}, "", nil},
	}
	for i, tc := range cases {
		u := DefaultUser(tc.td, tc.initial)
		var got []string
		for _, l := range u.Lines {
			got = append(got, l.Message)
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("case %d: lines %q, want %q", i, got, tc.want)
		}
	}
}
