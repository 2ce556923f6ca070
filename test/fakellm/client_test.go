package fakellm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

var lookupTool = openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
	Name:        "get_stock",
	Description: openai.String("Stock level for a SKU"),
	Parameters: shared.FunctionParameters{
		"type":       "object",
		"properties": map[string]any{"sku": map[string]any{"type": "string"}},
		"required":   []string{"sku"},
	},
})

func TestOfficialClientPlainContentAndRecording(t *testing.T) {
	s := startServer(t, Config{Script: []Reply{{
		Content: "Hello there",
		Usage:   Usage{PromptTokens: 12, CompletionTokens: 5, ReasoningTokens: 2, CachedTokens: 4},
	}}})
	resp, err := client(s).Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "agent-model",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("You are a shop assistant."),
			openai.UserMessage("Is A1 in stock?"),
		},
		Tools:               []openai.ChatCompletionToolUnionParam{lookupTool},
		Temperature:         openai.Float(0.25),
		MaxCompletionTokens: openai.Int(300),
		Seed:                openai.Int(7),
	})
	if err != nil {
		t.Fatalf("chat completion: %v", err)
	}
	if resp.Object != "chat.completion" || !strings.HasPrefix(resp.ID, "chatcmpl-") || resp.Model != "agent-model" || resp.Created == 0 {
		t.Fatalf("envelope = id %q object %q model %q created %d", resp.ID, resp.Object, resp.Model, resp.Created)
	}
	if len(resp.Choices) != 1 {
		t.Fatalf("choices = %d, want 1", len(resp.Choices))
	}
	c := resp.Choices[0]
	if c.Message.Content != "Hello there" || c.FinishReason != "stop" || string(c.Message.Role) != "assistant" || len(c.Message.ToolCalls) != 0 {
		t.Fatalf("choice = content %q finish %q role %q toolcalls %d", c.Message.Content, c.FinishReason, c.Message.Role, len(c.Message.ToolCalls))
	}
	u := resp.Usage
	if u.PromptTokens != 12 || u.CompletionTokens != 5 || u.TotalTokens != 17 ||
		u.CompletionTokensDetails.ReasoningTokens != 2 || u.PromptTokensDetails.CachedTokens != 4 {
		t.Fatalf("usage = %+v", u)
	}

	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("recorded %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Seq != 0 || r.Path != "/v1/chat/completions" || r.Model != "agent-model" || r.Error != "" {
		t.Fatalf("request = seq %d path %q model %q error %q", r.Seq, r.Path, r.Model, r.Error)
	}
	if r.Authorization != "Bearer "+testKey {
		t.Fatalf("authorization = %q", r.Authorization)
	}
	if len(r.Messages) != 2 || r.Messages[0].Role != "system" || r.Messages[0].Content != "You are a shop assistant." ||
		r.Messages[1].Role != "user" || r.Messages[1].Content != "Is A1 in stock?" {
		t.Fatalf("messages = %+v", r.Messages)
	}
	if len(r.Tools) != 1 || r.Tools[0].Name != "get_stock" || r.Tools[0].Type != "function" ||
		r.Tools[0].Description != "Stock level for a SKU" || !strings.Contains(string(r.Tools[0].Parameters), `"required":["sku"]`) {
		t.Fatalf("tools = %+v", r.Tools)
	}
	if r.Temperature == nil || *r.Temperature != 0.25 || r.MaxTokens == nil || *r.MaxTokens != 300 || r.Seed == nil || *r.Seed != 7 {
		t.Fatalf("sampling = temperature %v max tokens %v seed %v", r.Temperature, r.MaxTokens, r.Seed)
	}
	if !strings.Contains(string(r.Raw), `"model":"agent-model"`) {
		t.Fatalf("raw body %s does not hold the model", r.Raw)
	}
}

