package telemetry

import (
	"context"
	"fmt"
	"os"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Environment variables that turn tracing on (the OpenTelemetry SDK's).
const (
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
)

// Shutdown flushes the spans still batched and stops the exporter.
type Shutdown func(context.Context) error

// Enabled reports whether getenv turns tracing on.
func Enabled(getenv func(string) string) bool {
	return getenv(EnvEndpoint) != "" || getenv(EnvTracesEndpoint) != ""
}

// Tracing returns the tracer provider the environment asks for, or nil and a
// no-op Shutdown when it asks for none. service names the program
// ("tolokaforge-manager", "tolokaforge-runner") unless OTEL_SERVICE_NAME
// does. The exporter connects lazily: an unreachable collector drops spans,
// never fails the program.
func Tracing(ctx context.Context, service string) (trace.TracerProvider, Shutdown, error) {
	if !Enabled(os.Getenv) {
		return nil, func(context.Context) error { return nil }, nil
	}
	exp, err := otlptracegrpc.New(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	// Later options win: the environment's service name over the program's.
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", service)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, nil, fmt.Errorf("trace resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return tp, tp.Shutdown, nil
}
