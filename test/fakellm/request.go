package fakellm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Request is one recorded call, parsed for assertions.
type Request struct {
	Seq         int // arrival order across the server, from 0
	Path        string
	Model       string
	Messages    []Message
	Tools       []tool
	ToolChoice  json.RawMessage
	Temperature *float64
	TopP        *float64
	MaxTokens   *int // max_completion_tokens, or the legacy max_tokens
	// MaxCompletionTokens and LegacyMaxTokens are the two keys as sent.
	MaxCompletionTokens *int
	LegacyMaxTokens     *int
	Seed                *int64
	ParallelToolCalls   *bool
	ReasoningEffort     string
	Stream              bool
	// Raw is the body exactly as received.
	Raw []byte
	// Authorization is the Authorization header, kept for assertions only:
	// it is never logged.
	Authorization string
	Header        http.Header
	Received      time.Time
	// Error is the 4xx message the server answered when the request itself
	// was invalid; empty when it reached the script.
	Error string
}

// Message is one chat message as the client sent it.
type Message struct {
	Role string
	// Content is the text of a string content or the concatenated text
	// parts of an array content.
	Content    string
	RawContent json.RawMessage
	Name       string
	ToolCalls  []ToolCall
	ToolCallID string
}

// tool is one tool offered to the model.
type tool struct {
	Type        string
	Name        string
	Description string
	Parameters  json.RawMessage
	Strict      *bool
}

type wireRequest struct {
	Model               string          `json:"model"`
	Messages            []wireMessage   `json:"messages"`
	Tools               []wireTool      `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Seed                *int64          `json:"seed"`
	ParallelToolCalls   *bool           `json:"parallel_tool_calls"`
	ReasoningEffort     string          `json:"reasoning_effort"`
	Stream              bool            `json:"stream"`
}

type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCalls  []wireToolCall  `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

type wireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type wireTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      *bool           `json:"strict"`
	} `json:"function"`
}

type wirePart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// requestError is a client mistake answered with 400 like the real API.
type requestError struct {
	param string
	msg   string
	code  string
	// verbatim: the answer's message is msg alone, as the provider words it.
	verbatim bool
}

func (e *requestError) Error() string {
	if e.param == "" {
		return e.msg
	}
	return e.param + ": " + e.msg
}

var validRoles = map[string]bool{"system": true, "developer": true, "user": true, "assistant": true, "tool": true, "function": true}

// parseRequest decodes and validates a chat-completions body. Unknown fields
// are accepted, as the real API accepts new parameters.
func parseRequest(body []byte, strictToolFlow bool) (Request, error) {
	var w wireRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&w); err != nil {
		return Request{}, &requestError{msg: "request body is not valid JSON: " + err.Error()}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Request{}, &requestError{msg: "request body has trailing data after the JSON object"}
	}
	req := Request{
		Model: w.Model, ToolChoice: w.ToolChoice, Temperature: w.Temperature, TopP: w.TopP,
		Seed: w.Seed, ParallelToolCalls: w.ParallelToolCalls, ReasoningEffort: w.ReasoningEffort,
		Stream: w.Stream, MaxTokens: w.MaxTokens,
		MaxCompletionTokens: w.MaxCompletionTokens, LegacyMaxTokens: w.MaxTokens,
	}
	if w.MaxCompletionTokens != nil {
		req.MaxTokens = w.MaxCompletionTokens
	}
	if w.Model == "" {
		return req, &requestError{param: "model", msg: "you must provide a model parameter"}
	}
	if w.Stream {
		return req, &requestError{param: "stream", msg: "fakellm answers non-streaming requests only"}
	}
	if len(w.Messages) == 0 {
		return req, &requestError{param: "messages", msg: "must be a non-empty array"}
	}
	for i, wm := range w.Messages {
		m, err := convertMessage(i, wm)
		if err != nil {
			return req, err
		}
		req.Messages = append(req.Messages, m)
	}
	for i, wt := range w.Tools {
		if wt.Type != "function" {
			return req, &requestError{param: fmt.Sprintf("tools[%d].type", i), msg: fmt.Sprintf("unsupported tool type %q (want \"function\")", wt.Type)}
		}
		if wt.Function.Name == "" {
			return req, &requestError{param: fmt.Sprintf("tools[%d].function.name", i), msg: "is required"}
		}
		req.Tools = append(req.Tools, tool{
			Type: wt.Type, Name: wt.Function.Name, Description: wt.Function.Description,
			Parameters: wt.Function.Parameters, Strict: wt.Function.Strict,
		})
	}
	if strictToolFlow {
		if err := checkToolFlow(req.Messages); err != nil {
			return req, err
		}
	}
	return req, nil
}