func TestOfficialClientToolCallsRoundTrip(t *testing.T) {
	s := startServer(t, Config{Script: []Reply{
		{ToolCalls: []ToolCall{
			{ID: "call_a", Name: "get_stock", Arguments: `{"sku":"A1"}`},
			{Name: "get_stock", Arguments: `{"sku":"B2"}`}, // id generated
		}, Usage: Usage{PromptTokens: 30, CompletionTokens: 9}},
		{Content: "A1 has 3, B2 has 0."},
	}})
	c := client(s)
	params := openai.ChatCompletionNewParams{
		Model:    "agent-model",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("stock of A1 and B2?")},
		Tools:    []openai.ChatCompletionToolUnionParam{lookupTool},
	}
	resp, err := c.Chat.Completions.New(context.Background(), params)
	if err != nil {
		t.Fatalf("first call: %v", err)
	}
	msg := resp.Choices[0].Message
	if resp.Choices[0].FinishReason != "tool_calls" || msg.Content != "" || len(msg.ToolCalls) != 2 {
		t.Fatalf("first reply = finish %q content %q toolcalls %d", resp.Choices[0].FinishReason, msg.Content, len(msg.ToolCalls))
	}
	tc0, tc1 := msg.ToolCalls[0], msg.ToolCalls[1]
	if tc0.ID != "call_a" || tc0.Type != "function" || tc0.Function.Name != "get_stock" || tc0.Function.Arguments != `{"sku":"A1"}` {
		t.Fatalf("tool call 0 = %+v", tc0)
	}
	if tc1.ID != "call_fake0001" || tc1.Function.Arguments != `{"sku":"B2"}` {
		t.Fatalf("tool call 1 = id %q args %q", tc1.ID, tc1.Function.Arguments)
	}

	params.Messages = append(params.Messages, msg.ToParam(),
		openai.ToolMessage(`{"qty":3}`, tc0.ID), openai.ToolMessage(`{"qty":0}`, tc1.ID))
	resp, err = c.Chat.Completions.New(context.Background(), params)
	if err != nil {
		t.Fatalf("second call: %v", err)
	}
	if got := resp.Choices[0].Message.Content; got != "A1 has 3, B2 has 0." {
		t.Fatalf("second reply = %q", got)
	}
	r := s.Requests()[1]
	if len(r.Messages) != 4 {
		t.Fatalf("second request has %d messages, want 4", len(r.Messages))
	}
	a := r.Messages[1]
	if a.Role != "assistant" || len(a.ToolCalls) != 2 || a.ToolCalls[0] != (ToolCall{ID: "call_a", Name: "get_stock", Arguments: `{"sku":"A1"}`}) {
		t.Fatalf("echoed assistant message = %+v", a)
	}
	if r.Messages[2].Role != "tool" || r.Messages[2].ToolCallID != "call_a" || r.Messages[2].Content != `{"qty":3}` ||
		r.Messages[3].ToolCallID != "call_fake0001" {
		t.Fatalf("tool messages = %+v %+v", r.Messages[2], r.Messages[3])
	}
}

func TestDuplicateToolCallIDsAreSentVerbatim(t *testing.T) {
	s := startServer(t, Config{Script: []Reply{{ToolCalls: []ToolCall{
		{ID: "call_1", Name: "a"}, {ID: "call_1", Name: "b", Arguments: `{"x":1}`},
	}}}})
	resp, err := client(s).Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("go")},
	})
	if err != nil {
		t.Fatal(err)
	}
	tcs := resp.Choices[0].Message.ToolCalls
	if len(tcs) != 2 || tcs[0].ID != "call_1" || tcs[1].ID != "call_1" || tcs[0].Function.Arguments != "{}" {
		t.Fatalf("tool calls = %+v", tcs)
	}
}

