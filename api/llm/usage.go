package llm

import (
	"fmt"

	"tolokaforge.io/operator/api/task"
)

// Usage is what one call (or a sum of calls) consumed.
type Usage struct {
	Calls            int64
	Retries          int64
	PromptTokens     int64
	CompletionTokens int64
	ReasoningTokens  int64 // part of CompletionTokens
	CachedTokens     int64 // part of PromptTokens, served from the provider's cache
	CostUSD          float64
}

// Add accumulates o into u.
func (u *Usage) Add(o Usage) {
	u.Calls += o.Calls
	u.Retries += o.Retries
	u.PromptTokens += o.PromptTokens
	u.CompletionTokens += o.CompletionTokens
	u.ReasoningTokens += o.ReasoningTokens
	u.CachedTokens += o.CachedTokens
	u.CostUSD += o.CostUSD
}

// Error is a call that failed for good, classed as the trial's termination
// reason: task.TerminationRateLimit (429s outlasted the retries),
// task.TerminationAPIError (other provider faults), task.TerminationError
// (the provider refused the request as invalid). Err is already redacted.
type Error struct {
	Termination task.TerminationReason
	Err         error
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %v", e.Termination, e.Err) }

func (e *Error) Unwrap() error { return e.Err }
