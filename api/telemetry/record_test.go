package telemetry_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"tolokaforge.io/operator/api/telemetry"
)

// TestRecorderKeepsOneTraceAsOTLPJSON: spans exported through the OTLP
// exporter into a Recorder come back per trace, as OTLP JSON with hex ids
// and the provider's service name, and Forget drops only that trace.
func TestRecorderKeepsOneTraceAsOTLPJSON(t *testing.T) {
	ctx := context.Background()
	rec := &telemetry.Recorder{}
	tp, err := telemetry.RecordingProvider(ctx, "svc-test", rec)
	if err != nil {
		t.Fatal(err)
	}
	tr := tp.Tracer("test")
	rctx, root := tr.Start(ctx, "root")
	_, child := tr.Start(rctx, "child")
	child.End()
	root.End()
	_, other := tr.Start(ctx, "other")
	other.End()
	id := root.SpanContext().TraceID().String()

	td, err := rec.Trace(id)
	if err != nil {
		t.Fatal(err)
	}
	got := telemetry.Spans(td)
	if len(got) != 2 || got[0].Name != "child" || got[1].Name != "root" ||
		got[0].ParentSpanID != root.SpanContext().SpanID().String() || got[1].ParentSpanID != "" ||
		got[0].TraceID != id || got[1].Service != "svc-test" {
		t.Fatalf("trace %s = %+v", id, got)
	}
	b, err := telemetry.MarshalJSON(td)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		ResourceSpans []struct {
			ScopeSpans []struct {
				Spans []struct {
					TraceID      string `json:"traceId"`
					SpanID       string `json:"spanId"`
					ParentSpanID string `json:"parentSpanId"`
					Name         string `json:"name"`
				} `json:"spans"`
			} `json:"scopeSpans"`
		} `json:"resourceSpans"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	s := doc.ResourceSpans[0].ScopeSpans[0].Spans[0]
	if s.TraceID != id || s.ParentSpanID != root.SpanContext().SpanID().String() || s.Name != "child" || len(s.SpanID) != 16 {
		t.Errorf("OTLP JSON span = %+v, want hex ids of trace %s", s, id)
	}

	rec.Forget(id)
	if td, _ := rec.Trace(id); len(telemetry.Spans(td)) != 0 {
		t.Errorf("forgotten trace still has %v", telemetry.Spans(td))
	}
	if td, _ := rec.Trace(""); len(telemetry.Spans(td)) != 1 || telemetry.Spans(td)[0].Name != "other" {
		t.Errorf("every trace after Forget = %+v", telemetry.Spans(td))
	}
	for _, bad := range []string{"xyz", "abcd", strings.Repeat("g", 32)} {
		if _, err := rec.Trace(bad); err == nil || !strings.Contains(err.Error(), "want 32 hex digits") {
			t.Errorf("Trace(%q) error = %v", bad, err)
		}
	}
}
