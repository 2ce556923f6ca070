package llm

import (
	"encoding/json"
	"testing"

	"tolokaforge.io/operator/api/task"
)

func TestRequestBodyMatchesChatRequest(t *testing.T) {
	conv := []task.Message{{Role: "system", Content: "a <b>"}, {Role: "user", Content: "é\u2028"}}
	tools := json.RawMessage(`[{"type":"function","function":{"name":"f","parameters":{}}}]`)
	temp, topP, maxT, seed := 0.25, 1.0, 64, int64(-3)
	for _, cfg := range []task.ModelConfig{{}, {Temperature: &temp, TopP: &topP, MaxTokens: &maxT, Seed: &seed}} {
		for _, tl := range []json.RawMessage{nil, tools} {
			var c ConvCache
			msgs, err := c.messages(conv)
			if err != nil {
				t.Fatal(err)
			}
			got, err := requestBody("m\"1", msgs, tl, &cfg)
			if err != nil {
				t.Fatal(err)
			}
			w, _ := toWire(conv)
			want, _ := marshal(chatRequest{Model: "m\"1", Messages: w, Tools: tl, Temperature: cfg.Temperature, TopP: cfg.TopP, MaxTokens: cfg.MaxTokens, Seed: cfg.Seed})
			if string(got) != string(want) {
				t.Fatalf("body\n%s\nwant\n%s", got, want)
			}
		}
	}
}

func TestConvCacheReusesAndDiverges(t *testing.T) {
	var c ConvCache
	a := []task.Message{{Role: "system", Content: "s"}, {Role: "user", Content: "hi"}}
	if b, _ := c.messages(a); string(b) != `[{"role":"system","content":"s"},{"role":"user","content":"hi"}]` {
		t.Fatalf("first = %s", b)
	}
	first := &c.enc[0][0]
	a = append(a, task.Message{Role: "assistant", ToolCalls: []task.ToolCall{{ID: "x", Function: task.FunctionCall{Name: "f", Arguments: "{}"}}}})
	b, _ := c.messages(a)
	if string(b) != `[{"role":"system","content":"s"},{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"x","type":"function","function":{"name":"f","arguments":"{}"}}]}]` {
		t.Fatalf("appended = %s", b)
	}
	if &c.enc[0][0] != first {
		t.Fatal("the unchanged prefix was re-encoded")
	}
	// Another conversation sharing only the system prompt.
	other := []task.Message{{Role: "system", Content: "s"}, {Role: "user", Content: "bye"}}
	if b, _ := c.messages(other); string(b) != `[{"role":"system","content":"s"},{"role":"user","content":"bye"}]` {
		t.Fatalf("diverged = %s", b)
	}
	if len(c.msgs) != 2 {
		t.Fatalf("cache holds %d messages, want 2", len(c.msgs))
	}
	if _, err := c.messages([]task.Message{{Role: "robot"}}); err == nil {
		t.Fatal("a bad role was encoded")
	}
}
