package runner_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"tolokaforge.io/operator/api/runnerpb"
)

// BenchmarkExecuteTool measures the ExecuteTool round trip over loopback gRPC
// against a real DB service, with a builtin DB tool (db_get) and with the shop's
// MCP tool (get_customer), at 1 and 64 concurrent trials. Each sub-benchmark
// first runs a bare unary RPC on the same connection at the same concurrency
// (grpc.health.v1 Check: the floor) and reports its figures beside the tool's
// as ratios, since the machine is shared and absolute numbers drift.
//
// Metrics: p50-us / p99-us (tool latency), calls/s, echo-p50-us, echo-calls/s,
// p50/echo (latency ratio).
func BenchmarkExecuteTool(b *testing.B) {
	for _, kind := range []string{"builtin", "mcp"} {
		for _, trials := range []int{1, 64} {
			b.Run(fmt.Sprintf("%s/trials=%d", kind, trials), func(b *testing.B) {
				benchExecute(b, kind, trials)
			})
		}
	}
}

func benchExecute(b *testing.B, kind string, trials int) {
	h := startRunner(b, nil)
	ids := make([]string, trials)
	var wg sync.WaitGroup
	for i := range trials {
		ids[i] = fmt.Sprintf("bench-%s:%d", kind, i)
		wg.Go(func() {
			if kind == "mcp" {
				registerShop(b, h, ids[i])
				return
			}
			h.mustRegister(b, ids[i], baseTask([]any{tool("db_get")}, nil, obj{"customers": []any{
				obj{"id": "C-101", "name": "Mia Li", "balance": 300.0}, obj{"id": "C-102", "name": "Bo", "balance": 12.5},
			}}))
		})
	}
	wg.Wait()
	toolName, args := "db_get", `{"table":"customers","key":"C-101"}`
	if kind == "mcp" {
		toolName, args = "get_customer", `{"customer_id":"C-101"}`
	}
	// Warm both paths (connections, MCP sessions) outside the timer.
	for _, id := range ids {
		h.mustExec(b, id, call{tool: toolName, args: args, callID: "warm"})
	}
	ctx := context.Background()
	echo := func(int, int) error {
		_, err := h.c.Health().Check(ctx, &healthpb.HealthCheckRequest{})
		return err
	}
	execute := func(w, i int) error {
		r, err := h.c.ExecuteTool(ctx, &runnerpb.ExecuteToolRequest{
			TrialId: ids[w], ToolName: toolName, ArgumentsJson: args, CallId: fmt.Sprintf("c%d", i),
		})
		if err == nil && r.GetStatus() != stSuccess {
			err = fmt.Errorf("%s: %s", r.GetStatus(), r.GetErrorMessage())
		}
		return err
	}

	b.ResetTimer()
	echoLat, echoWall := measure(b, trials, b.N, echo)
	lat, wall := measure(b, trials, b.N, execute)
	b.StopTimer()

	p50, p99 := percentile(lat, 50), percentile(lat, 99)
	e50, e99 := percentile(echoLat, 50), percentile(echoLat, 99)
	b.ReportMetric(us(p50), "p50-us")
	b.ReportMetric(us(p99), "p99-us")
	b.ReportMetric(float64(len(lat))/wall.Seconds(), "calls/s")
	b.ReportMetric(us(e50), "echo-p50-us")
	b.ReportMetric(us(e99), "echo-p99-us")
	b.ReportMetric(float64(len(echoLat))/echoWall.Seconds(), "echo-calls/s")
	b.ReportMetric(float64(p50)/float64(e50), "p50/echo")
}

// measure runs n calls spread over `workers` goroutines (worker w drives
// trial w) and returns every call's latency and the wall time.
func measure(b *testing.B, workers, n int, fn func(w, i int) error) ([]time.Duration, time.Duration) {
	per := max(n/workers, 1)
	lats := make([][]time.Duration, workers)
	var wg sync.WaitGroup
	var once sync.Once
	start := time.Now()
	for w := range workers {
		wg.Go(func() {
			l := make([]time.Duration, 0, per)
			for i := range per {
				t0 := time.Now()
				if err := fn(w, i); err != nil {
					once.Do(func() { b.Error(err) })
					return
				}
				l = append(l, time.Since(t0))
			}
			lats[w] = l
		})
	}
	wg.Wait()
	wall := time.Since(start)
	return slices.Concat(lats...), wall
}

func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
