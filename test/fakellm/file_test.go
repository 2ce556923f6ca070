package fakellm

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const yamlScript = `
replies:
  - content: shared-1
models:
  agent:
    - tool_calls:
        - {id: call_1, name: get_stock, arguments: '{"sku":"A1"}'}
      usage: {prompt_tokens: 10, completion_tokens: 4, reasoning_tokens: 3}
      delay: 10ms
    - status: 429
      retry_after: "2"
`

func TestParseScript(t *testing.T) {
	sf, err := parseScript([]byte(yamlScript))
	if err != nil {
		t.Fatal(err)
	}
	if len(sf.Replies) != 1 || sf.Replies[0].Content != "shared-1" {
		t.Fatalf("replies = %+v", sf.Replies)
	}
	a := sf.Models["agent"]
	if len(a) != 2 || a[0].Delay != 10*time.Millisecond || a[0].ToolCalls[0] != (ToolCall{ID: "call_1", Name: "get_stock", Arguments: `{"sku":"A1"}`}) ||
		a[0].Usage != (Usage{PromptTokens: 10, CompletionTokens: 4, ReasoningTokens: 3}) || a[1].Status != 429 || a[1].RetryAfter != "2" {
		t.Fatalf("agent script = %+v", a)
	}
	// The JSON form round-trips through MarshalJSON.
	js := `{"replies":[{"content":"x","delay":"1.5s"}]}`
	sf, err = parseScript([]byte(js))
	if err != nil || sf.Replies[0].Delay != 1500*time.Millisecond {
		t.Fatalf("json script: %+v %v", sf, err)
	}
	b, err := sf.Replies[0].MarshalJSON()
	if err != nil || string(b) != `{"content":"x","delay":"1.5s"}` {
		t.Fatalf("MarshalJSON = %s %v", b, err)
	}
}

func TestParseScriptErrors(t *testing.T) {
	cases := []struct{ name, src, wantErr string }{
		{"unknown top-level field", "replys: []", `unknown field "replys"`},
		{"unknown reply field", "replies: [{contnet: x}]", `unknown field "contnet"`},
		{"unknown tool call field", "replies: [{tool_calls: [{name: f, args: '{}'}]}]", `unknown field "args"`},
		{"bad delay", "replies: [{delay: soon}]", `delay "soon"`},
		{"empty tool name", "models: {agent: [{content: a}, {tool_calls: [{id: c}]}]}", "models.agent[1]: tool_calls[0]: name is empty"},
		{"bad status", "replies: [{status: 700}]", "replies[0]: status 700 is not an HTTP status"},
		{"not yaml", "replies: [", "script is not valid YAML or JSON"},
		{"wrong type", "replies: {content: x}", "cannot unmarshal object"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseScript([]byte(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
	_, err := LoadScript(filepath.Join(t.TempDir(), "missing.yaml"))
	if err == nil || !strings.Contains(err.Error(), "read script") {
		t.Fatalf("missing file err = %v", err)
	}
}

func FuzzParseScript(f *testing.F) {
	f.Add([]byte(yamlScript))
	f.Add([]byte(`{"replies":[{"content":"x","delay":"1s"}]}`))
	f.Add([]byte(`models: {"": []}`))
	f.Add([]byte(`replies: [{status: -1}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		sf, err := parseScript(data)
		if err != nil {
			return
		}
		// Whatever parses must be accepted by New unchanged.
		if _, err := New(sf.Config()); err != nil {
			t.Fatalf("ParseScript accepted a script New rejects: %v", err)
		}
	})
}
