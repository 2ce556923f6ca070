package fakellm

import (
	"net/http"
	"strings"
	"testing"
)

func TestInvalidRequestsAre400WithParam(t *testing.T) {
	s := startServer(t, Config{Script: []Reply{{Content: "never"}}})
	url := s.URL() + "/chat/completions"
	cases := []struct {
		name, body, wantParam, wantMsg string
	}{
		{"not json", `{"model":`, "", "request body is not valid JSON"},
		{"trailing data", `{"model":"m","messages":[{"role":"user","content":"x"}]} {}`, "", "trailing data"},
		{"no model", `{"messages":[{"role":"user","content":"x"}]}`, "model", "you must provide a model parameter"},
		{"streaming", `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`, "stream", "non-streaming requests only"},
		{"no messages", `{"model":"m","messages":[]}`, "messages", "must be a non-empty array"},
		{"bad role", `{"model":"m","messages":[{"role":"bot","content":"x"}]}`, "messages[0].role", `invalid role "bot"`},
		{"numeric content", `{"model":"m","messages":[{"role":"user","content":5}]}`, "messages[0].content", "must be a string, null or an array"},
		{"tool without id", `{"model":"m","messages":[{"role":"user","content":"x"},{"role":"tool","content":"r"}]}`, "messages[1].tool_call_id", "is required"},
		{"orphan tool message", `{"model":"m","messages":[{"role":"user","content":"x"},{"role":"tool","tool_call_id":"c1","content":"r"}]}`,
			"messages[1].role", "must be a response to a preceding message with 'tool_calls'"},
		{"wrong tool call id", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c2","content":"r"}]}`,
			"messages[1].tool_call_id", `"c2" does not match any tool call of messages[0]`},
		{"unanswered tool call", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"c2","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"r"},{"role":"user","content":"next"}]}`,
			"messages[2]", `"c2" (messages[0]) has no response`},
		{"tool calls on user", `{"model":"m","messages":[{"role":"user","content":"x","tool_calls":[{"id":"c","type":"function","function":{"name":"f"}}]}]}`,
			"messages[0].tool_calls", `only assistant messages may carry tool_calls, not "user"`},
		{"bad tool type", `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"retrieval"}]}`, "tools[0].type", `unsupported tool type "retrieval"`},
		{"tool without name", `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{}}]}`, "tools[0].function.name", "is required"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := post(t, url, http.MethodPost, tc.body, nil)
			if r.status != http.StatusBadRequest {
				t.Fatalf("status = %d, want 400 (body %v)", r.status, r.body)
			}
			if got := errorField(t, r, "type"); got != "invalid_request_error" {
				t.Fatalf("type = %v", got)
			}
			var wantParam any
			if tc.wantParam != "" {
				wantParam = tc.wantParam
			}
			if got := errorField(t, r, "param"); got != wantParam {
				t.Fatalf("param = %v, want %v", got, wantParam)
			}
			if msg, _ := errorField(t, r, "message").(string); !strings.Contains(msg, tc.wantMsg) {
				t.Fatalf("message = %q, want it to contain %q", msg, tc.wantMsg)
			}
		})
	}
	if s.Remaining("") != 1 {
		t.Fatalf("invalid requests consumed replies: remaining %d", s.Remaining(""))
	}
	reqs := s.Requests()
	if len(reqs) != len(cases) || reqs[0].Error == "" || string(reqs[0].Raw) != `{"model":` {
		t.Fatalf("recorded %d requests (want %d), first error %q raw %q", len(reqs), len(cases), reqs[0].Error, reqs[0].Raw)
	}
}

func TestLenientAcceptsBrokenToolFlow(t *testing.T) {
	s := startServer(t, Config{Lenient: true, Script: []Reply{{Content: "fine"}}})
	r := post(t, s.URL()+"/chat/completions", http.MethodPost,
		`{"model":"m","messages":[{"role":"user","content":"x"},{"role":"tool","tool_call_id":"c1","content":"r"}]}`, nil)
	if r.status != http.StatusOK {
		t.Fatalf("status = %d body %v", r.status, r.body)
	}
}

