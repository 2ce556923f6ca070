package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"tolokaforge.io/operator/examples/shop"
	"tolokaforge.io/operator/test/mcpstandin"
)

// shopServer is the MCP stand-in (test/mcpstandin) built once for the whole
// run: a real binary serving shop.Main on stdio.
var shopServer string

func TestMain(m *testing.M) {
	// The test binary doubles as "the runner binary" for SelfCommand: run with
	// `mcp shop ...` it serves the shop, as `tolokaforge mcp shop` does.
	mcpstandin.ServeIfAsked()
	dir, err := os.MkdirTemp("", "mcpclient-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if shopServer, err = mcpstandin.Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// logEntry is one record of the capturing logger.
type logEntry struct {
	msg    string
	values map[string]any
}

// capture is a logr sink that records entries for assertions.
type capture struct {
	mu      *sync.Mutex
	entries *[]logEntry
	kv      []any
}

func newCapture() (logr.Logger, func() []logEntry) {
	c := capture{mu: &sync.Mutex{}, entries: &[]logEntry{}}
	return logr.New(c), func() []logEntry {
		c.mu.Lock()
		defer c.mu.Unlock()
		return append([]logEntry(nil), *c.entries...)
	}
}

func (c capture) Init(logr.RuntimeInfo)  {}
func (c capture) Enabled(level int) bool { return true }
func (c capture) Info(_ int, msg string, kv ...any) {
	c.record(msg, kv)
}
func (c capture) Error(err error, msg string, kv ...any) {
	c.record(msg, append(kv, "error", err))
}
func (c capture) record(msg string, kv []any) {
	values := map[string]any{}
	all := append(append([]any(nil), c.kv...), kv...)
	for i := 0; i+1 < len(all); i += 2 {
		values[fmt.Sprint(all[i])] = all[i+1]
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	*c.entries = append(*c.entries, logEntry{msg: msg, values: values})
}
func (c capture) WithValues(kv ...any) logr.LogSink {
	c.kv = append(append([]any(nil), c.kv...), kv...)
	return c
}
func (c capture) WithName(string) logr.LogSink { return c }

// stderrLines returns the "line" values of the stderr entries logged so far.
func stderrLines(entries []logEntry) []string {
	var lines []string
	for _, e := range entries {
		if e.msg == "mcp server stderr" {
			lines = append(lines, e.values["line"].(string))
		}
	}
	return lines
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// startShop starts the shop binary over stdio and closes it at the end of the test.
func startShop(t testing.TB, mutate func(*Config)) *Server {
	t.Helper()
	cfg := Config{Command: []string{shopServer}, Dir: t.TempDir(), KillGrace: 5 * time.Second}
	if mutate != nil {
		mutate(&cfg)
	}
	s, err := Start(testCtx(t), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// initialTables is shop_orders_02's initial_state.json as the runner would hold it.
func initialTables(t testing.TB) map[string]json.RawMessage {
	t.Helper()
	raw, err := shop.InitialState().MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var tables map[string]json.RawMessage
	if err := json.Unmarshal(raw, &tables); err != nil {
		t.Fatal(err)
	}
	return tables
}

func mustCall(t *testing.T, s *Server, name, args string) string {
	t.Helper()
	out, isErr, err := s.Call(testCtx(t), name, json.RawMessage(args))
	if err != nil || isErr {
		t.Fatalf("%s(%s) = %q, isError=%v, err=%v", name, args, out, isErr, err)
	}
	return out
}

func stateString(t *testing.T, tables map[string]json.RawMessage) string {
	t.Helper()
	var b strings.Builder
	for _, name := range []string{"products", "customers", "orders"} {
		fmt.Fprintf(&b, "%s=%s\n", name, tables[name])
	}
	return b.String()
}
