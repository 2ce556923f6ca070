package timeline

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"tolokaforge.io/operator/api/task"
)

func rec(seq int, id, tool, executor string, status task.ToolCallStatus) task.RecordedToolCall {
	return task.RecordedToolCall{CallID: id, Sequence: seq, ToolName: tool, Arguments: json.RawMessage(`{"k":1}`),
		Executor: executor, Status: status, Output: "out-" + id}
}

// The transcript builders of the grading harness (harness_test.go), for the turns these
// tests write.
func user(content string) task.Message { return task.Message{Role: task.RoleUser, Content: content} }
func assistant(content string) task.Message {
	return task.Message{Role: task.RoleAssistant, Content: content}
}
func toolResult(id, content string) task.Message {
	return task.Message{Role: task.RoleTool, Content: content, ToolCallID: id}
}

// calls is an assistant turn carrying tool calls (id, name, arguments triples).
func calls(cs ...[3]string) task.Message {
	m := task.Message{Role: task.RoleAssistant}
	for _, c := range cs {
		m.ToolCalls = append(m.ToolCalls, task.ToolCall{ID: c[0], Type: "function", Function: task.FunctionCall{Name: c[1], Arguments: c[2]}})
	}
	return m
}

func describeEvents(tl *Timeline) string {
	var parts []string
	for _, e := range tl.Events {
		if e.Kind == task.EventMessage {
			parts = append(parts, fmt.Sprintf("%d:%s:%q", e.Position, e.Role, e.Content))
		} else {
			parts = append(parts, fmt.Sprintf("%d:call:%s:%s:%s:%s:%s:%s", e.Position, e.CallID, e.Executor, e.Tool, e.Status, e.Args, e.Output))
		}
	}
	return strings.Join(parts, " ")
}

func TestBuildTimeline(t *testing.T) {
	for _, c := range []struct {
		name    string
		msgs    []task.Message
		records []task.RecordedToolCall
		want    string
		err     string
	}{
		{
			name: "calls joined to records by id, parallel calls to one tool kept apart",
			msgs: []task.Message{user("go"),
				calls([3]string{"a", "get", `{"k":2}`}, [3]string{"b", "get", `{"k":2}`}),
				toolResult("b", "B"), toolResult("a", "A"), assistant("done")},
			records: []task.RecordedToolCall{rec(1, "b", "get", "agent", task.ToolCallError), rec(0, "a", "get", "", task.ToolCallSuccess)},
			want:    `0:user:"go" 1:assistant:"" 2:call:a:agent:get:success:{"k":1}:out-a 3:call:b:agent:get:error:{"k":1}:out-b 4:assistant:"done"`,
		},
		{
			name:    "a declared call the runner never recorded keeps the transcript's view",
			msgs:    []task.Message{calls([3]string{"a", "get", `{"k":3}`}), toolResult("a", "from transcript")},
			records: nil,
			want:    `0:assistant:"" 1:call:a:agent:get::{"k":3}:from transcript`,
		},
		{
			name: "a user turn's calls belong to the user executor",
			msgs: func() []task.Message {
				m := calls([3]string{"u", "check", "{}"})
				m.Role = task.RoleUser
				return []task.Message{m}
			}(),
			records: []task.RecordedToolCall{rec(0, "u", "check", "user", task.ToolCallSuccess)},
			want:    `0:user:"" 1:call:u:user:check:success:{"k":1}:out-u`,
		},
		{
			name:    "no conversational message: the record alone, in sequence order",
			msgs:    []task.Message{{Role: task.RoleSystem, Content: "mid-trace system turns are not events"}},
			records: []task.RecordedToolCall{rec(1, "b", "y", "user", task.ToolCallSuccess), rec(0, "a", "x", "agent", task.ToolCallTimeout)},
			want:    `0:call:a:agent:x:timeout:{"k":1}:out-a 1:call:b:user:y:success:{"k":1}:out-b`,
		},
		{
			name: "a recorded call the transcript never asked for",
			msgs: []task.Message{user("hi")}, records: []task.RecordedToolCall{rec(0, "z", "x", "agent", task.ToolCallSuccess)},
			err: `recorded call_id "z" (tool "x", sequence 0) was never asked for by the transcript`,
		},
		{
			name: "a tool result for an undeclared call",
			msgs: []task.Message{toolResult("q", "?")},
			err:  `tool result at message 0 answers call_id "q", which no earlier tool_calls entry declares`,
		},
		{
			name: "a tool result before its declaration",
			msgs: []task.Message{toolResult("a", "early"), calls([3]string{"a", "x", "{}"})},
			err:  `tool result at message 0 answers call_id "a", which no earlier tool_calls entry declares`,
		},
		{
			name:    "a name mismatch",
			msgs:    []task.Message{calls([3]string{"a", "x", "{}"})},
			records: []task.RecordedToolCall{rec(4, "a", "y", "agent", task.ToolCallSuccess)},
			err:     `call_id "a": the transcript declares tool "x" (message 0) but the runner recorded tool "y" (sequence 4)`,
		},
		{
			name:    "an executor mismatch",
			msgs:    []task.Message{calls([3]string{"a", "x", "{}"})},
			records: []task.RecordedToolCall{rec(0, "a", "x", "user", task.ToolCallSuccess)},
			err:     `call_id "a": declared by the assistant turn at message 0 but recorded for executor "user" (sequence 0)`,
		},
		{
			name: "one id declared twice",
			msgs: []task.Message{calls([3]string{"a", "x", "{}"}), calls([3]string{"a", "x", "{}"})},
			err:  `call_id "a" is declared twice (messages 0 and 1)`,
		},
		{
			name:    "one id recorded twice",
			records: []task.RecordedToolCall{rec(0, "a", "x", "agent", task.ToolCallSuccess), rec(1, "a", "x", "agent", task.ToolCallSuccess)},
			err:     `call_id "a" is recorded twice (sequences 0 and 1)`,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			tl, detail := Build(c.msgs, c.records)
			if detail != c.err {
				t.Fatalf("inconsistency = %q, want %q", detail, c.err)
			}
			if c.err != "" {
				return
			}
			if got := describeEvents(tl); got != c.want {
				t.Errorf("events:\n got %s\nwant %s", got, c.want)
			}
			full := append([]task.Message{{Role: task.RoleSystem, Content: "policy"}}, c.msgs...)
			checkPositions(t, full, c.records, tl)
		})
	}
}

