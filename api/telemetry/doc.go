// Package telemetry turns tracing on from the standard OpenTelemetry
// environment: with OTEL_EXPORTER_OTLP_ENDPOINT (or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) set, Tracing returns an SDK tracer
// provider that batches spans to that OTLP/gRPC endpoint (the exporter reads
// the rest of the OTEL_EXPORTER_OTLP_* variables: headers, TLS, timeout), with
// the resource from OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES over the
// program's service name. Unset, it returns nil: the caller keeps the no-op
// provider and tracing costs nothing. The manager and the runner call it
// from their Main; libraries never read the environment.
//
// Recorder keeps spans in memory in OTLP's own form, as the OTLP exporter's
// client (RecordingProvider) or a collector's store: `trial run --trace`
// writes an attempt's trace from it as OTLP JSON (MarshalJSON), and the fake
// LLM's OTLP receiver lists what it was sent.
//
// Imports: the standard library, go.opentelemetry.io/otel,
// go.opentelemetry.io/otel/exporters/otlp/otlptrace,
// go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc,
// go.opentelemetry.io/otel/sdk, go.opentelemetry.io/otel/trace,
// go.opentelemetry.io/proto/otlp, google.golang.org/grpc (metadata) and
// google.golang.org/protobuf.
package telemetry
