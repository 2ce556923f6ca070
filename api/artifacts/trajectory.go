package artifacts

import (
	"time"
	"tolokaforge.io/operator/api/result"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"

	"tolokaforge.io/operator/api/task"
)

type trajectory struct {
	TrialID string `json:"trial_id"`
	// The record's fields (namespace, trial, campaign, agent) inline.
	result.Record
	RunID             string              `json:"run_id,omitempty"`
	AttemptID         string              `json:"attempt_id,omitempty"`
	TaskID            string              `json:"task_id"`
	TrialIndex        int                 `json:"trial_index"`
	Attempt           int                 `json:"attempt"`
	TraceID           string              `json:"trace_id,omitempty"`
	Outcome           string              `json:"outcome"`
	Reason            string              `json:"reason,omitempty"`
	Message           string              `json:"message,omitempty"`
	TerminationReason string              `json:"termination_reason"`
	GradingError      string              `json:"grading_error,omitempty"`
	Turns             int                 `json:"turns"`
	StartTime         time.Time           `json:"start_time"`
	EndTime           time.Time           `json:"end_time"`
	Messages          []trajectoryMessage `json:"messages"`
	ToolCalls         []trajectoryRecord  `json:"tool_calls"`
}

// Every event of the grading timeline carries its position (task.TimelinePositions,
// the runner's numbering), so a trace check's matched_positions and a custom check's
// timeline[i] resolve here: a message event on its message, a tool_call event on the
// message's tool_calls entry and on the recorded call. Messages that are not events
// (the leading system message, tool results) carry none.
type trajectoryMessage struct {
	Role       string               `json:"role"`
	Content    string               `json:"content"`
	Position   *int                 `json:"position,omitempty"`
	ToolCalls  []trajectoryToolCall `json:"tool_calls,omitempty"`
	ToolCallID string               `json:"tool_call_id,omitempty"`
	Timestamp  time.Time            `json:"timestamp"`
}

type trajectoryToolCall struct {
	task.ToolCall
	Position *int `json:"position,omitempty"`
}

type trajectoryRecord struct {
	task.RecordedToolCall
	Position *int `json:"position,omitempty"`
}

func trajectoryDoc(a *Attempt) trajectory {
	t := trajectory{
		TrialID: a.TrialID, Record: a.Record, RunID: a.RunID, AttemptID: a.AttemptID, TaskID: a.TaskID,
		TrialIndex: a.TrialIndex, Attempt: a.AttemptNumber, TraceID: a.TraceID,
		Outcome: a.Outcome, Reason: a.Reason, Message: a.Message,
		TerminationReason: a.TerminationReason,
		Turns:             a.Turns,
		StartTime:         a.StartTime.UTC(), EndTime: a.EndTime.UTC(),
		Messages:  make([]trajectoryMessage, 0, len(a.Messages)),
		ToolCalls: make([]trajectoryRecord, 0, len(a.ToolCalls)),
	}
	if a.Outcome == string(evalv1.OutcomeGradingFailed) {
		// The trial is still counted and its bundle still written; the cause
		// is recoverable from here, as in Tolokaforge's Trajectory.grading_error.
		t.GradingError = a.Message
	}
	msgs := make([]task.Message, len(a.Messages))
	for i, m := range a.Messages {
		msgs[i] = m.Message
	}
	pos := task.TimelinePositions(msgs, a.ToolCalls)
	at := func(p int, ok bool) *int {
		if !ok || p < 0 {
			return nil
		}
		return &p
	}
	for i, m := range a.Messages {
		tm := trajectoryMessage{
			Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID,
			Position: at(pos.Messages[i], true), Timestamp: m.Timestamp.UTC(),
		}
		for _, tc := range m.ToolCalls {
			p, ok := pos.Calls[tc.ID]
			tm.ToolCalls = append(tm.ToolCalls, trajectoryToolCall{ToolCall: tc, Position: at(p, ok)})
		}
		t.Messages = append(t.Messages, tm)
	}
	for _, r := range a.ToolCalls {
		p, ok := pos.Calls[r.CallID]
		t.ToolCalls = append(t.ToolCalls, trajectoryRecord{RecordedToolCall: r, Position: at(p, ok)})
	}
	return t
}