func TestArrayContentIsFlattened(t *testing.T) {
	s := startServer(t, Config{Script: []Reply{{Content: "ok"}}})
	r := post(t, s.URL()+"/chat/completions", http.MethodPost,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"b"}]}]}`, nil)
	if r.status != http.StatusOK {
		t.Fatalf("status = %d body %v", r.status, r.body)
	}
	m := s.Requests()[0].Messages[0]
	if m.Content != "ab" || !strings.HasPrefix(string(m.RawContent), "[") {
		t.Fatalf("content = %q raw %s", m.Content, m.RawContent)
	}
}

func TestRoutingErrors(t *testing.T) {
	s := startServer(t, Config{})
	cases := []struct {
		name, method, path string
		status             int
		msg                string
	}{
		{"unknown path", http.MethodPost, "/v1/embeddings", 404, "Invalid URL (POST /v1/embeddings)"},
		{"GET on chat", http.MethodGet, "/v1/chat/completions", 405, "method GET not allowed on /v1/chat/completions; use POST"},
	}
	base := strings.TrimSuffix(s.URL(), "/v1")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := post(t, base+tc.path, tc.method, "", nil)
			if r.status != tc.status || errorField(t, r, "message") != tc.msg {
				t.Fatalf("status %d message %v; want %d %q", r.status, errorField(t, r, "message"), tc.status, tc.msg)
			}
		})
	}
}

func TestResponseShapeMatchesOpenAI(t *testing.T) {
	s := startServer(t, Config{Script: []Reply{{ToolCalls: []ToolCall{{ID: "c1", Name: "f", Arguments: `{"a":1}`}}, Usage: Usage{PromptTokens: 1, CompletionTokens: 2, ReasoningTokens: 1}}}})
	r := post(t, s.URL()+"/chat/completions", http.MethodPost, `{"model":"m","messages":[{"role":"user","content":"x"}]}`, nil)
	if r.status != 200 || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d content type %q", r.status, r.header.Get("Content-Type"))
	}
	choice := r.body["choices"].([]any)[0].(map[string]any)
	msg := choice["message"].(map[string]any)
	if v, present := msg["content"]; !present || v != nil {
		t.Fatalf("content with tool calls = %v (present %v), want null", v, present)
	}
	tc := msg["tool_calls"].([]any)[0].(map[string]any)
	fn := tc["function"].(map[string]any)
	if tc["id"] != "c1" || tc["type"] != "function" || fn["name"] != "f" || fn["arguments"] != `{"a":1}` {
		t.Fatalf("tool call = %v", tc)
	}
	usage := r.body["usage"].(map[string]any)
	details := usage["completion_tokens_details"].(map[string]any)
	if usage["total_tokens"] != 3.0 || details["reasoning_tokens"] != 1.0 || choice["finish_reason"] != "tool_calls" || choice["index"] != 0.0 {
		t.Fatalf("usage %v choice %v", usage, choice)
	}
}

func TestConfigAndEnqueueRejectBadReplies(t *testing.T) {
	cases := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"status out of range", Config{Script: []Reply{{}, {Status: 42}}}, "script[1]: status 42 is not an HTTP status"},
		{"tool without name", Config{Scripts: map[string][]Reply{"a": {{ToolCalls: []ToolCall{{ID: "x"}}}}}}, `scripts["a"][0]: tool_calls[0]: name is empty`},
		{"negative delay", Config{Script: []Reply{{Delay: -1}}}, "script[0]: delay -1ns is negative"},
		{"negative usage", Config{Script: []Reply{{Usage: Usage{ReasoningTokens: -2}}}}, "usage.reasoning_tokens is negative (-2)"},
		{"empty model key", Config{Scripts: map[string][]Reply{"": nil}}, "Scripts has an empty model name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Enqueue("m", Reply{Content: "ok"}, Reply{Status: 999})
	if err == nil || !strings.Contains(err.Error(), `enqueue "m" reply 1: status 999`) {
		t.Fatalf("err = %v", err)
	}
	if s.Remaining("m") != 0 {
		t.Fatalf("failed Enqueue left %d replies", s.Remaining("m"))
	}
	if err := s.Enqueue("m", Reply{Content: "ok"}); err != nil || s.Remaining("m") != 1 {
		t.Fatalf("Enqueue: %v remaining %d", err, s.Remaining("m"))
	}
}

func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","messages":[{"role":"user","content":"x"}]}`,
		`{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"r"}]}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"}]}],"tools":[{"type":"function","function":{"name":"f"}}]}`,
		`{"model":1}`, `[]`, `null`, ``, `{"messages":[{"role":"tool"}]}`,
	} {
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, body []byte, strict bool) {
		req, err := parseRequest(body, strict)
		if err != nil {
			if _, ok := err.(*requestError); !ok {
				t.Fatalf("error %v is %T, want *requestError", err, err)
			}
			return
		}
		if req.Model == "" || len(req.Messages) == 0 || req.Stream {
			t.Fatalf("accepted invalid request: %+v", req)
		}
		for i, m := range req.Messages {
			if m.Role == "tool" && m.ToolCallID == "" {
				t.Fatalf("accepted tool message %d without id", i)
			}
		}
	})
}

