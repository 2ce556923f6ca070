package mcpclient

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"tolokaforge.io/operator/runner/proc"
)

// BenchmarkShopCall measures a tool call round trip to the shop server over stdio
// (JSON-RPC over pipes to a child process, the runner's production path). Besides
// ns/op it reports p50/p99 of single calls and, because the machine is shared and
// noisy, p50 as a ratio to an MCP ping's p50 on the same session measured in the same
// run: ping is the floor of a round trip through that pipe pair.
func BenchmarkShopCall(b *testing.B) {
	s := startShop(b, nil)
	ctx := context.Background()
	if err := s.SetState(ctx, initialTables(b)); err != nil {
		b.Fatal(err)
	}
	cases := []struct{ name, tool, args string }{
		{"list_products", "list_products", `{}`},
		{"get_customer", "get_customer", `{"customer_id":"C-101"}`},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			ping := make([]time.Duration, 0, 500)
			for range 500 {
				t0 := time.Now()
				if err := s.Ping(ctx); err != nil {
					b.Fatal(err)
				}
				ping = append(ping, time.Since(t0))
			}
			args := json.RawMessage(c.args)
			var lat []time.Duration
			b.ResetTimer()
			for b.Loop() {
				t0 := time.Now()
				_, isErr, err := s.Call(ctx, c.tool, args)
				lat = append(lat, time.Since(t0))
				if err != nil || isErr {
					b.Fatalf("%s: isError=%v err=%v", c.tool, isErr, err)
				}
			}
			b.StopTimer()
			p50, p99 := percentile(lat, 50), percentile(lat, 99)
			pingP50 := percentile(ping, 50)
			b.ReportMetric(float64(p50.Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(p99.Nanoseconds()), "p99-ns")
			b.ReportMetric(float64(pingP50.Nanoseconds()), "ping-p50-ns")
			b.ReportMetric(float64(p50)/float64(pingP50), "p50/ping")
		})
	}
}

func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}

// BenchmarkShopSupervision is what the supervisor and Landlock
// (Config.Confine) cost an MCP server, in the same run: per server (start,
// initialize, tools/list, Close: once per trial) and per call (list_products
// on a running server), unsupervised in its process group and supervised
// and confined.
func BenchmarkShopSupervision(b *testing.B) {
	for _, bc := range []struct {
		name    string
		confine bool
	}{{"group", false}, {"supervised+landlock", true}} {
		mutate := func(c *Config) {
			c.KillGrace = time.Second
			if bc.confine {
				c.Confine = &proc.Confinement{ReadWrite: []string{c.Dir}}
			}
		}
		b.Run("lifecycle/"+bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				cfg := Config{Command: []string{shopServer}, Dir: b.TempDir()}
				mutate(&cfg)
				s, err := Start(context.Background(), cfg)
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("call/"+bc.name, func(b *testing.B) {
			s := startShop(b, mutate)
			ctx := context.Background()
			if err := s.SetState(ctx, initialTables(b)); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, isErr, err := s.Call(ctx, "list_products", json.RawMessage(`{}`)); err != nil || isErr {
					b.Fatalf("list_products: isError=%v err=%v", isErr, err)
				}
			}
		})
	}
}
