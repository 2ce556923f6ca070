package telemetry_test

import (
	"context"
	"testing"
	"time"

	"tolokaforge.io/operator/api/telemetry"
)

func TestTracingFollowsTheEnvironment(t *testing.T) {
	for _, tc := range []struct {
		name         string
		endpoint     string
		traces       string
		wantProvider bool
	}{
		{"unset: no provider", "", "", false},
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1", "", true},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "", "http://127.0.0.1:1", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(telemetry.EnvEndpoint, tc.endpoint)
			t.Setenv(telemetry.EnvTracesEndpoint, tc.traces)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			tp, shutdown, err := telemetry.Tracing(ctx, "test")
			if err != nil {
				t.Fatal(err)
			}
			if (tp != nil) != tc.wantProvider {
				t.Fatalf("provider %v, want one: %t", tp, tc.wantProvider)
			}
			if tp != nil {
				// A span to a collector nobody runs: dropped, never an
				// error the program sees before its exit.
				_, span := tp.Tracer("t").Start(ctx, "s")
				span.End()
			}
			sctx, scancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer scancel()
			start := time.Now()
			_ = shutdown(sctx)
			if time.Since(start) > 4*time.Second {
				t.Fatalf("shutdown took %s against a dead collector", time.Since(start))
			}
		})
	}
}