func TestRateLimitWithRetryAfterIsRetriedByClient(t *testing.T) {
	s := startServer(t, Config{Script: []Reply{
		{Status: 429, RetryAfter: "0.05"},
		{Status: 429, RetryAfter: "0.05"},
		{Content: "finally", Usage: Usage{PromptTokens: 3, CompletionTokens: 1}},
	}})
	resp, err := client(s, option.WithMaxRetries(2)).Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	if err != nil {
		t.Fatalf("expected success after two 429s: %v", err)
	}
	if resp.Choices[0].Message.Content != "finally" || resp.Usage.TotalTokens != 4 {
		t.Fatalf("reply = %q usage %d", resp.Choices[0].Message.Content, resp.Usage.TotalTokens)
	}
	reqs := s.Requests()
	if len(reqs) != 3 {
		t.Fatalf("server saw %d attempts, want 3", len(reqs))
	}
	// The client marks retries; the body is identical every time.
	if got := reqs[2].Header.Get("X-Stainless-Retry-Count"); got != "2" {
		t.Fatalf("third attempt retry count header = %q, want 2", got)
	}
	if string(reqs[0].Raw) != string(reqs[2].Raw) {
		t.Fatalf("retried body differs:\n%s\n%s", reqs[0].Raw, reqs[2].Raw)
	}
}

func TestInjectedErrorsReachTheClient(t *testing.T) {
	cases := []struct {
		name       string
		reply      Reply
		wantStatus int
		wantType   string
		wantCode   string
		wantMsg    string
		wantHeader [2]string
	}{
		{"429 defaults", Reply{Status: 429, RetryAfter: "7"}, 429, "rate_limit_exceeded", "rate_limit_exceeded", "Rate limit reached (injected by fakellm)", [2]string{"Retry-After", "7"}},
		{"500 defaults", Reply{Status: 500}, 500, "server_error", "", "The server had an error while processing your request (injected by fakellm)", [2]string{}},
		{"custom body", Reply{Status: 400, ErrorMessage: "context too long", ErrorType: "invalid_request_error", ErrorCode: "context_length_exceeded"},
			400, "invalid_request_error", "context_length_exceeded", "context too long", [2]string{}},
		{"extra header", Reply{Status: 503, Header: map[string]string{"x-should-retry": "false"}}, 503, "server_error", "", "The engine is currently overloaded (injected by fakellm)", [2]string{"X-Should-Retry", "false"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, Config{Script: []Reply{tc.reply}})
			_, err := client(s).Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
				Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
			})
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("err = %v (%T), want *openai.Error", err, err)
			}
			if apiErr.StatusCode != tc.wantStatus || apiErr.Type != tc.wantType || apiErr.Code != tc.wantCode || apiErr.Message != tc.wantMsg {
				t.Fatalf("error = status %d type %q code %q message %q", apiErr.StatusCode, apiErr.Type, apiErr.Code, apiErr.Message)
			}
			if tc.wantHeader[0] != "" {
				if got := apiErr.Response.Header.Get(tc.wantHeader[0]); got != tc.wantHeader[1] {
					t.Fatalf("header %s = %q, want %q", tc.wantHeader[0], got, tc.wantHeader[1])
				}
			}
		})
	}
}

func TestExhaustedScriptAnswers500NamingTheModel(t *testing.T) {
	s := startServer(t, Config{Scripts: map[string][]Reply{"agent-model": {{Content: "only one"}}}})
	c := client(s)
	params := openai.ChatCompletionNewParams{Model: "agent-model", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}
	if _, err := c.Chat.Completions.New(context.Background(), params); err != nil {
		t.Fatal(err)
	}
	_, err := c.Chat.Completions.New(context.Background(), params)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 500 {
		t.Fatalf("err = %v, want a 500", err)
	}
	if want := `fakellm: script for model "agent-model" is exhausted after 1 replies`; apiErr.Message != want {
		t.Fatalf("message = %q, want %q", apiErr.Message, want)
	}
	// A model with no script of its own and no shared script is exhausted too.
	params.Model = "other"
	_, err = c.Chat.Completions.New(context.Background(), params)
	if !errors.As(err, &apiErr) || apiErr.Message != `fakellm: script for model "other" is exhausted after 0 replies` {
		t.Fatalf("err = %v", err)
	}
}

