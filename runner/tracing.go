package runner

import (
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc/filters"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/stats"
)

// serverTracing is the gRPC server handler that traces each RPC with tp,
// joining the caller's trace from W3C trace context in its metadata (the
// host's propagator; the process's global one may be a no-op). Its RPC
// metrics are off: the runner's own series count what matters. The
// kubelet's grpc.health.v1 probes are not traced: a trace every few seconds
// per pod would bury the attempts' (RunnerService.HealthCheck, which the
// host calls inside an attempt, is).
func serverTracing(tp trace.TracerProvider) stats.Handler {
	return otelgrpc.NewServerHandler(
		otelgrpc.WithFilter(filters.Not(filters.HealthCheck())),
		otelgrpc.WithTracerProvider(tp),
		otelgrpc.WithPropagators(propagation.TraceContext{}),
		otelgrpc.WithMeterProvider(noop.NewMeterProvider()),
	)
}
