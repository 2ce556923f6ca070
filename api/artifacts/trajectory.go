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
	RunID             string                  `json:"run_id,omitempty"`
	AttemptID         string                  `json:"attempt_id,omitempty"`
	TaskID            string                  `json:"task_id"`
	TrialIndex        int                     `json:"trial_index"`
	Attempt           int                     `json:"attempt"`
	Outcome           string                  `json:"outcome"`
	Reason            string                  `json:"reason,omitempty"`
	Message           string                  `json:"message,omitempty"`
	TerminationReason string                  `json:"termination_reason"`
	GradingError      string                  `json:"grading_error,omitempty"`
	Turns             int                     `json:"turns"`
	StartTime         time.Time               `json:"start_time"`
	EndTime           time.Time               `json:"end_time"`
	Messages          []trajectoryMessage     `json:"messages"`
	ToolCalls         []task.RecordedToolCall `json:"tool_calls"`
}

type trajectoryMessage struct {
	Role       string          `json:"role"`
	Content    string          `json:"content"`
	ToolCalls  []task.ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	Timestamp  time.Time       `json:"timestamp"`
}

func trajectoryDoc(a *Attempt) trajectory {
	t := trajectory{
		TrialID: a.TrialID, Record: a.Record, RunID: a.RunID, AttemptID: a.AttemptID, TaskID: a.TaskID,
		TrialIndex: a.TrialIndex, Attempt: a.AttemptNumber,
		Outcome: a.Outcome, Reason: a.Reason, Message: a.Message,
		TerminationReason: a.TerminationReason,
		Turns:             a.Turns,
		StartTime:         a.StartTime.UTC(), EndTime: a.EndTime.UTC(),
		Messages:  make([]trajectoryMessage, 0, len(a.Messages)),
		ToolCalls: a.ToolCalls,
	}
	if a.Outcome == string(evalv1.OutcomeGradingFailed) {
		// The trial is still counted and its bundle still written; the cause
		// is recoverable from here, as in Tolokaforge's Trajectory.grading_error.
		t.GradingError = a.Message
	}
	if t.ToolCalls == nil {
		t.ToolCalls = []task.RecordedToolCall{}
	}
	for _, m := range a.Messages {
		t.Messages = append(t.Messages, trajectoryMessage{
			Role: m.Role, Content: m.Content, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID,
			Timestamp: m.Timestamp.UTC(),
		})
	}
	return t
}
