package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"tolokaforge.io/operator/test/fakellm"
)

// TestMainReceivesOTLPTraces: with --otlp-listen, spans the real OTLP/gRPC
// exporter sends (to an http:// endpoint URL, as OTEL_EXPORTER_OTLP_ENDPOINT
// names it in the cluster) are listed per trace on the provider's port.
func TestMainReceivesOTLPTraces(t *testing.T) {
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--otlp-listen", "127.0.0.1:0"}, pw, logr.Discard())
		_ = pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run returned %v", err)
		}
	})
	rd := bufio.NewReader(pr)
	first, err := rd.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	second, err := rd.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	otlpAddr, ok := strings.CutPrefix(strings.TrimSpace(first), "fakellm OTLP receiver listening on ")
	if !ok {
		t.Fatalf("first line = %q", first)
	}
	base, ok := strings.CutPrefix(strings.TrimSpace(second), "fakellm listening on ")
	if !ok {
		t.Fatalf("second line = %q", second)
	}
	base = strings.TrimSuffix(base, "/v1")

	exp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL("http://"+otlpAddr))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "tolokaforge-manager"))))
	tr := tp.Tracer("test")
	rctx, root := tr.Start(ctx, "attempt")
	_, child := tr.Start(rctx, "turn")
	child.End()
	root.End()
	_, other := tr.Start(ctx, "elsewhere")
	other.End()
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer scancel()
	if err := tp.Shutdown(sctx); err != nil {
		t.Fatalf("export: %v", err)
	}
	id := root.SpanContext().TraceID().String()

	get := func(query string) (int, fakellm.TracesResponse, string) {
		t.Helper()
		resp, err := http.Get(base + fakellm.TracesPath + query)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var tr fakellm.TracesResponse
		if resp.StatusCode == http.StatusOK {
			if err := json.Unmarshal(body, &tr); err != nil {
				t.Fatalf("%v in %s", err, body)
			}
		}
		return resp.StatusCode, tr, string(body)
	}
	code, got, body := get("?trace_id=" + id)
	if code != 200 || len(got.Spans) != 2 {
		t.Fatalf("trace %s: %d %s", id, code, body)
	}
	byName := map[string]int{}
	for i, s := range got.Spans {
		byName[s.Name] = i
		if s.TraceID != id || s.Service != "tolokaforge-manager" {
			t.Errorf("span %+v: want trace %s of tolokaforge-manager", s, id)
		}
	}
	if r, c := got.Spans[byName["attempt"]], got.Spans[byName["turn"]]; r.ParentSpanID != "" ||
		r.SpanID != root.SpanContext().SpanID().String() || c.ParentSpanID != r.SpanID {
		t.Errorf("attempt %+v, turn %+v: want turn under the root attempt", r, c)
	}
	if code, all, _ := get(""); code != 200 || len(all.Spans) != 3 {
		t.Errorf("every trace: %d %+v", code, all.Spans)
	}
	if code, none, body := get("?trace_id=" + strings.Repeat("0a", 16)); code != 200 || len(none.Spans) != 0 || !strings.Contains(body, `"spans":[]`) {
		t.Errorf("an unknown trace: %d %s", code, body)
	}
	for _, bad := range []string{"?trace_id=nothex", "?trace_id=abcd"} {
		if code, _, body := get(bad); code != http.StatusBadRequest || !strings.Contains(body, "want 32 hex digits") {
			t.Errorf("%s: %d %s", bad, code, body)
		}
	}
	resp, err := http.Post(base+fakellm.TracesPath, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", resp.StatusCode)
	}
}

// Without --otlp-listen nothing listens for traces and the listing is not served.
func TestMainWithoutOTLPServesNoTraces(t *testing.T) {
	srv, err := fakellm.New(fakellm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(""); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	resp, err := http.Get(strings.TrimSuffix(srv.URL(), "/v1") + fakellm.TracesPath)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET %s without a sink: %d", fakellm.TracesPath, resp.StatusCode)
	}
}

func TestMainRejectsABusyOTLPAddress(t *testing.T) {
	sink := &fakellm.TraceSink{}
	if err := sink.Start(""); err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	err := run(context.Background(), []string{"--otlp-listen", sink.Addr()}, io.Discard, logr.Discard())
	if err == nil || !strings.Contains(err.Error(), "fakellm: --otlp-listen: fakellm: OTLP receiver: listen on "+sink.Addr()) {
		t.Fatalf("run on a busy address = %v", err)
	}
}
