package mcpclient

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"tolokaforge.io/operator/examples/shop"
)

// serveHTTP serves srv over streamable HTTP on 127.0.0.1 (random port).
func serveHTTP(t *testing.T, srv *mcp.Server) string {
	t.Helper()
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return ts.URL
}

func TestStreamableHTTP(t *testing.T) {
	url := serveHTTP(t, shop.NewServer(shop.State{}))
	ctx := testCtx(t)
	s, err := Start(ctx, Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.HasStateTools() || s.PID() != 0 {
		t.Fatalf("HasStateTools=%v PID=%d", s.HasStateTools(), s.PID())
	}
	tools, err := s.Tools(ctx)
	if err != nil || len(tools) != 4 {
		t.Fatalf("Tools = %v, %v", tools, err)
	}
	if err := s.SetState(ctx, initialTables(t)); err != nil {
		t.Fatal(err)
	}
	mustCall(t, s, "place_order", goldenPlaceOrder)
	mustCall(t, s, "confirm_payment", `{"order_id":"O-001"}`)
	if out, isErr, err := s.Call(ctx, "confirm_payment", []byte(`{"order_id":"O-001"}`)); err != nil || !isErr || out != "Order 'O-001' cannot be paid" {
		t.Errorf("second confirm_payment = %q, %v, %v", out, isErr, err)
	}
	got, err := s.GetState(ctx)
	if err != nil || stateString(t, got) != goldenState {
		t.Fatalf("state (err %v) =\n%s", err, stateString(t, got))
	}
	// Over HTTP, Restart opens a new session; the remote server keeps its state.
	if err := s.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err = s.GetState(ctx); err != nil || stateString(t, got) != goldenState {
		t.Fatalf("state after Restart (err %v) =\n%s", err, stateString(t, got))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Call(ctx, "list_products", nil); !errors.Is(err, errClosed) {
		t.Errorf("Call after Close = %v", err)
	}
}

func TestServerWithoutStateTools(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "plain", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}, &mcp.TextContent{Text: strings.ToUpper(in.Text)}}}, nil, nil
	})
	ctx := testCtx(t)
	s, err := Start(ctx, Config{URL: serveHTTP(t, srv)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.HasStateTools() {
		t.Error("HasStateTools = true")
	}
	if _, err := s.GetState(ctx); !errors.Is(err, errNoStateTools) {
		t.Errorf("GetState = %v", err)
	}
	if err := s.SetState(ctx, nil); !errors.Is(err, errNoStateTools) {
		t.Errorf("SetState = %v", err)
	}
	// Text contents are joined with "\n".
	if out := mustCall(t, s, "echo", `{"text":"hi"}`); out != "hi\nHI" {
		t.Errorf("echo = %q", out)
	}
	// The SDK validates typed tools' input: that comes back as a tool error.
	if out, isErr, err := s.Call(ctx, "echo", []byte(`{"text":5}`)); err != nil || !isErr || !strings.Contains(out, "text") {
		t.Errorf("echo with a bad argument = %q, %v, %v", out, isErr, err)
	}
}

func TestUnreachableURL(t *testing.T) {
	ts := httptest.NewServer(http.NotFoundHandler())
	ts.Close() // nothing listens on its port any more
	_, err := Start(testCtx(t), Config{URL: ts.URL + "/mcp"})
	if err == nil || !strings.HasPrefix(err.Error(), "mcpclient: initialize "+ts.URL+"/mcp: ") {
		t.Errorf("Start = %v", err)
	}
}

// StartTools answers from the listing Start read: the same tools as a fresh
// Tools, without a second tools/list round trip.
func TestStartToolsReusesTheHandshakeListing(t *testing.T) {
	var lists atomic.Int32
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return shop.NewServer(shop.State{}) }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"tools/list"`)) {
			lists.Add(1)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	ctx := testCtx(t)
	s, err := Start(ctx, Config{URL: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := lists.Load(); n != 1 {
		t.Fatalf("Start sent %d tools/list, want 1", n)
	}
	got, err := s.StartTools()
	if err != nil {
		t.Fatal(err)
	}
	if n := lists.Load(); n != 1 {
		t.Errorf("StartTools sent a tools/list (%d in all, want 1)", n)
	}
	want, err := s.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || !reflect.DeepEqual(got, want) {
		t.Errorf("StartTools = %+v\nTools = %+v", got, want)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartTools(); !errors.Is(err, errClosed) {
		t.Errorf("StartTools after Close = %v, want ErrClosed", err)
	}
}
