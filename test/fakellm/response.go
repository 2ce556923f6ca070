package fakellm

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

type completionResponse struct {
	ID                string   `json:"id"`
	Object            string   `json:"object"`
	Created           int64    `json:"created"`
	Model             string   `json:"model"`
	Choices           []choice `json:"choices"`
	Usage             usage    `json:"usage"`
	ServiceTier       string   `json:"service_tier"`
	SystemFingerprint string   `json:"system_fingerprint"`
}

type choice struct {
	Index        int             `json:"index"`
	Message      responseMessage `json:"message"`
	Logprobs     *struct{}       `json:"logprobs"`
	FinishReason string          `json:"finish_reason"`
}

type responseMessage struct {
	Role        string         `json:"role"`
	Content     *string        `json:"content"`
	Refusal     *string        `json:"refusal"`
	ToolCalls   []wireToolCall `json:"tool_calls,omitempty"`
	Annotations []struct{}     `json:"annotations"`
}

type usage struct {
	PromptTokens            int `json:"prompt_tokens"`
	CompletionTokens        int `json:"completion_tokens"`
	TotalTokens             int `json:"total_tokens"`
	CompletionTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

func (s *Server) completion(req Request, r Reply, seq int) completionResponse {
	msg := responseMessage{Role: "assistant", Annotations: []struct{}{}}
	// The real API sends null content alongside tool calls.
	if r.Content != "" || len(r.ToolCalls) == 0 {
		msg.Content = new(r.Content)
	}
	for _, tc := range r.ToolCalls {
		id := tc.ID
		if id == "" {
			id = s.nextCallID()
		}
		args := tc.Arguments
		if args == "" {
			args = "{}"
		}
		msg.ToolCalls = append(msg.ToolCalls, wireToolCall{ID: id, Type: "function", Function: wireFunction{Name: tc.Name, Arguments: args}})
	}
	finish := r.FinishReason
	if finish == "" {
		finish = "stop"
		if len(r.ToolCalls) > 0 {
			finish = "tool_calls"
		}
	}
	return completionResponse{
		ID:                fmt.Sprintf("chatcmpl-fake%06d", seq),
		Object:            "chat.completion",
		Created:           time.Now().Unix(),
		Model:             req.Model,
		Choices:           []choice{{Index: 0, Message: msg, FinishReason: finish}},
		Usage:             usageFor(req, r),
		ServiceTier:       "default",
		SystemFingerprint: "fp_fakellm",
	}
}

// usageFor reports the scripted usage, or a deterministic 4-bytes-per-token
// estimate when the script left it empty.
func usageFor(req Request, r Reply) usage {
	u := r.Usage
	if u == (Usage{}) {
		prompt := 0
		for _, m := range req.Messages {
			prompt += len(m.Content)
			for _, tc := range m.ToolCalls {
				prompt += len(tc.Name) + len(tc.Arguments)
			}
		}
		completion := len(r.Content)
		for _, tc := range r.ToolCalls {
			completion += len(tc.Name) + len(tc.Arguments)
		}
		u.PromptTokens = max(1, (prompt+3)/4)
		u.CompletionTokens = max(1, (completion+3)/4)
	}
	var out usage
	out.PromptTokens = u.PromptTokens
	out.CompletionTokens = u.CompletionTokens
	out.TotalTokens = u.TotalTokens
	if out.TotalTokens == 0 {
		out.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
	out.CompletionTokensDetails.ReasoningTokens = u.ReasoningTokens
	out.PromptTokensDetails.CachedTokens = u.CachedTokens
	return out
}

// errorInfo is an error to send; empty Param and Code become null.
type errorInfo struct{ Message, Type, Param, Code string }

type apiError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// writeError writes the real API's {"error": {...}} body.
func writeError(w http.ResponseWriter, status int, e errorInfo, header map[string]string) {
	body := apiError{Message: e.Message, Type: e.Type}
	if e.Param != "" {
		body.Param = new(e.Param)
	}
	if e.Code != "" {
		body.Code = new(e.Code)
	}
	writeJSON(w, status, header, map[string]apiError{"error": body})
}

// defaultErrors mirrors what the provider sends for common statuses.
var defaultErrors = map[int][3]string{ // type, code, message
	http.StatusBadRequest:          {"invalid_request_error", "", "Invalid request (injected by fakellm)"},
	http.StatusUnauthorized:        {"invalid_request_error", "invalid_api_key", "Incorrect API key provided (injected by fakellm)"},
	http.StatusTooManyRequests:     {"rate_limit_exceeded", "rate_limit_exceeded", "Rate limit reached (injected by fakellm)"},
	http.StatusInternalServerError: {"server_error", "", "The server had an error while processing your request (injected by fakellm)"},
	http.StatusServiceUnavailable:  {"server_error", "", "The engine is currently overloaded (injected by fakellm)"},
}

func writeReplyError(w http.ResponseWriter, r Reply) {
	d, ok := defaultErrors[r.Status]
	if !ok {
		d = [3]string{"server_error", "", fmt.Sprintf("HTTP %d (injected by fakellm)", r.Status)}
	}
	e := errorInfo{Message: d[2], Type: d[0], Code: d[1]}
	if r.ErrorMessage != "" {
		e.Message = r.ErrorMessage
	}
	if r.ErrorType != "" {
		e.Type = r.ErrorType
	}
	if r.ErrorCode != "" {
		e.Code = r.ErrorCode
	}
	header := map[string]string{}
	for k, v := range r.Header {
		header[k] = v
	}
	if r.RetryAfter != "" {
		header["Retry-After"] = r.RetryAfter
	}
	writeError(w, r.Status, e, header)
}

func writeJSON(w http.ResponseWriter, status int, header map[string]string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "fakellm: encode response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	for k, v := range header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Request-Id", "req_fakellm")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
