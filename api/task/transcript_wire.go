package task

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// transcriptError is a rejection of llm_messages_json. Its text starts with
// "ValueError: " so the runner reports it on the spec's
// "Trial '<id>' is not gradeable: <ValueError subclass>: …" row unchanged.
type transcriptError struct {
	MessageIndex  int // -1: the payload as a whole
	ToolCallIndex int // -1: the message itself
	Msg           string
}

func (e *transcriptError) Error() string {
	var b strings.Builder
	b.WriteString("ValueError: ")
	if e.MessageIndex >= 0 {
		fmt.Fprintf(&b, "messages[%d]", e.MessageIndex)
		if e.ToolCallIndex >= 0 {
			fmt.Fprintf(&b, ".tool_calls[%d]", e.ToolCallIndex)
		}
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

func transcriptErr(msg, call int, format string, args ...any) *transcriptError {
	return &transcriptError{MessageIndex: msg, ToolCallIndex: call, Msg: fmt.Sprintf(format, args...)}
}

var wireRoles = []string{RoleSystem, RoleUser, RoleAssistant, RoleTool}

// canCallTools: the assistant, and a simulated user that calls its own tools.
func canCallTools(role string) bool { return role == RoleAssistant || role == RoleUser }

// DecodeTranscriptWire decodes llm_messages_json: a JSON array of messages in
// execution order. Each rejection has its own message naming the message index
// (and tool call index). Decisions the spec leaves open:
//   - "content": null is accepted, as "", only on a message that carries
//     tool_calls (OpenAI sends null content beside tool calls); any other
//     message must carry a string.
//   - tool_calls: null or [] means none; "type" may be absent but, when given,
//     must be "function". The arguments string is carried verbatim, not parsed:
//     an LLM's malformed arguments are part of the trial, judged by the record.
//   - a role "tool" message must carry the tool_call_id that joins it to its
//     call, and no other role may carry one.
//   - keys outside role, content, tool_calls and tool_call_id (an OpenAI dump's
//     "name", "refusal", ...) are ignored: the wire is not an authored document.
func DecodeTranscriptWire(data []byte) ([]Message, error) {
	if !json.Valid(data) {
		var scratch any
		err := json.Unmarshal(data, &scratch)
		return nil, transcriptErr(-1, -1, "llm_messages_json is not valid JSON: %v", err)
	}
	data = bytes.TrimSpace(data)
	if data[0] != '[' {
		return nil, transcriptErr(-1, -1, "llm_messages_json must be a JSON array of messages, got %s", jsonKind(data))
	}
	var items []json.RawMessage
	if err := json.Unmarshal(data, &items); err != nil {
		return nil, transcriptErr(-1, -1, "llm_messages_json is not valid JSON: %v", err)
	}
	out := make([]Message, 0, len(items))
	for i, item := range items {
		m, err := decodeWireMessage(i, bytes.TrimSpace(item))
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

func decodeWireMessage(i int, raw []byte) (Message, error) {
	var m Message
	if raw[0] != '{' {
		return m, transcriptErr(i, -1, "must be a JSON object, got %s", jsonKind(raw))
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return m, transcriptErr(i, -1, "%v", err)
	}

	role, ok := fields["role"]
	if !ok {
		return m, transcriptErr(i, -1, `missing "role"`)
	}
	if err := wireString(role, &m.Role); err != nil {
		return m, transcriptErr(i, -1, `"role" must be a string, got %s`, err.got)
	}
	if !isMember(m.Role, wireRoles) {
		return m, transcriptErr(i, -1, "role %q is not one of %s", m.Role, strings.Join(wireRoles, ", "))
	}

	if raw, ok := fields["tool_calls"]; ok && !isNullRaw(raw) {
		raw = bytes.TrimSpace(raw)
		if raw[0] != '[' {
			return m, transcriptErr(i, -1, `"tool_calls" must be an array, got %s`, jsonKind(raw))
		}
		var calls []json.RawMessage
		if err := json.Unmarshal(raw, &calls); err != nil {
			return m, transcriptErr(i, -1, "%v", err)
		}
		if len(calls) > 0 && !canCallTools(m.Role) {
			return m, transcriptErr(i, -1, "role %q cannot carry tool_calls", m.Role)
		}
		for j, c := range calls {
			tc, err := decodeWireToolCall(i, j, bytes.TrimSpace(c))
			if err != nil {
				return m, err
			}
			m.ToolCalls = append(m.ToolCalls, tc)
		}
	}

	content, ok := fields["content"]
	switch {
	case !ok:
		return m, transcriptErr(i, -1, `missing "content"`)
	case isNullRaw(content):
		if len(m.ToolCalls) == 0 {
			return m, transcriptErr(i, -1, `"content" is null; only a message carrying tool_calls may have null content`)
		}
	default:
		if err := wireString(content, &m.Content); err != nil {
			return m, transcriptErr(i, -1, `"content" must be a string, got %s`, err.got)
		}
	}

	if raw, ok := fields["tool_call_id"]; ok && !isNullRaw(raw) {
		if err := wireString(raw, &m.ToolCallID); err != nil {
			return m, transcriptErr(i, -1, `"tool_call_id" must be a string, got %s`, err.got)
		}
	}
	if err := checkToolCallID(i, m); err != nil {
		return m, err
	}
	return m, nil
}

func checkToolCallID(i int, m Message) error {
	if m.Role == RoleTool && m.ToolCallID == "" {
		return transcriptErr(i, -1, `role "tool" without "tool_call_id"`)
	}
	if m.Role != RoleTool && m.ToolCallID != "" {
		return transcriptErr(i, -1, `"tool_call_id" is only allowed on role "tool", not %q`, m.Role)
	}
	return nil
}

func decodeWireToolCall(i, j int, raw []byte) (ToolCall, error) {
	tc := ToolCall{Type: "function"}
	if raw[0] != '{' {
		return tc, transcriptErr(i, j, "must be a JSON object, got %s", jsonKind(raw))
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return tc, transcriptErr(i, j, "%v", err)
	}
	id, ok := fields["id"]
	if !ok {
		return tc, transcriptErr(i, j, `missing "id"`)
	}
	if err := wireString(id, &tc.ID); err != nil {
		return tc, transcriptErr(i, j, `"id" must be a string, got %s`, err.got)
	}
	if tc.ID == "" {
		return tc, transcriptErr(i, j, `"id" is empty`)
	}
	if typ, ok := fields["type"]; ok && !isNullRaw(typ) {
		var s string
		if err := wireString(typ, &s); err != nil {
			return tc, transcriptErr(i, j, `"type" must be a string, got %s`, err.got)
		}
		if s != "function" {
			return tc, transcriptErr(i, j, `"type" must be "function", got %q`, s)
		}
	}
	fn, ok := fields["function"]
	if !ok {
		return tc, transcriptErr(i, j, `missing "function"`)
	}
	fn = bytes.TrimSpace(fn)
	if fn[0] != '{' {
		return tc, transcriptErr(i, j, `"function" must be a JSON object, got %s`, jsonKind(fn))
	}
	var fnFields map[string]json.RawMessage
	if err := json.Unmarshal(fn, &fnFields); err != nil {
		return tc, transcriptErr(i, j, "%v", err)
	}
	name, ok := fnFields["name"]
	if !ok {
		return tc, transcriptErr(i, j, `missing "function.name"`)
	}
	if err := wireString(name, &tc.Function.Name); err != nil {
		return tc, transcriptErr(i, j, `"function.name" must be a string, got %s`, err.got)
	}
	if tc.Function.Name == "" {
		return tc, transcriptErr(i, j, `"function.name" is empty`)
	}
	args, ok := fnFields["arguments"]
	if !ok {
		return tc, transcriptErr(i, j, `missing "function.arguments"`)
	}
	if err := wireString(args, &tc.Function.Arguments); err != nil {
		return tc, transcriptErr(i, j, `"function.arguments" must be a JSON-encoded string, got %s`, err.got)
	}
	return tc, nil
}

type kindError struct{ got string }

// wireString decodes a JSON string; anything else reports its JSON kind.
func wireString(raw json.RawMessage, dst *string) *kindError {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		got := "nothing"
		if len(raw) > 0 {
			got = jsonKind(raw)
		}
		return &kindError{got: got}
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return &kindError{got: "invalid string"}
	}
	return nil
}

func isNullRaw(raw json.RawMessage) bool {
	return bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// EncodeTranscriptWire encodes msgs as llm_messages_json: a JSON array in order,
// "tool_calls" only when present (each {"id", "type": "function", "function":
// {"name", "arguments"}}) and "tool_call_id" only on role "tool". It refuses what
// DecodeTranscriptWire would refuse, so its output always decodes.
func EncodeTranscriptWire(msgs []Message) ([]byte, error) {
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		if !isMember(m.Role, wireRoles) {
			return nil, transcriptErr(i, -1, "role %q is not one of %s", m.Role, strings.Join(wireRoles, ", "))
		}
		if len(m.ToolCalls) > 0 && !canCallTools(m.Role) {
			return nil, transcriptErr(i, -1, "role %q cannot carry tool_calls", m.Role)
		}
		if err := checkToolCallID(i, m); err != nil {
			return nil, err
		}
		var calls []ToolCall
		for j, tc := range m.ToolCalls {
			switch {
			case tc.ID == "":
				return nil, transcriptErr(i, j, `"id" is empty`)
			case tc.Type != "" && tc.Type != "function":
				return nil, transcriptErr(i, j, `"type" must be "function", got %q`, tc.Type)
			case tc.Function.Name == "":
				return nil, transcriptErr(i, j, `"function.name" is empty`)
			}
			tc.Type = "function"
			calls = append(calls, tc)
		}
		m.ToolCalls = calls
		out[i] = m
	}
	return Encode(out)
}

// SplitLeadingSystemMessage lifts the leading system message (the agent's
// policy) out of the transcript. Only the first message is considered: a system
// message later in the trace is a turn, not the policy.
func SplitLeadingSystemMessage(msgs []Message) (system string, rest []Message) {
	if len(msgs) > 0 && msgs[0].Role == RoleSystem {
		return msgs[0].Content, msgs[1:]
	}
	return "", msgs
}
