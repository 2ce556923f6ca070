package shop

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// syncBuffer collects stderr written by the server goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestMainServesTheStateFile runs the stdio entry point over a pipe pair (what
// StdioTransport would be in a child process), loading the state file, and checks that
// closing the client's end ends run with no error.
func TestMainServesTheStateFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	if err := os.WriteFile(path, initialStateJSON, 0o600); err != nil {
		t.Fatal(err)
	}
	clientIn, serverOut := io.Pipe()
	serverIn, clientOut := io.Pipe()
	var stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(context.Background(), Options{StatePath: path}, &mcp.IOTransport{Reader: serverIn, Writer: serverOut}, &stderr)
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).
		Connect(context.Background(), &mcp.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_customer", Arguments: json.RawMessage(`{"customer_id":"C-101"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != `{"id": "C-101", "name": "Alex Torres", "email": "alex@example.com", "balance": 300.0}` {
		t.Errorf("get_customer = %s", got)
	}
	cs.Close()
	if err := <-done; err != nil {
		t.Errorf("run after the client closed = %v, want nil", err)
	}
	if got := stderr.String(); got != "shop: serving MCP on stdio (products=4 customers=1 orders=0)\n" {
		t.Errorf("stderr = %q", got)
	}
}

// The command-line cases (unknown flags, positional arguments) moved with
// the flag parsing to cmd/tolokaforge/cli/mcp_test.go.
func TestMainRejectsBadStateFiles(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"customers":[{"id":"C","balance":"lots"}]}`), 0o600)
	cases := []struct {
		opts Options
		want string
	}{
		{Options{StatePath: filepath.Join(t.TempDir(), "missing.json")}, "mcp shop: --state: open "},
		{Options{StatePath: bad}, `mcp shop: --state ` + bad + `: state.customers[0].balance: want a number, got string "lots"`},
	}
	for _, c := range cases {
		err := run(context.Background(), c.opts, &mcp.IOTransport{Reader: io.NopCloser(strings.NewReader("")), Writer: nopWriteCloser{io.Discard}}, io.Discard)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("run(%+v) = %v, want prefix %q", c.opts, err, c.want)
		}
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
