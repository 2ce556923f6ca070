package task

import "sort"

// positions is where a trial's events sit on its timeline (grading-config.md,
// "Trace checks"): the numbering every trace check's matched_positions and
// every custom check's timeline[i].position use, so trajectory.yaml can write
// it beside each message and tool call and a reader can resolve a position
// without re-deriving the runner's join.
type positions struct {
	// Messages[i] is the position of transcript message i, or -1 for a
	// message that is not an event (the leading system message, a tool
	// result, a later system message).
	Messages []int
	// Calls maps a call_id to the position of its tool_call event.
	Calls map[string]int
}

// TimelinePositions numbers the events of a transcript (leading system
// message included, as the host keeps it) and the runner's tool-call record
// the way the runner's grading timeline does:
//
//   - when the transcript carries a user or assistant turn or a tool result,
//     each user or assistant message is one event (a text-less turn that only
//     carried tool calls included), immediately followed by one tool_call
//     event per entry of its tool_calls, in order; tool results and system
//     messages are not events;
//   - otherwise (hash-only grading may send no transcript) the events are the
//     recorded calls in sequence order.
//
// positions are 0-based and dense. The runner checks the two views agree
// before it grades; this function only numbers them.
func TimelinePositions(msgs []Message, records []RecordedToolCall) positions {
	p := positions{Messages: make([]int, len(msgs)), Calls: map[string]int{}}
	for i := range p.Messages {
		p.Messages[i] = -1
	}
	start := 0
	if len(msgs) > 0 && msgs[0].Role == RoleSystem {
		start = 1
	}
	conversational := false
	for _, m := range msgs[start:] {
		if m.Role == RoleUser || m.Role == RoleAssistant || m.Role == RoleTool {
			conversational = true
			break
		}
	}
	n := 0
	if !conversational {
		ordered := make([]RecordedToolCall, len(records))
		copy(ordered, records)
		sort.SliceStable(ordered, func(a, b int) bool { return ordered[a].Sequence < ordered[b].Sequence })
		for _, r := range ordered {
			p.Calls[r.CallID] = n
			n++
		}
		return p
	}
	for i := start; i < len(msgs); i++ {
		m := msgs[i]
		if m.Role != RoleUser && m.Role != RoleAssistant {
			continue
		}
		p.Messages[i] = n
		n++
		for _, tc := range m.ToolCalls {
			p.Calls[tc.ID] = n
			n++
		}
	}
	return p
}
