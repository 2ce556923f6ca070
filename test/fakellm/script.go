package fakellm

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// ToolCall is one function call the fake model makes.
type ToolCall struct {
	// ID is sent verbatim (duplicates included, to test id de-duplication);
	// empty means "call_<n>" with n unique per server.
	ID        string `json:"id,omitempty"`
	Name      string `json:"name"`
	Arguments string `json:"arguments,omitempty"` // raw JSON text, not validated
}

// Usage is the token accounting of one reply. An all-zero Usage is replaced by
// a deterministic estimate (4 bytes per token) so accounting is never empty.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens,omitempty"`
	CompletionTokens int `json:"completion_tokens,omitempty"`
	// TotalTokens defaults to PromptTokens+CompletionTokens.
	TotalTokens     int `json:"total_tokens,omitempty"`
	ReasoningTokens int `json:"reasoning_tokens,omitempty"`
	CachedTokens    int `json:"cached_tokens,omitempty"`
}

// Reply is one scripted answer.
type Reply struct {
	Content   string     `json:"content,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// FinishReason defaults to "tool_calls" when ToolCalls is set, else "stop".
	FinishReason string `json:"finish_reason,omitempty"`
	Usage        Usage  `json:"usage,omitzero"`

	// Status other than 0 or 200 answers with an OpenAI-style error body.
	Status int `json:"status,omitempty"`
	// ErrorMessage, ErrorType and ErrorCode fill the error body; they
	// default from Status (e.g. 429 -> rate_limit_exceeded).
	ErrorMessage string `json:"error_message,omitempty"`
	ErrorType    string `json:"error_type,omitempty"`
	ErrorCode    string `json:"error_code,omitempty"`
	// RetryAfter is sent as the Retry-After header (seconds or HTTP date).
	RetryAfter string `json:"retry_after,omitempty"`
	// Header holds extra response headers, e.g. x-should-retry.
	Header map[string]string `json:"header,omitempty"`

	// Delay is waited before answering (cut short if the client gives up).
	Delay time.Duration `json:"-"`
}

// UnmarshalJSON reads the file form (Delay as a Go duration string such as
// "150ms") and rejects unknown fields, so a typo in a script is an error
// rather than a silently ignored knob.
func (r *Reply) UnmarshalJSON(b []byte) error {
	type plain Reply // no UnmarshalJSON: avoids recursion
	var out Reply
	aux := struct {
		*plain
		Delay string `json:"delay,omitempty"`
	}{plain: (*plain)(&out)}
	if err := decodeStrict(b, &aux); err != nil {
		return err
	}
	if aux.Delay != "" {
		d, err := time.ParseDuration(aux.Delay)
		if err != nil {
			return fmt.Errorf("delay %q: %w", aux.Delay, err)
		}
		out.Delay = d
	}
	*r = out
	return nil
}

// MarshalJSON writes Delay as a duration string, the form UnmarshalJSON reads.
func (r Reply) MarshalJSON() ([]byte, error) {
	type plain Reply
	aux := struct {
		plain
		Delay string `json:"delay,omitempty"`
	}{plain: plain(r)}
	if r.Delay != 0 {
		aux.Delay = r.Delay.String()
	}
	return json.Marshal(aux)
}

func (r Reply) isError() bool { return r.Status != 0 && r.Status != http.StatusOK }

// validate reports the first problem in a reply; where names its position.
func (r Reply) validate(where string) error {
	if r.Status != 0 && (r.Status < 200 || r.Status > 599) {
		return fmt.Errorf("%s: status %d is not an HTTP status between 200 and 599", where, r.Status)
	}
	if r.Delay < 0 {
		return fmt.Errorf("%s: delay %v is negative", where, r.Delay)
	}
	for i, tc := range r.ToolCalls {
		if tc.Name == "" {
			return fmt.Errorf("%s: tool_calls[%d]: name is empty", where, i)
		}
	}
	u := r.Usage
	for name, v := range map[string]int{
		"prompt_tokens": u.PromptTokens, "completion_tokens": u.CompletionTokens, "total_tokens": u.TotalTokens,
		"reasoning_tokens": u.ReasoningTokens, "cached_tokens": u.CachedTokens,
	} {
		if v < 0 {
			return fmt.Errorf("%s: usage.%s is negative (%d)", where, name, v)
		}
	}
	return nil
}
