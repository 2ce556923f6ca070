package artifacts

import (
	"time"
	"tolokaforge.io/operator/api/result"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
)

// Attempt is everything one attempt's files say.
type Attempt struct {
	TrialID       string
	RunID         string
	AttemptID     string
	TaskID        string
	TrialIndex    int
	AttemptNumber int
	// TraceID is the attempt's OpenTelemetry trace (empty: not traced).
	TraceID string
	// Record is who ran the trial; trajectory.yaml carries it.
	Record result.Record

	Outcome           string
	Reason            string
	Message           string
	TerminationReason string
	Turns             int
	StartTime         time.Time
	EndTime           time.Time

	// Messages is the transcript (leading system message included), each
	// with the time it was produced.
	Messages []Message
	// ToolCalls is the host's mirror of the runner's tool-call record.
	ToolCalls []task.RecordedToolCall

	// Grade is nil when the attempt ended without one; GradedBy says who
	// produced it ("runner", or "host" for a self-graded termination).
	Grade    *runnerpb.Grade
	GradedBy string

	AgentUsage Usage
	UserUsage  Usage
	JudgeUsage Usage
	Timings    Timings
}

// Message is one transcript message with its timestamp.
type Message struct {
	task.Message
	Timestamp time.Time
}

// Usage is one actor's token spend.
type Usage struct {
	Calls            int64   `json:"calls"`
	Retries          int64   `json:"retries"`
	PromptTokens     int64   `json:"prompt_tokens"`
	CompletionTokens int64   `json:"completion_tokens"`
	ReasoningTokens  int64   `json:"reasoning_tokens"`
	CachedTokens     int64   `json:"cached_tokens,omitempty"`
	CostUSD          float64 `json:"cost_usd"`
}

// Timings are where the attempt's wall clock went.
type Timings struct {
	Registration time.Duration
	AgentLLM     time.Duration
	UserLLM      time.Duration
	Tools        time.Duration
	Grading      time.Duration
}
