package fakellm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"

	collectortracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	_ "google.golang.org/grpc/encoding/gzip" // an exporter with OTEL_EXPORTER_OTLP_COMPRESSION=gzip
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"tolokaforge.io/operator/api/telemetry"
)

// TracesPath is where a Server whose Config has Traces lists the spans its
// receiver was sent: GET TracesPath[?trace_id=<32 hex digits>].
const TracesPath = "/otlp/traces"

// TraceSink is an OTLP/gRPC trace receiver (the collector's TraceService)
// keeping every span it is sent in memory, so an end-to-end test can point
// a program's OTEL_EXPORTER_OTLP_ENDPOINT at it and read back what arrived.
// It accepts any export: no authentication, no limit but gRPC's message
// size. Safe for concurrent use.
type TraceSink struct {
	collectortracepb.UnimplementedTraceServiceServer
	rec telemetry.Recorder

	mu   sync.Mutex
	srv  *grpc.Server
	ln   net.Listener
	done chan struct{}
}

// Export implements the TraceService: it keeps the request's spans.
func (s *TraceSink) Export(ctx context.Context, req *collectortracepb.ExportTraceServiceRequest) (*collectortracepb.ExportTraceServiceResponse, error) {
	if err := s.rec.UploadTraces(ctx, req.GetResourceSpans()); err != nil {
		return nil, fmt.Errorf("keep the exported spans: %w", err)
	}
	return &collectortracepb.ExportTraceServiceResponse{}, nil
}

// Start serves the receiver over gRPC (plaintext, as an in-cluster
// collector is reached) on addr ("" means 127.0.0.1:0) until Close.
func (s *TraceSink) Start(addr string) error {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("fakellm: OTLP receiver: listen on %s: %w", addr, err)
	}
	s.mu.Lock()
	if s.srv != nil {
		s.mu.Unlock()
		_ = ln.Close()
		return errors.New("fakellm: OTLP receiver already started")
	}
	srv := grpc.NewServer()
	collectortracepb.RegisterTraceServiceServer(srv, s)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	s.srv, s.ln, s.done = srv, ln, make(chan struct{})
	done := s.done
	s.mu.Unlock()
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	return nil
}

// Addr is the receiver's host:port ("" before Start).
func (s *TraceSink) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Close stops the receiver; what it kept stays readable.
func (s *TraceSink) Close() {
	s.mu.Lock()
	srv, done := s.srv, s.done
	s.mu.Unlock()
	if srv == nil {
		return
	}
	srv.Stop()
	<-done
}

// Spans lists the spans received of traceID (every span when it is "").
func (s *TraceSink) Spans(traceID string) ([]telemetry.SpanRecord, error) {
	td, err := s.rec.Trace(traceID)
	if err != nil {
		return nil, err
	}
	return telemetry.Spans(td), nil
}

// TracesResponse is TracesPath's answer.
type TracesResponse struct {
	Spans []telemetry.SpanRecord `json:"spans"`
}

// ServeHTTP answers GET TracesPath: {"spans": [...]}, in the order they
// arrived; 400 for a trace_id that is not 32 hex digits.
func (s *TraceSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "GET only", http.StatusMethodNotAllowed)
		return
	}
	spans, err := s.Spans(r.URL.Query().Get("trace_id"))
	if err != nil {
		http.Error(w, "trace_id: "+err.Error(), http.StatusBadRequest)
		return
	}
	if spans == nil {
		spans = []telemetry.SpanRecord{}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(TracesResponse{Spans: spans})
}
