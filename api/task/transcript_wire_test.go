package task

import (
	"errors"
	"reflect"
	"testing"
)

func TestDecodeTranscriptWireRejections(t *testing.T) {
	const call = `{"id":"c1","type":"function","function":{"name":"get","arguments":"{}"}}`
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"malformed JSON", `[{"role":"user",`, "ValueError: llm_messages_json is not valid JSON: unexpected end of JSON input"},
		{"trailing data", `[] []`, "ValueError: llm_messages_json is not valid JSON: invalid character '[' after top-level value"},
		{"not an array", `{"role":"user","content":"hi"}`, "ValueError: llm_messages_json must be a JSON array of messages, got object"},
		{"message not an object", `[{"role":"user","content":"a"},"hi"]`, "ValueError: messages[1]: must be a JSON object, got string"},
		{"missing role", `[{"content":"hi"}]`, `ValueError: messages[0]: missing "role"`},
		{"role not a string", `[{"role":null,"content":"hi"}]`, `ValueError: messages[0]: "role" must be a string, got null`},
		{"unknown role", `[{"role":"developer","content":"hi"}]`, `ValueError: messages[0]: role "developer" is not one of system, user, assistant, tool`},
		{"missing content", `[{"role":"user","content":"a"},{"role":"assistant"}]`, `ValueError: messages[1]: missing "content"`},
		{"null content without tool_calls", `[{"role":"assistant","content":null}]`, `ValueError: messages[0]: "content" is null; only a message carrying tool_calls may have null content`},
		{"null content with empty tool_calls", `[{"role":"assistant","content":null,"tool_calls":[]}]`, `ValueError: messages[0]: "content" is null; only a message carrying tool_calls may have null content`},
		{"content parts", `[{"role":"user","content":[{"type":"text","text":"hi"}]}]`, `ValueError: messages[0]: "content" must be a string, got array`},
		{"tool_calls not an array", `[{"role":"assistant","content":"","tool_calls":{}}]`, `ValueError: messages[0]: "tool_calls" must be an array, got object`},
		{"tool_calls on a tool message", `[{"role":"tool","content":"","tool_call_id":"c1","tool_calls":[` + call + `]}]`, `ValueError: messages[0]: role "tool" cannot carry tool_calls`},
		{"tool_calls on system", `[{"role":"system","content":"","tool_calls":[` + call + `]}]`, `ValueError: messages[0]: role "system" cannot carry tool_calls`},
		{"tool call not an object", `[{"role":"assistant","content":"","tool_calls":[` + call + `,"x"]}]`, `ValueError: messages[0].tool_calls[1]: must be a JSON object, got string`},
		{"tool call without id", `[{"role":"user","content":"a"},{"role":"assistant","content":"","tool_calls":[` + call + `,{"function":{"name":"get","arguments":"{}"}}]}]`, `ValueError: messages[1].tool_calls[1]: missing "id"`},
		{"tool call with empty id", `[{"role":"assistant","content":"","tool_calls":[{"id":"","function":{"name":"get","arguments":"{}"}}]}]`, `ValueError: messages[0].tool_calls[0]: "id" is empty`},
		{"tool call with numeric id", `[{"role":"assistant","content":"","tool_calls":[{"id":7,"function":{"name":"get","arguments":"{}"}}]}]`, `ValueError: messages[0].tool_calls[0]: "id" must be a string, got number`},
		{"tool call with other type", `[{"role":"assistant","content":"","tool_calls":[{"id":"c","type":"custom","function":{"name":"get","arguments":"{}"}}]}]`, `ValueError: messages[0].tool_calls[0]: "type" must be "function", got "custom"`},
		{"tool call without function", `[{"role":"assistant","content":"","tool_calls":[{"id":"c1"}]}]`, `ValueError: messages[0].tool_calls[0]: missing "function"`},
		{"function not an object", `[{"role":"assistant","content":"","tool_calls":[{"id":"c1","function":"get"}]}]`, `ValueError: messages[0].tool_calls[0]: "function" must be a JSON object, got string`},
		{"function null", `[{"role":"assistant","content":"","tool_calls":[{"id":"c1","function":null}]}]`, `ValueError: messages[0].tool_calls[0]: "function" must be a JSON object, got null`},
		{"function without name", `[{"role":"assistant","content":"","tool_calls":[{"id":"c1","function":{"arguments":"{}"}}]}]`, `ValueError: messages[0].tool_calls[0]: missing "function.name"`},
		{"function with empty name", `[{"role":"assistant","content":"","tool_calls":[{"id":"c1","function":{"name":"","arguments":"{}"}}]}]`, `ValueError: messages[0].tool_calls[0]: "function.name" is empty`},
		{"function name not a string", `[{"role":"assistant","content":"","tool_calls":[{"id":"c1","function":{"name":["get"],"arguments":"{}"}}]}]`, `ValueError: messages[0].tool_calls[0]: "function.name" must be a string, got array`},
		{"function without arguments", `[{"role":"assistant","content":"","tool_calls":[{"id":"c1","function":{"name":"get"}}]}]`, `ValueError: messages[0].tool_calls[0]: missing "function.arguments"`},
		{"non-string arguments", `[{"role":"assistant","content":"","tool_calls":[{"id":"c1","function":{"name":"get","arguments":{"a":1}}}]}]`, `ValueError: messages[0].tool_calls[0]: "function.arguments" must be a JSON-encoded string, got object`},
		{"null arguments", `[{"role":"assistant","content":"","tool_calls":[{"id":"c1","function":{"name":"get","arguments":null}}]}]`, `ValueError: messages[0].tool_calls[0]: "function.arguments" must be a JSON-encoded string, got null`},
		{"tool result without tool_call_id", `[{"role":"tool","content":"ok"}]`, `ValueError: messages[0]: role "tool" without "tool_call_id"`},
		{"tool_call_id not a string", `[{"role":"tool","content":"ok","tool_call_id":1}]`, `ValueError: messages[0]: "tool_call_id" must be a string, got number`},
		{"tool_call_id on another role", `[{"role":"assistant","content":"ok","tool_call_id":"c1"}]`, `ValueError: messages[0]: "tool_call_id" is only allowed on role "tool", not "assistant"`},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msgs, err := DecodeTranscriptWire([]byte(tt.in))
			if err == nil {
				t.Fatalf("accepted: %+v", msgs)
			}
			var te *transcriptError
			if !errors.As(err, &te) {
				t.Fatalf("error %T is not *TranscriptError", err)
			}
			if err.Error() != tt.want {
				t.Fatalf("error\n got %s\nwant %s", err.Error(), tt.want)
			}
		})
		if prev, dup := seen[tt.want]; dup && prev != "null content with empty tool_calls" && tt.name != "null content with empty tool_calls" {
			t.Errorf("cases %q and %q share one message: each rejection needs its own", prev, tt.name)
		}
		seen[tt.want] = tt.name
	}
}

