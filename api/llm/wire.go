package llm

import (
	"encoding/json"
	"fmt"
	"strings"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
)

// The chat-completions body is built and read here with encoding/json rather
// than with the SDK's param types: the SDK's reflective encoder re-encodes
// the whole conversation through its union/omitzero machinery on every turn
// and cost more than the loopback round trip itself in
// BenchmarkHostOverheadPerTurn. The SDK still does everything else: base URL,
// auth, origin checks, the HTTP exchange and error decoding.

type chatRequest struct {
	Model       string          `json:"model"`
	Messages    []wireMessage   `json:"messages"`
	Tools       json.RawMessage `json:"tools,omitempty"`
	Temperature *float64        `json:"temperature,omitempty"`
	TopP        *float64        `json:"top_p,omitempty"`
	// max_tokens only when the config sets it (older servers and models
	// read only it); reasoning models refuse it and take
	// max_completion_tokens.
	MaxTokens           *int   `json:"max_tokens,omitempty"`
	MaxCompletionTokens *int   `json:"max_completion_tokens,omitempty"`
	Seed                *int64 `json:"seed,omitempty"`
	ReasoningEffort     string `json:"reasoning_effort,omitempty"`
}

type wireMessage struct {
	Role string `json:"role"`
	// Content is omitted only on an assistant message that carries tool
	// calls and no text (the API's "required unless tool_calls").
	Content    *string        `json:"content,omitempty"`
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
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

type chatResponse struct {
	Choices []struct {
		Message struct {
			Content   *string        `json:"content"`
			Refusal   *string        `json:"refusal"`
			ToolCalls []wireToolCall `json:"tool_calls"`
		} `json:"message"`
	} `json:"choices"`
	Usage struct {
		PromptTokens        int64 `json:"prompt_tokens"`
		CompletionTokens    int64 `json:"completion_tokens"`
		PromptTokensDetails struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
		CompletionTokensDetails struct {
			ReasoningTokens int64 `json:"reasoning_tokens"`
		} `json:"completion_tokens_details"`
	} `json:"usage"`
}

var validRoles = map[string]bool{task.RoleSystem: true, task.RoleUser: true, task.RoleAssistant: true, task.RoleTool: true}

// toWire converts an actor's view into request messages.
func toWire(conv []task.Message) ([]wireMessage, error) {
	out := make([]wireMessage, len(conv))
	for i := range conv {
		m := &conv[i]
		if !validRoles[m.Role] {
			return nil, fmt.Errorf("conversation message %d: role %q is not one of system, user, assistant, tool", i, m.Role)
		}
		w := wireMessage{Role: m.Role, ToolCallID: m.ToolCallID}
		if m.Content != "" || len(m.ToolCalls) == 0 {
			w.Content = &m.Content
		}
		if len(m.ToolCalls) > 0 {
			w.ToolCalls = make([]wireToolCall, len(m.ToolCalls))
			for j, c := range m.ToolCalls {
				w.ToolCalls[j] = wireToolCall{ID: c.ID, Type: "function", Function: wireFunction{Name: c.Function.Name, Arguments: c.Function.Arguments}}
			}
		}
		out[i] = w
	}
	return out, nil
}

// EncodeTools renders the runner's tool schemas as OpenAI function tools.
// parameters_json is embedded verbatim once checked to be a JSON object; an
// empty one becomes the empty-object schema.
func EncodeTools(tools []*runnerpb.ToolSchema) (json.RawMessage, error) {
	if len(tools) == 0 {
		return nil, nil
	}
	type function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	type tool struct {
		Type     string   `json:"type"`
		Function function `json:"function"`
	}
	out := make([]tool, len(tools))
	for i, t := range tools {
		params := json.RawMessage(`{"type":"object","properties":{}}`)
		if raw := strings.TrimSpace(t.GetParametersJson()); raw != "" {
			if !json.Valid([]byte(raw)) || raw[0] != '{' {
				return nil, fmt.Errorf("tool_schemas[%d] (%s): parameters_json is not a JSON object", i, t.GetName())
			}
			params = json.RawMessage(raw)
		}
		out[i] = tool{Type: "function", Function: function{Name: t.GetName(), Description: t.GetDescription(), Parameters: params}}
	}
	return marshal(out)
}

// marshal encodes without HTML escaping, so "<" in a prompt crosses as "<"
// (task.Encode, the one such encoder).
func marshal(v any) ([]byte, error) { return task.Encode(v) }

// fromResponse turns the first choice into a turn's content and calls. A
// refusal is what the model said, so it stands in for empty content.
func fromResponse(r *chatResponse) (string, []task.ToolCall) {
	msg := r.Choices[0].Message
	content := ""
	if msg.Content != nil {
		content = *msg.Content
	}
	if content == "" && msg.Refusal != nil {
		content = *msg.Refusal
	}
	var calls []task.ToolCall
	for _, c := range msg.ToolCalls {
		if c.Type != "" && c.Type != "function" {
			continue // custom tools are never offered, so never legitimately called
		}
		calls = append(calls, task.ToolCall{ID: c.ID, Type: "function",
			Function: task.FunctionCall{Name: c.Function.Name, Arguments: c.Function.Arguments}})
	}
	return content, calls
}
