package llm

import (
	"math"
	"net/http"
	"testing"
	"time"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
)

func TestBackoff(t *testing.T) {
	p := RetryPolicy{MaxRetries: 5, BaseDelay: time.Second, MaxDelay: 8 * time.Second}.withDefaults()
	cases := []struct {
		n          int
		retryAfter time.Duration
		jitter     float64
		want       time.Duration
	}{
		{0, 0, 0, 500 * time.Millisecond},
		{0, 0, 0.999999, 999999500 * time.Nanosecond},
		{1, 0, 0, time.Second},
		{2, 0, 1, 4 * time.Second},
		{3, 0, 1, 8 * time.Second},
		{10, 0, 1, 8 * time.Second}, // capped at MaxDelay
		{0, 3 * time.Second, 0.5, 3 * time.Second},
		{3, 2 * time.Second, 0, 4 * time.Second}, // backoff above Retry-After wins
	}
	for _, tc := range cases {
		if got := p.backoff(tc.n, tc.retryAfter, func() float64 { return tc.jitter }); got != tc.want {
			t.Errorf("backoff(%d, %s, %g) = %s, want %s", tc.n, tc.retryAfter, tc.jitter, got, tc.want)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		h    map[string]string
		want time.Duration
		ok   bool
	}{
		{nil, 0, false},
		{map[string]string{"Retry-After": "3"}, 3 * time.Second, true},
		{map[string]string{"Retry-After": "1.5"}, 1500 * time.Millisecond, true},
		{map[string]string{"Retry-After": "0"}, 0, true},
		{map[string]string{"Retry-After": "-1"}, 0, false},
		{map[string]string{"Retry-After": "soon"}, 0, false},
		{map[string]string{"Retry-After": "Mon, 30 Nov 2026 12:00:10 GMT"}, 10 * time.Second, true},
		{map[string]string{"Retry-After": "Mon, 30 Nov 2026 11:00:00 GMT"}, 0, true},
		{map[string]string{"Retry-After-Ms": "250", "Retry-After": "9"}, 250 * time.Millisecond, true},
		{map[string]string{"Retry-After-Ms": "x", "Retry-After": "9"}, 9 * time.Second, true},
	}
	for _, tc := range cases {
		h := http.Header{}
		for k, v := range tc.h {
			h.Set(k, v)
		}
		got, ok := retryAfter(h, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("retryAfter(%v) = %s, %t; want %s, %t", tc.h, got, ok, tc.want, tc.ok)
		}
	}
}

func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"3", "1.5", "-1", "NaN", "Inf", "1e308", "Mon, 30 Nov 2026 12:00:10 GMT", ""} {
		f.Add(s, "")
		f.Add("", s)
	}
	f.Fuzz(func(t *testing.T, ra, ms string) {
		h := http.Header{}
		h.Set("Retry-After", ra)
		h.Set("Retry-After-Ms", ms)
		if d, ok := retryAfter(h, time.Now()); d < 0 || (!ok && d != 0) {
			t.Fatalf("retryAfter(%q, %q) = %s, %t", ra, ms, d, ok)
		}
	})
}

func TestEncodeTools(t *testing.T) {
	for _, bad := range []string{`[1,2]`, `{"type":`, `"object"`} {
		_, err := EncodeTools([]*runnerpb.ToolSchema{{Name: "ok"}, {Name: "bad", ParametersJson: bad}})
		if err == nil || err.Error() != "tool_schemas[1] (bad): parameters_json is not a JSON object" {
			t.Errorf("parameters_json %s: err = %v", bad, err)
		}
	}
	tl, err := EncodeTools([]*runnerpb.ToolSchema{
		{Name: "noargs"},
		{Name: "calc", Description: "a <b> & c", ParametersJson: ` {"type": "object", "properties": {"x": {"type": "number"}}} `},
	})
	want := `[{"type":"function","function":{"name":"noargs","parameters":{"type":"object","properties":{}}}},` +
		`{"type":"function","function":{"name":"calc","description":"a <b> & c","parameters":{"type":"object","properties":{"x":{"type":"number"}}}}}]`
	if err != nil || string(tl) != want {
		t.Fatalf("tools = %s, %v\nwant %s", tl, err, want)
	}
}

func TestToWire(t *testing.T) {
	conv := []task.Message{
		{Role: "system", Content: "s"},
		{Role: "assistant", ToolCalls: []task.ToolCall{{ID: "a", Function: task.FunctionCall{Name: "f", Arguments: "{}"}}}},
		{Role: "tool", Content: "", ToolCallID: "a"},
		{Role: "assistant", Content: ""},
	}
	w, err := toWire(conv)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := marshal(w)
	want := `[{"role":"system","content":"s"},{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]},` +
		`{"role":"tool","content":"","tool_call_id":"a"},{"role":"assistant","content":""}]`
	if string(b) != want {
		t.Fatalf("wire = %s\nwant %s", b, want)
	}
	if _, err := toWire([]task.Message{{Role: "developer"}}); err == nil ||
		err.Error() != `conversation message 0: role "developer" is not one of system, user, assistant, tool` {
		t.Fatalf("bad role: %v", err)
	}
}

func TestCost(t *testing.T) {
	cached := 0.5
	cases := []struct {
		name                       string
		p                          *task.Pricing
		prompt, cached, completion int64
		want                       float64
	}{
		{"no pricing", nil, 1e6, 0, 1e6, 0},
		{"plain", &task.Pricing{InputUSDPerMTok: 2, OutputUSDPerMTok: 8}, 1e6, 0, 5e5, 6},
		{"cached at input price when none given", &task.Pricing{InputUSDPerMTok: 2, OutputUSDPerMTok: 8}, 1e6, 4e5, 0, 2},
		{"cached priced apart", &task.Pricing{InputUSDPerMTok: 2, OutputUSDPerMTok: 8, CachedInputUSDPerMTok: &cached}, 1e6, 4e5, 0, 1.2 + 0.2},
		{"cached beyond prompt is capped", &task.Pricing{InputUSDPerMTok: 2, OutputUSDPerMTok: 8, CachedInputUSDPerMTok: &cached}, 1e6, 2e6, 0, 0.5},
	}
	for _, tc := range cases {
		if got := cost(tc.p, tc.prompt, tc.cached, tc.completion); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: cost = %g, want %g", tc.name, got, tc.want)
		}
	}
}