func TestPerModelScriptsAndResponder(t *testing.T) {
	s := startServer(t, Config{
		Scripts: map[string][]Reply{
			"agent": {{Content: "agent-1"}, {Content: "agent-2"}},
			"user":  {{Content: "user-1"}, {Content: "###STOP###"}},
		},
		Responder: func(r Request) Reply {
			return Reply{Content: fmt.Sprintf("echo:%s#%d", r.Messages[len(r.Messages)-1].Content, r.Seq)}
		},
	})
	c := client(s)
	ask := func(model, text string) string {
		t.Helper()
		resp, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)},
		})
		if err != nil {
			t.Fatalf("%s: %v", model, err)
		}
		return resp.Choices[0].Message.Content
	}
	got := []string{ask("agent", "a"), ask("user", "b"), ask("grader", "c"), ask("agent", "d"), ask("user", "e")}
	want := []string{"agent-1", "user-1", "echo:c#2", "agent-2", "###STOP###"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("replies = %v, want %v", got, want)
	}
	if n := len(s.RequestsFor("user")); n != 2 {
		t.Fatalf("RequestsFor(user) = %d, want 2", n)
	}
	if s.Remaining("agent") != 0 || s.Remaining("user") != 0 {
		t.Fatalf("remaining agent=%d user=%d", s.Remaining("agent"), s.Remaining("user"))
	}
}

func TestDelayedReplyIsConsumedWhenClientGivesUp(t *testing.T) {
	s := startServer(t, Config{Script: []Reply{{Content: "slow", Delay: time.Minute}, {Content: "fast"}}})
	c := client(s)
	params := openai.ChatCompletionNewParams{Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := c.Chat.Completions.New(ctx, params); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
	resp, err := c.Chat.Completions.New(context.Background(), params)
	if err != nil || resp.Choices[0].Message.Content != "fast" {
		t.Fatalf("next reply = %v, %v; want fast", resp, err)
	}
}

func TestEstimatedUsageWhenScriptLeavesItEmpty(t *testing.T) {
	s := startServer(t, Config{Script: []Reply{{Content: "12345"}}})
	resp, err := client(s).Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("abcdefghi")},
	})
	if err != nil {
		t.Fatal(err)
	}
	// 9 prompt bytes -> 3 tokens, 5 completion bytes -> 2 tokens.
	if u := resp.Usage; u.PromptTokens != 3 || u.CompletionTokens != 2 || u.TotalTokens != 5 {
		t.Fatalf("usage = %+v", u)
	}
}

func TestConcurrentRequestsGetDistinctRepliesInArrivalOrder(t *testing.T) {
	const n = 20
	var script []Reply
	for i := range n {
		script = append(script, Reply{Content: string(rune('a' + i))})
	}
	s := startServer(t, Config{Script: script})
	c := client(s)
	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			resp, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
				Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")},
			})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			seen[resp.Choices[0].Message.Content] = true
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("distinct replies = %d, want %d", len(seen), n)
	}
	for i, r := range s.Requests() {
		if r.Seq != i {
			t.Fatalf("request %d has seq %d", i, r.Seq)
		}
	}
}

func TestAPIKeyRequiredAndNeverEchoed(t *testing.T) {
	s := startServer(t, Config{APIKey: "sk-right", Script: []Reply{{Content: "ok"}}})
	_, err := client(s).Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")},
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 || apiErr.Code != "invalid_api_key" {
		t.Fatalf("err = %v, want 401 invalid_api_key", err)
	}
	if strings.Contains(apiErr.RawJSON(), testKey) {
		t.Fatalf("error body echoes the key: %s", apiErr.RawJSON())
	}
	if s.Remaining("") != 1 {
		t.Fatalf("rejected request consumed a reply: remaining %d", s.Remaining(""))
	}
	resp, err := client(s, option.WithAPIKey("sk-right")).Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")},
	})
	if err != nil || resp.Choices[0].Message.Content != "ok" {
		t.Fatalf("with right key: %v", err)
	}
}
