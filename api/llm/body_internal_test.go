package llm

import (
	"encoding/json"
	"testing"

	"tolokaforge.io/operator/api/task"
)

func TestRequestBodyMatchesChatRequest(t *testing.T) {
	conv := []task.Message{{Role: "system", Content: "a <b>"}, {Role: "user", Content: "é\u2028"}}
	tools := json.RawMessage(`[{"type":"function","function":{"name":"f","parameters":{}}}]`)
	temp, topP, maxT, maxC, seed := 0.25, 1.0, 64, 4096, int64(-3)
	for _, cfg := range []task.ModelConfig{{}, {Temperature: &temp, TopP: &topP, MaxTokens: &maxT, MaxCompletionTokens: &maxC, Seed: &seed, ReasoningEffort: "low"}} {
		for _, tl := range []json.RawMessage{nil, tools} {
			var c ConvCache
			msgs, err := c.messages(conv)
			if err != nil {
				t.Fatal(err)
			}
			got, err := requestBody("m\"1", msgs, tl, &cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			w, _ := toWire(conv)
			want, _ := marshal(chatRequest{Model: "m\"1", Messages: w, Tools: tl, Temperature: cfg.Temperature, TopP: cfg.TopP, MaxTokens: cfg.MaxTokens, MaxCompletionTokens: cfg.MaxCompletionTokens, Seed: cfg.Seed, ReasoningEffort: cfg.ReasoningEffort})
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

func TestRequestBodyMergesExtraBody(t *testing.T) {
	extra, err := extraBody([]byte(` { "verbosity" : "low", "metadata": {"run": [1, 2]} } `))
	if err != nil {
		t.Fatal(err)
	}
	effort := "high"
	got, err := requestBody("o", []byte(`[]`), nil, &task.ModelConfig{ReasoningEffort: effort}, extra)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"o","messages":[],"reasoning_effort":"high","verbosity":"low","metadata":{"run":[1,2]}}`
	if string(got) != want || !json.Valid(got) {
		t.Fatalf("body\n%s\nwant\n%s", got, want)
	}
	for _, tc := range []struct{ raw, want string }{
		{`[1]`, "not a JSON object"},
		{`{"a":`, "not a JSON object"},
		{`{"messages":[]}`, `the client sets "messages" itself; use the model config's own field`},
		{`{"stream":true}`, `the client sets "stream" itself; use the model config's own field`},
	} {
		if _, err := extraBody([]byte(tc.raw)); err == nil || err.Error() != tc.want {
			t.Errorf("extraBody(%s) = %v, want %q", tc.raw, err, tc.want)
		}
	}
	for _, empty := range []string{``, `null`, `{}`, ` { } `} {
		if b, err := extraBody([]byte(empty)); err != nil || b != nil {
			t.Errorf("extraBody(%q) = %q, %v", empty, b, err)
		}
	}
}

func FuzzExtraBody(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, ` {"a": [1, {"b": null}], "c": "é<>"} `, `{"model":"x"}`, `[1]`, `null`, `{"a":1,"a":2}`, `{"a":1}{}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		extra, err := extraBody([]byte(raw))
		if err != nil {
			return
		}
		body, err := requestBody("m", []byte(`[]`), nil, &task.ModelConfig{}, extra)
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(body, &obj); err != nil {
			t.Fatalf("extraBody(%q) spliced into an invalid body %s: %v", raw, body, err)
		}
		if string(obj["model"]) != `"m"` || string(obj["messages"]) != `[]` {
			t.Fatalf("extraBody(%q) overrode a reserved key: %s", raw, body)
		}
	})
}
