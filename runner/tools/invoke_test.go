package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner/tools"
)

type fn func(ctx context.Context, args json.RawMessage) (string, error)

func (f fn) Call(ctx context.Context, args json.RawMessage) (string, error) { return f(ctx, args) }

type session struct {
	fn
	invalidated atomic.Int32
}

func (s *session) Invalidate() { s.invalidated.Add(1) }

func TestInvoke(t *testing.T) {
	block := fn(func(ctx context.Context, _ json.RawMessage) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	})
	cases := []struct {
		name string
		tool tools.Tool
		want tools.Outcome
	}{
		{"success", fn(func(context.Context, json.RawMessage) (string, error) { return "ok", nil }), tools.Outcome{Status: task.ToolCallSuccess, Output: "ok"}},
		{"error", fn(func(context.Context, json.RawMessage) (string, error) { return "partial", errors.New("card declined") }),
			tools.Outcome{Status: task.ToolCallError, Message: "card declined"}},
		{"argument error", fn(func(context.Context, json.RawMessage) (string, error) {
			return "", fmt.Errorf("decode: %w", &tools.ArgumentError{Path: "arguments.x", Msg: "required"})
		}), tools.Outcome{Status: task.ToolCallInvalidArguments, Message: "Invalid arguments for tool 't': arguments.x: required"}},
		{"timeout", block, tools.Outcome{Status: task.ToolCallTimeout, Message: "Tool execution timed out after 0.02s"}},
		{"deadline error from the tool", fn(func(ctx context.Context, _ json.RawMessage) (string, error) {
			<-ctx.Done()
			return "", fmt.Errorf("http: %w", context.DeadlineExceeded)
		}), tools.Outcome{Status: task.ToolCallTimeout, Message: "Tool execution timed out after 0.02s"}},
		{"ignores its context", fn(func(context.Context, json.RawMessage) (string, error) {
			time.Sleep(time.Second)
			return "late", nil
		}), tools.Outcome{Status: task.ToolCallTimeout, Message: "Tool execution timed out after 0.02s"}},
	}
	for _, tc := range cases {
		for _, inline := range []bool{false, true} {
			if inline && tc.name == "ignores its context" {
				continue // exactly what inline tools must not do
			}
			t.Run(fmt.Sprintf("%s/inline=%v", tc.name, inline), func(t *testing.T) {
				got := tools.Invoke(context.Background(), &tools.Entry{Name: "t", Tool: tc.tool, Inline: inline}, json.RawMessage(`{}`), 20*time.Millisecond)
				if got != tc.want {
					t.Fatalf("got %+v\nwant %+v", got, tc.want)
				}
			})
		}
	}
}

func TestInvokeRecoversPanics(t *testing.T) {
	for _, inline := range []bool{false, true} {
		got := tools.Invoke(context.Background(), &tools.Entry{Name: "boom", Inline: inline, Tool: fn(func(_ context.Context, args json.RawMessage) (string, error) {
			return fmt.Sprint([]int{}[len(args)]), nil // index out of range
		})}, json.RawMessage(`{}`), time.Second)
		if got.Status != task.ToolCallError || got.Message != `tool "boom" panicked: runtime error: index out of range [2] with length 0` || !strings.Contains(got.Panic, "invoke_test.go") {
			t.Fatalf("inline=%v: got %+v", inline, got)
		}
	}
}

func TestInvokeInvalidatesStatefulToolOnTimeoutOnly(t *testing.T) {
	s := &session{fn: func(ctx context.Context, args json.RawMessage) (string, error) {
		if string(args) == `"slow"` {
			<-ctx.Done()
			return "", ctx.Err()
		}
		return "fast", nil
	}}
	e := &tools.Entry{Name: "mcp", Tool: s}
	if got := tools.Invoke(context.Background(), e, json.RawMessage(`"fast"`), time.Second); got.Status != task.ToolCallSuccess || s.invalidated.Load() != 0 {
		t.Fatalf("fast call: %+v, invalidated %d", got, s.invalidated.Load())
	}
	if got := tools.Invoke(context.Background(), e, json.RawMessage(`"slow"`), 10*time.Millisecond); got.Status != task.ToolCallTimeout || s.invalidated.Load() != 1 {
		t.Fatalf("slow call: %+v, invalidated %d", got, s.invalidated.Load())
	}
}

func TestInvokeCancelledByCaller(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got := tools.Invoke(ctx, &tools.Entry{Name: "t", Tool: fn(func(ctx context.Context, _ json.RawMessage) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	})}, nil, time.Minute)
	if got.Status != task.ToolCallError || got.Message != "Tool execution cancelled: context canceled" {
		t.Fatalf("got %+v", got)
	}
}

func TestBudget(t *testing.T) {
	cases := []struct {
		override    float64
		tool, trial time.Duration
		want        time.Duration
	}{
		{2.5, time.Second, time.Minute, 2500 * time.Millisecond},
		{0, time.Second, time.Minute, time.Second},
		{-1, 0, time.Minute, time.Minute},
		{0, 0, 0, 30 * time.Second},
		{1e300, 0, 0, time.Duration(1<<63 - 1)},
	}
	for _, tc := range cases {
		if got := tools.Budget(tc.override, tc.tool, tc.trial); got != tc.want {
			t.Errorf("Budget(%v, %v, %v) = %v, want %v", tc.override, tc.tool, tc.trial, got, tc.want)
		}
	}
	if got := tools.FormatSeconds(1500 * time.Millisecond); got != "1.5" {
		t.Errorf("FormatSeconds = %s", got)
	}
}

func TestRegistryKeepsDeclarationOrder(t *testing.T) {
	r := tools.NewRegistry()
	for _, n := range []string{"zeta", "alpha", "mid"} {
		if err := r.Add(&tools.Entry{Name: n}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Add(&tools.Entry{Name: "alpha"}); !errors.Is(err, tools.ErrDuplicate) {
		t.Fatalf("duplicate: %v", err)
	}
	if got := strings.Join(r.Names(), ","); got != "zeta,alpha,mid" || r.Len() != 3 {
		t.Fatalf("names %s", got)
	}
	if e, ok := r.Lookup("mid"); !ok || e != r.Entries()[2] {
		t.Fatal("lookup")
	}
	if _, ok := r.Lookup("Mid"); ok {
		t.Fatal("lookup is exact")
	}
}
