package timeline

import (
	"encoding/json"
	"fmt"
	"sort"

	"tolokaforge.io/operator/api/task"
)

// Event is one entry of the trial's timeline (grading-config.md, "Trace checks"): a
// conversational turn, or a tool call joined with the runner's record of it.
type Event struct {
	Position int
	Kind     task.EventKind
	// Role is the turn's role for a message; for a tool call, the role of the turn that
	// declared it.
	Role    string
	Content string

	CallID   string
	Executor string // agent | user
	Tool     string
	// Args is the call's arguments object: the runner's record when there is one (what
	// actually ran), else the transcript's declaration.
	Args json.RawMessage
	// Status is empty when the runner holds no record of the call.
	Status task.ToolCallStatus
	Output string
}

// Timeline is the trial's events in execution order, plus what the transcript said
// beside them.
type Timeline struct {
	Policy      string // the leading system message, lifted out
	Events      []Event
	Termination task.TerminationReason
}

// Empty reports whether the trial left no event at all (trace checks and transcript
// rules then file their recorded skip).
func (t *Timeline) Empty() bool { return len(t.Events) == 0 }

// AssistantMessages returns the content of every assistant turn, in order.
func (t *Timeline) AssistantMessages() []string {
	var out []string
	for i := range t.Events {
		if e := &t.Events[i]; e.Kind == task.EventMessage && e.Role == task.RoleAssistant {
			out = append(out, e.Content)
		}
	}
	return out
}

func executorOf(role string) string {
	if role == task.RoleUser {
		return task.ExecutorUser
	}
	return task.ExecutorAgent
}

// RoleOf is the role of the turn that declares an executor's tool calls (the tests
// write transcripts from executors).
func RoleOf(executor string) string {
	if executor == task.ExecutorUser {
		return task.RoleUser
	}
	return task.RoleAssistant
}

func recordExecutor(r *task.RecordedToolCall) string {
	if r.Executor == "" {
		return task.ExecutorAgent
	}
	return r.Executor
}

// Build joins the decoded transcript (leading system message already lifted)
// and the runner's tool-call record by call_id. A message list with no conversational
// content (hash-only grading may omit the transcript) yields the record alone. Any
// contradiction between the two views is returned as the detail of a
// TimelineInconsistencyError naming the offending key.
func Build(msgs []task.Message, records []task.RecordedToolCall) (*Timeline, string) {
	byID := make(map[string]*task.RecordedToolCall, len(records))
	for i := range records {
		r := &records[i]
		if prev, dup := byID[r.CallID]; dup {
			return nil, fmt.Sprintf("call_id %q is recorded twice (sequences %d and %d)", r.CallID, prev.Sequence, r.Sequence)
		}
		byID[r.CallID] = r
	}
	tl := &Timeline{}
	if !conversational(msgs) {
		ordered := make([]*task.RecordedToolCall, 0, len(records))
		for i := range records {
			ordered = append(ordered, &records[i])
		}
		sort.SliceStable(ordered, func(a, b int) bool { return ordered[a].Sequence < ordered[b].Sequence })
		for _, r := range ordered {
			tl.Events = append(tl.Events, recordEvent(r, RoleOf(recordExecutor(r)), r.ToolName))
		}
		renumber(tl)
		return tl, ""
	}

	declared := map[string]int{} // call id -> index of its tool_call event
	declaredAt := map[string]int{}
	for mi, m := range msgs {
		switch m.Role {
		case task.RoleUser, task.RoleAssistant:
			tl.Events = append(tl.Events, Event{Kind: task.EventMessage, Role: m.Role, Content: m.Content})
			for _, tc := range m.ToolCalls {
				if at, dup := declaredAt[tc.ID]; dup {
					return nil, fmt.Sprintf("call_id %q is declared twice (messages %d and %d)", tc.ID, at, mi)
				}
				declaredAt[tc.ID] = mi
				ev := Event{
					Kind: task.EventToolCall, Role: m.Role, CallID: tc.ID,
					Executor: executorOf(m.Role), Tool: tc.Function.Name,
					Args: json.RawMessage(tc.Function.Arguments),
				}
				if r, ok := byID[tc.ID]; ok {
					if r.ToolName != tc.Function.Name {
						return nil, fmt.Sprintf("call_id %q: the transcript declares tool %q (message %d) but the runner recorded tool %q (sequence %d)",
							tc.ID, tc.Function.Name, mi, r.ToolName, r.Sequence)
					}
					if ex := recordExecutor(r); ex != ev.Executor {
						return nil, fmt.Sprintf("call_id %q: declared by the %s turn at message %d but recorded for executor %q (sequence %d)",
							tc.ID, m.Role, mi, ex, r.Sequence)
					}
					ev = recordEvent(r, m.Role, tc.Function.Name)
				}
				declared[tc.ID] = len(tl.Events)
				tl.Events = append(tl.Events, ev)
			}
		case task.RoleTool:
			idx, ok := declared[m.ToolCallID]
			if !ok {
				return nil, fmt.Sprintf("tool result at message %d answers call_id %q, which no earlier tool_calls entry declares", mi, m.ToolCallID)
			}
			if ev := &tl.Events[idx]; ev.Status == "" && ev.Output == "" {
				ev.Output = m.Content // no record: the transcript's result is all there is
			}
		}
	}
	var unasked []*task.RecordedToolCall
	for i := range records {
		if _, ok := declaredAt[records[i].CallID]; !ok {
			unasked = append(unasked, &records[i])
		}
	}
	if len(unasked) > 0 {
		sort.SliceStable(unasked, func(a, b int) bool { return unasked[a].Sequence < unasked[b].Sequence })
		r := unasked[0]
		more := ""
		if len(unasked) > 1 {
			more = fmt.Sprintf(" (and %d more)", len(unasked)-1)
		}
		return nil, fmt.Sprintf("recorded call_id %q (tool %q, sequence %d) was never asked for by the transcript%s",
			r.CallID, r.ToolName, r.Sequence, more)
	}
	renumber(tl)
	return tl, ""
}

func recordEvent(r *task.RecordedToolCall, role, tool string) Event {
	return Event{
		Kind: task.EventToolCall, Role: role, CallID: r.CallID,
		Executor: recordExecutor(r), Tool: tool, Args: r.Arguments,
		Status: r.Status, Output: r.Output,
	}
}

// conversational reports whether msgs carry anything the timeline is built from: a user
// or assistant turn, or a tool result.
func conversational(msgs []task.Message) bool {
	for _, m := range msgs {
		switch m.Role {
		case task.RoleUser, task.RoleAssistant, task.RoleTool:
			return true
		}
	}
	return false
}

func renumber(tl *Timeline) {
	for i := range tl.Events {
		tl.Events[i].Position = i
	}
}
