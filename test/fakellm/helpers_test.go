package fakellm

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

const testKey = "sk-fakellm-test-key"

// startServer starts a fake on loopback and stops it with the test.
func startServer(t testing.TB, cfg Config) *Server {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := s.Start(""); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// client is the official OpenAI client pointed at the fake, retries off
// unless a test turns them on.
func client(s *Server, opts ...option.RequestOption) *openai.Client {
	base := []option.RequestOption{
		option.WithBaseURL(s.URL() + "/"),
		option.WithAPIKey(testKey),
		option.WithMaxRetries(0),
	}
	c := openai.NewClient(append(base, opts...)...)
	return &c
}

type rawResponse struct {
	status int
	header http.Header
	body   map[string]any
}

// post sends a raw body, for inputs the official client would never build.
func post(t *testing.T, url, method, body string, header map[string]string) rawResponse {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("response body %q is not JSON: %v", b, err)
	}
	return rawResponse{status: resp.StatusCode, header: resp.Header, body: m}
}

func errorField(t *testing.T, r rawResponse, field string) any {
	t.Helper()
	e, ok := r.body["error"].(map[string]any)
	if !ok {
		t.Fatalf("body %v has no error object", r.body)
	}
	return e[field]
}
