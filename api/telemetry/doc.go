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
// Imports: the standard library, go.opentelemetry.io/otel,
// go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc,
// go.opentelemetry.io/otel/sdk, go.opentelemetry.io/otel/trace and
// google.golang.org/grpc (metadata).
package telemetry