// checkPositions asserts that task.TimelinePositions, which the host writes into
// trajectory.yaml, numbers msgs (leading system message included) and records exactly
// as the timeline the trace checks ran on: the message events in order, each call event
// by its call_id, and nothing else.
func checkPositions(t *testing.T, msgs []task.Message, records []task.RecordedToolCall, tl *Timeline) {
	t.Helper()
	pos := task.TimelinePositions(msgs, records)
	var msgPos []int
	for _, p := range pos.Messages {
		if p >= 0 {
			msgPos = append(msgPos, p)
		}
	}
	var events []int
	for _, e := range tl.Events {
		if e.Kind == task.EventToolCall {
			if p, ok := pos.Calls[e.CallID]; !ok || p != e.Position {
				t.Fatalf("call %s at position %d; TimelinePositions says %d (%t)", e.CallID, e.Position, p, ok)
			}
			continue
		}
		events = append(events, e.Position)
	}
	if fmt.Sprint(msgPos) != fmt.Sprint(events) {
		t.Fatalf("message positions %v; TimelinePositions says %v", events, msgPos)
	}
	if len(msgPos)+len(pos.Calls) != len(tl.Events) {
		t.Fatalf("TimelinePositions numbers %d events, the timeline has %d", len(msgPos)+len(pos.Calls), len(tl.Events))
	}
}

// FuzzTimeline feeds arbitrary transcript payloads through the wire decoder and the
// join: it never panics, and a transcript whose every declared call is recorded joins
// with each record exactly once.
func FuzzTimeline(f *testing.F) {
	f.Add([]byte(`[{"role":"system","content":"p"},{"role":"user","content":"hi"},{"role":"assistant","content":"","tool_calls":[{"id":"a","function":{"name":"x","arguments":"{}"}}]},{"role":"tool","content":"r","tool_call_id":"a"}]`))
	f.Add([]byte(`[{"role":"tool","content":"r","tool_call_id":"zz"}]`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`[{"role":"assistant","content":null,"tool_calls":[{"id":"a","function":{"name":"x","arguments":"{"}},{"id":"a","function":{"name":"x","arguments":"{}"}}]}]`))
	f.Add([]byte(`{"role":"user"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		msgs, err := task.DecodeTranscriptWire(data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "ValueError: ") {
				t.Fatalf("decode error %q does not start with ValueError", err)
			}
			return
		}
		_, rest := task.SplitLeadingSystemMessage(msgs)
		var records []task.RecordedToolCall
		seen := map[string]bool{}
		dup := false
		for _, m := range rest {
			for _, tc := range m.ToolCalls {
				if seen[tc.ID] {
					dup = true
				}
				seen[tc.ID] = true
				records = append(records, task.RecordedToolCall{CallID: tc.ID, Sequence: len(records), ToolName: tc.Function.Name,
					Executor: executorOf(m.Role), Status: task.ToolCallSuccess})
			}
		}
		tl, detail := Build(rest, records)
		if detail != "" {
			return // duplicates, or results before their calls
		}
		if dup {
			t.Fatalf("a duplicate call id joined: %s", describeEvents(tl))
		}
		n := 0
		for i, e := range tl.Events {
			if e.Position != i {
				t.Fatalf("position %d at index %d", e.Position, i)
			}
			if e.Kind == task.EventToolCall {
				n++
				if e.Status != task.ToolCallSuccess {
					t.Fatalf("call %s lost its record", e.CallID)
				}
			}
		}
		if n != len(records) {
			t.Fatalf("%d call events for %d records", n, len(records))
		}
		checkPositions(t, msgs, records, tl)
	})
}
