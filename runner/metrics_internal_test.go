package runner

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// BenchmarkToolCallMetrics is what each executed tool call adds to the
// runner: one counter and one histogram child looked up and bumped.
func BenchmarkToolCallMetrics(b *testing.B) {
	m := newMetrics()
	b.ReportAllocs()
	for b.Loop() {
		m.toolCall("calculator", "agent", "success", 57*time.Microsecond)
	}
}

// TestMetricsBindAddress: --metrics-bind-address serves /metrics while the
// runner runs, and stops serving when it stops; without it nothing listens.
func TestMetricsBindAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--listen", "127.0.0.1:0", "--metrics-bind-address", addr, "--work-dir", t.TempDir(), "--log-level", "error"},
			Config{SelfExecutable: "/bin/true"}, io.Discard, ready)
	}()
	<-ready
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		cancel()
		t.Fatalf("scrape: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "tolokaforge_runner_python_host_restarts_total 0") {
		t.Errorf("scrape answered %d:\n%.400s", resp.StatusCode, body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	if _, err := http.Get("http://" + addr + "/metrics"); err == nil {
		t.Error("/metrics is still served after the runner stopped")
	}
}