func convertMessage(i int, wm wireMessage) (Message, error) {
	param := fmt.Sprintf("messages[%d]", i)
	if !validRoles[wm.Role] {
		return Message{}, &requestError{param: param + ".role", msg: fmt.Sprintf("invalid role %q", wm.Role)}
	}
	text, err := contentText(wm.Content)
	if err != nil {
		return Message{}, &requestError{param: param + ".content", msg: err.Error()}
	}
	m := Message{Role: wm.Role, Content: text, RawContent: wm.Content, Name: wm.Name, ToolCallID: wm.ToolCallID}
	if len(wm.ToolCalls) > 0 && wm.Role != "assistant" {
		return m, &requestError{param: param + ".tool_calls", msg: fmt.Sprintf("only assistant messages may carry tool_calls, not %q", wm.Role)}
	}
	for j, tc := range wm.ToolCalls {
		if tc.ID == "" || tc.Function.Name == "" {
			return m, &requestError{param: fmt.Sprintf("%s.tool_calls[%d]", param, j), msg: "id and function.name are required"}
		}
		m.ToolCalls = append(m.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	if wm.Role == "tool" && wm.ToolCallID == "" {
		return m, &requestError{param: param + ".tool_call_id", msg: "is required for role \"tool\""}
	}
	return m, nil
}

// contentText flattens a string, null, or array-of-parts content to text.
func contentText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("invalid string: %w", err)
		}
		return s, nil
	case '[':
		var parts []wirePart
		if err := json.Unmarshal(raw, &parts); err != nil {
			return "", fmt.Errorf("invalid content parts: %w", err)
		}
		var b strings.Builder
		for _, p := range parts {
			if p.Type == "text" {
				b.WriteString(p.Text)
			}
		}
		return b.String(), nil
	default:
		return "", errors.New("must be a string, null or an array of content parts")
	}
}

// checkToolFlow enforces the real API's conversation rules that agent hosts
// most often break: every tool message answers a tool call of the assistant
// message before it, and every such tool call gets an answer.
func checkToolFlow(msgs []Message) error {
	var pending map[string]bool // tool call ids awaiting an answer
	var pendingAt int
	flush := func(at int) error {
		for _, m := range msgs[pendingAt].ToolCalls {
			if pending[m.ID] {
				return &requestError{param: fmt.Sprintf("messages[%d]", at),
					msg: fmt.Sprintf("an assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'; %q (messages[%d]) has no response", m.ID, pendingAt)}
			}
		}
		pending = nil
		return nil
	}
	for i, m := range msgs {
		if m.Role == "tool" {
			if pending == nil {
				return &requestError{param: fmt.Sprintf("messages[%d].role", i),
					msg: "messages with role 'tool' must be a response to a preceding message with 'tool_calls'"}
			}
			if _, ok := pending[m.ToolCallID]; !ok {
				return &requestError{param: fmt.Sprintf("messages[%d].tool_call_id", i),
					msg: fmt.Sprintf("%q does not match any tool call of messages[%d]", m.ToolCallID, pendingAt)}
			}
			pending[m.ToolCallID] = false
			continue
		}
		if pending != nil {
			if err := flush(i); err != nil {
				return err
			}
		}
		if m.Role == "assistant" && len(m.ToolCalls) > 0 {
			pending, pendingAt = map[string]bool{}, i
			for _, tc := range m.ToolCalls {
				pending[tc.ID] = true
			}
		}
	}
	// A trailing assistant tool call without answers is a valid prefix only
	// if the caller is not asking for a completion; the API rejects it too.
	if pending != nil {
		return flush(len(msgs))
	}
	return nil
}

// reasoningModelRefusal is what OpenAI answers a reasoning model's request
// that carries a parameter those models do not take (wording as of 2025).
func reasoningModelRefusal(req *Request) error {
	if req.LegacyMaxTokens != nil {
		return &requestError{param: "max_tokens", code: "unsupported_parameter", verbatim: true,
			msg: "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."}
	}
	if req.Temperature != nil && *req.Temperature != 1 {
		return &requestError{param: "temperature", code: "unsupported_value", verbatim: true,
			msg: fmt.Sprintf("Unsupported value: 'temperature' does not support %g with this model. Only the default (1) value is supported.", *req.Temperature)}
	}
	return nil
}