func TestDecodeTranscriptWireAccepts(t *testing.T) {
	// The spec's example, plus OpenAI's null content beside tool calls, a user
	// turn calling a tool, null tool_calls, and keys the wire does not carry.
	in := `[
	  {"role": "system", "content": "You are a booking agent. Follow the refund policy."},
	  {"role": "user", "content": "I want to book a flight to Seattle", "name": "mia", "tool_calls": null},
	  {"role": "assistant", "content": "", "tool_calls": [
	    {"id": "call_123", "function": {"name": "book_reservation", "arguments": "{\"user_id\": \"mia_li_3668\", \"origin\": \"JFK\", \"destination\": \"SEA\"}"}}
	  ]},
	  {"role": "tool", "content": "Reservation confirmed: RES-456", "tool_call_id": "call_123"},
	  {"role": "assistant", "content": null, "refusal": null, "tool_calls": [
	    {"id": "call_124", "type": "function", "function": {"name": "get", "arguments": "not json"}}]},
	  {"role": "tool", "content": "<b>ok</b>", "tool_call_id": "call_124"},
	  {"role": "user", "content": "checking", "tool_calls": [{"id": "u1", "function": {"name": "check_phone", "arguments": ""}}]},
	  {"role": "tool", "content": "no signal", "tool_call_id": "u1"},
	  {"role": "assistant", "content": "I've booked your flight to Seattle."}
	]`
	got, err := DecodeTranscriptWire([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Message{
		{Role: RoleSystem, Content: "You are a booking agent. Follow the refund policy."},
		{Role: RoleUser, Content: "I want to book a flight to Seattle"},
		{Role: RoleAssistant, Content: "", ToolCalls: []ToolCall{{ID: "call_123", Type: "function", Function: FunctionCall{
			Name: "book_reservation", Arguments: `{"user_id": "mia_li_3668", "origin": "JFK", "destination": "SEA"}`}}}},
		{Role: RoleTool, Content: "Reservation confirmed: RES-456", ToolCallID: "call_123"},
		{Role: RoleAssistant, Content: "", ToolCalls: []ToolCall{{ID: "call_124", Type: "function", Function: FunctionCall{Name: "get", Arguments: "not json"}}}},
		{Role: RoleTool, Content: "<b>ok</b>", ToolCallID: "call_124"},
		{Role: RoleUser, Content: "checking", ToolCalls: []ToolCall{{ID: "u1", Type: "function", Function: FunctionCall{Name: "check_phone"}}}},
		{Role: RoleTool, Content: "no signal", ToolCallID: "u1"},
		{Role: RoleAssistant, Content: "I've booked your flight to Seattle."},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded\n got %+v\nwant %+v", got, want)
	}

	enc, err := EncodeTranscriptWire(got)
	if err != nil {
		t.Fatal(err)
	}
	wantWire := `[{"role":"system","content":"You are a booking agent. Follow the refund policy."},` +
		`{"role":"user","content":"I want to book a flight to Seattle"},` +
		`{"role":"assistant","content":"","tool_calls":[{"id":"call_123","type":"function","function":{"name":"book_reservation","arguments":"{\"user_id\": \"mia_li_3668\", \"origin\": \"JFK\", \"destination\": \"SEA\"}"}}]},` +
		`{"role":"tool","content":"Reservation confirmed: RES-456","tool_call_id":"call_123"},` +
		`{"role":"assistant","content":"","tool_calls":[{"id":"call_124","type":"function","function":{"name":"get","arguments":"not json"}}]},` +
		`{"role":"tool","content":"<b>ok</b>","tool_call_id":"call_124"},` +
		`{"role":"user","content":"checking","tool_calls":[{"id":"u1","type":"function","function":{"name":"check_phone","arguments":""}}]},` +
		`{"role":"tool","content":"no signal","tool_call_id":"u1"},` +
		`{"role":"assistant","content":"I've booked your flight to Seattle."}]`
	if string(enc) != wantWire {
		t.Fatalf("encoded\n got %s\nwant %s", enc, wantWire)
	}
	again, err := DecodeTranscriptWire(enc)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, got) {
		t.Fatalf("round trip changed the transcript:\n got %+v\nwant %+v", again, got)
	}
}

func TestTranscriptWireEmpty(t *testing.T) {
	got, err := DecodeTranscriptWire([]byte(" [ ] "))
	if err != nil || got == nil || len(got) != 0 {
		t.Fatalf("DecodeTranscriptWire([]) = %#v, %v", got, err)
	}
	for _, in := range [][]Message{nil, {}} {
		enc, err := EncodeTranscriptWire(in)
		if err != nil || string(enc) != "[]" {
			t.Fatalf("EncodeTranscriptWire(%#v) = %s, %v", in, enc, err)
		}
	}
}

func TestEncodeTranscriptWireRefusesWhatDecodeRefuses(t *testing.T) {
	fn := FunctionCall{Name: "get", Arguments: "{}"}
	tests := []struct {
		name string
		in   []Message
		want string
	}{
		{"role", []Message{{Role: "bot"}}, `ValueError: messages[0]: role "bot" is not one of system, user, assistant, tool`},
		{"tool calls on tool", []Message{{Role: RoleTool, ToolCallID: "c", ToolCalls: []ToolCall{{ID: "x", Function: fn}}}}, `ValueError: messages[0]: role "tool" cannot carry tool_calls`},
		{"tool result without id", []Message{{Role: RoleTool}}, `ValueError: messages[0]: role "tool" without "tool_call_id"`},
		{"tool_call_id on user", []Message{{Role: RoleUser, ToolCallID: "c"}}, `ValueError: messages[0]: "tool_call_id" is only allowed on role "tool", not "user"`},
		{"call without id", []Message{{Role: RoleAssistant}, {Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "a", Function: fn}, {Function: fn}}}}, `ValueError: messages[1].tool_calls[1]: "id" is empty`},
		{"call with other type", []Message{{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "a", Type: "x", Function: fn}}}}, `ValueError: messages[0].tool_calls[0]: "type" must be "function", got "x"`},
		{"call without name", []Message{{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "a"}}}}, `ValueError: messages[0].tool_calls[0]: "function.name" is empty`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := EncodeTranscriptWire(tt.in)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("error = %v, want %s", err, tt.want)
			}
		})
	}
}

func TestSplitLeadingSystemMessage(t *testing.T) {
	sys := Message{Role: RoleSystem, Content: "policy"}
	user := Message{Role: RoleUser, Content: "hi"}
	late := Message{Role: RoleSystem, Content: "late"}
	tests := []struct {
		name     string
		in       []Message
		wantSys  string
		wantRest []Message
	}{
		{"leading system", []Message{sys, user}, "policy", []Message{user}},
		{"only system", []Message{sys}, "policy", []Message{}},
		{"no system", []Message{user, late}, "", []Message{user, late}},
		{"only the first is lifted", []Message{sys, late, user}, "policy", []Message{late, user}},
		{"empty", nil, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gotSys, gotRest := SplitLeadingSystemMessage(tt.in)
			if gotSys != tt.wantSys || len(gotRest) != len(tt.wantRest) || (len(gotRest) > 0 && !reflect.DeepEqual(gotRest, tt.wantRest)) {
				t.Fatalf("got %q %+v, want %q %+v", gotSys, gotRest, tt.wantSys, tt.wantRest)
			}
		})
	}
}
