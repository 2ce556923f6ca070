package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// testKey and yamlScript are test/fakellm's test key and script: these tests
// moved here from its file_test.go with the flag parsing.
const testKey = "sk-fakellm-test-key"

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

func TestMainServesScriptFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "script.yaml")
	if err := os.WriteFile(path, []byte(yamlScript), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FAKELLM_TEST_KEY", testKey)
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--script", path, "--api-key-env", "FAKELLM_TEST_KEY"}, pw, logr.Discard())
		_ = pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("read URL line: %v", err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "fakellm listening on ")
	if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/v1") {
		t.Fatalf("first line = %q", line)
	}
	c := openai.NewClient(option.WithBaseURL(url+"/"), option.WithAPIKey(testKey), option.WithMaxRetries(0))
	resp, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "agent", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("stock?")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if tc := resp.Choices[0].Message.ToolCalls; len(tc) != 1 || tc[0].Function.Name != "get_stock" || resp.Usage.CompletionTokensDetails.ReasoningTokens != 3 {
		t.Fatalf("reply = %+v", resp.Choices[0].Message)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run returned %v", err)
	}
}

func TestMainRejectsBadArguments(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"unknown flag", []string{"--port", "1"}, "flag provided but not defined: -port"},
		{"positional", []string{"extra"}, `unexpected argument "extra"`},
		{"missing script", []string{"--script", "/nonexistent/s.yaml"}, "read script"},
		{"unset key env", []string{"--api-key-env", "FAKELLM_SURELY_UNSET_VAR"}, "--api-key-env FAKELLM_SURELY_UNSET_VAR: variable is empty or unset"},
		{"bad listen", []string{"--listen", "256.0.0.1:0"}, "listen on 256.0.0.1:0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := run(context.Background(), tc.args, io.Discard, logr.Discard())
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}