func TestReasoningModelRefusesMaxTokensAndTemperature(t *testing.T) {
	s := startServer(t, Config{ReasoningModels: []string{"o-think"}, Script: []Reply{{Content: "a"}, {Content: "b"}, {Content: "c"}}})
	url := s.URL() + "/chat/completions"
	msgs := `"messages":[{"role":"user","content":"x"}]`
	cases := []struct {
		name, body           string
		status               int
		param, code, message string
	}{
		{"max_tokens refused", `{"model":"o-think",` + msgs + `,"max_tokens":64}`, 400, "max_tokens", "unsupported_parameter",
			"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."},
		{"temperature refused", `{"model":"o-think",` + msgs + `,"temperature":0.2}`, 400, "temperature", "unsupported_value",
			"Unsupported value: 'temperature' does not support 0.2 with this model. Only the default (1) value is supported."},
		{"max_completion_tokens taken", `{"model":"o-think",` + msgs + `,"max_completion_tokens":64,"reasoning_effort":"high","temperature":1}`, 200, "", "", ""},
		{"other models take max_tokens", `{"model":"gpt-4o",` + msgs + `,"max_tokens":64,"temperature":0.2}`, 200, "", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := post(t, url, http.MethodPost, tc.body, nil)
			if r.status != tc.status {
				t.Fatalf("status = %d, want %d (body %v)", r.status, tc.status, r.body)
			}
			if tc.status != 400 {
				return
			}
			if got := errorField(t, r, "param"); got != tc.param {
				t.Fatalf("param = %v, want %s", got, tc.param)
			}
			if got := errorField(t, r, "code"); got != tc.code {
				t.Fatalf("code = %v, want %s", got, tc.code)
			}
			if got := errorField(t, r, "message"); got != tc.message {
				t.Fatalf("message = %q, want %q", got, tc.message)
			}
		})
	}
	reqs := s.Requests()
	if r := reqs[2]; r.MaxCompletionTokens == nil || *r.MaxCompletionTokens != 64 || r.LegacyMaxTokens != nil || r.ReasoningEffort != "high" {
		t.Fatalf("recorded %+v", r)
	}
	if r := reqs[3]; r.LegacyMaxTokens == nil || *r.LegacyMaxTokens != 64 || r.MaxCompletionTokens != nil {
		t.Fatalf("recorded %+v", r)
	}
}
