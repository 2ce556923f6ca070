package telemetry

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// Recorder keeps spans in OTLP's own form, in memory: as the client of the
// OTLP exporter (otlptrace.Client), it receives them already transformed by
// the exporter, and a collector's TraceService can hand it what it was sent.
// It is safe for concurrent use.
type Recorder struct {
	mu    sync.Mutex
	spans []*tracepb.ResourceSpans
}

var _ otlptrace.Client = (*Recorder)(nil)

// Start implements otlptrace.Client; there is nothing to connect.
func (r *Recorder) Start(context.Context) error { return nil }

// Stop implements otlptrace.Client; what was recorded stays.
func (r *Recorder) Stop(context.Context) error { return nil }

// UploadTraces implements otlptrace.Client: it keeps rs.
func (r *Recorder) UploadTraces(_ context.Context, rs []*tracepb.ResourceSpans) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.spans = append(r.spans, rs...)
	return nil
}

// Trace is what was recorded of one trace (every trace when traceID is
// ""), in OTLP's TracesData (the OTLP JSON file's document), one
// ResourceSpans per upload.
func (r *Recorder) Trace(traceID string) (*tracepb.TracesData, error) {
	var want []byte
	if traceID != "" {
		var err error
		if want, err = hex.DecodeString(traceID); err != nil || len(want) != 16 {
			return nil, fmt.Errorf("trace id %q: want 32 hex digits", traceID)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := &tracepb.TracesData{}
	for _, rs := range r.spans {
		kept := &tracepb.ResourceSpans{Resource: rs.GetResource(), SchemaUrl: rs.GetSchemaUrl()}
		for _, ss := range rs.GetScopeSpans() {
			ks := &tracepb.ScopeSpans{Scope: ss.GetScope(), SchemaUrl: ss.GetSchemaUrl()}
			for _, s := range ss.GetSpans() {
				if want == nil || bytes.Equal(s.GetTraceId(), want) {
					ks.Spans = append(ks.Spans, s)
				}
			}
			if len(ks.Spans) > 0 {
				kept.ScopeSpans = append(kept.ScopeSpans, ks)
			}
		}
		if len(kept.ScopeSpans) > 0 {
			out.ResourceSpans = append(out.ResourceSpans, kept)
		}
	}
	return out, nil
}

// Forget drops what was recorded of traceID, so a long run's recorder
// holds only the traces not yet written out.
func (r *Recorder) Forget(traceID string) {
	want, err := hex.DecodeString(traceID)
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	kept := r.spans[:0]
	for _, rs := range r.spans {
		for _, ss := range rs.GetScopeSpans() {
			spans := ss.Spans[:0]
			for _, s := range ss.GetSpans() {
				if !bytes.Equal(s.GetTraceId(), want) {
					spans = append(spans, s)
				}
			}
			ss.Spans = spans
		}
		if spanCount(rs) > 0 {
			kept = append(kept, rs)
		}
	}
	clear(r.spans[len(kept):])
	r.spans = kept
}

func spanCount(rs *tracepb.ResourceSpans) int {
	n := 0
	for _, ss := range rs.GetScopeSpans() {
		n += len(ss.GetSpans())
	}
	return n
}

// MarshalJSON renders td as OTLP JSON (the protobuf JSON mapping the
// OTLP/HTTP JSON encoding and the collector's file exporter use: trace and
// span ids in hex).
func MarshalJSON(td *tracepb.TracesData) ([]byte, error) {
	b, err := protojson.MarshalOptions{Multiline: true}.Marshal(td)
	if err != nil {
		return nil, fmt.Errorf("render OTLP JSON: %w", err)
	}
	// The protobuf JSON mapping writes bytes as base64; OTLP's JSON writes
	// trace and span ids in hex.
	return hexIDs(b)
}

// RecordingProvider is a tracer provider exporting every span to rec as it
// ends, through the OTLP exporter, under service's name.
func RecordingProvider(ctx context.Context, service string, rec *Recorder) (*sdktrace.TracerProvider, error) {
	exp, err := otlptrace.New(ctx, rec)
	if err != nil {
		return nil, fmt.Errorf("OTLP recording exporter: %w", err)
	}
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", service)), resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	return sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithResource(res)), nil
}

// idKeys are the OTLP JSON fields holding ids.
var idKeys = map[string]bool{"traceId": true, "spanId": true, "parentSpanId": true}

// hexIDs rewrites the base64 ids of a protojson rendering in hex.
func hexIDs(b []byte) ([]byte, error) {
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("render OTLP JSON: %w", err)
	}
	if err := walkIDs(doc); err != nil {
		return nil, fmt.Errorf("render OTLP JSON: %w", err)
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("render OTLP JSON: %w", err)
	}
	return append(out, '\n'), nil
}

func walkIDs(v any) error {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && idKeys[k] {
				raw, err := base64.StdEncoding.DecodeString(s)
				if err != nil {
					return fmt.Errorf("%s %q: %w", k, s, err)
				}
				v[k] = hex.EncodeToString(raw)
				continue
			}
			if err := walkIDs(x); err != nil {
				return err
			}
		}
	case []any:
		for _, x := range v {
			if err := walkIDs(x); err != nil {
				return err
			}
		}
	}
	return nil
}

// SpanRecord is one span as a listing shows it: ids in hex, the parent's
// empty for a trace's root, and the service.name of its resource.
type SpanRecord struct {
	TraceID      string `json:"trace_id"`
	SpanID       string `json:"span_id"`
	ParentSpanID string `json:"parent_span_id,omitempty"`
	Name         string `json:"name"`
	Service      string `json:"service_name,omitempty"`
}

// Spans lists td's spans in the order they were recorded.
func Spans(td *tracepb.TracesData) []SpanRecord {
	var out []SpanRecord
	for _, rs := range td.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				rec := SpanRecord{TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					Name: s.GetName(), Service: service}
				if len(s.GetParentSpanId()) > 0 {
					rec.ParentSpanID = hex.EncodeToString(s.GetParentSpanId())
				}
				out = append(out, rec)
			}
		}
	}
	return out
}
