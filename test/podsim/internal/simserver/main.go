// Command simserver is the container stand-in for podsim's tests: a tiny HTTP
// and/or gRPC health server bound to the address the pod spec gives it, with
// knobs for exit codes, slow readiness and ignoring SIGTERM.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func main() {
	listen := flag.String("listen", "", "HTTP address serving /health and /info")
	grpcListen := flag.String("grpc-listen", "", "gRPC address serving grpc.health.v1")
	exitCode := flag.Int("exit-code", -1, "exit with this code after --exit-after instead of serving forever")
	exitAfter := flag.Duration("exit-after", 0, "delay before --exit-code")
	readyAfter := flag.Duration("ready-after", 0, "report unhealthy for this long after start (HTTP); gRPC is ready at once if 0, else only via POST /ready")
	ignoreTerm := flag.Bool("ignore-sigterm", false, "ignore SIGTERM so only SIGKILL stops the process")
	stderrMsg := flag.String("stderr", "", "line written to stderr at start")
	flag.Parse()

	if *stderrMsg != "" {
		fmt.Fprintln(os.Stderr, *stderrMsg)
	}
	start := time.Now()
	var forced atomic.Int32 // 0: by --ready-after, 1: ready, 2: not ready
	ready := func() bool {
		switch forced.Load() {
		case 1:
			return true
		case 2:
			return false
		}
		return time.Since(start) >= *readyAfter
	}
	var hs *health.Server
	if *grpcListen != "" {
		hs = health.NewServer()
	}
	setReady := func(ok bool) {
		if ok {
			forced.Store(1)
		} else {
			forced.Store(2)
		}
		if hs != nil {
			st := healthpb.HealthCheckResponse_NOT_SERVING
			if ok {
				st = healthpb.HealthCheckResponse_SERVING
			}
			hs.SetServingStatus("sim.Runner", st)
		}
	}

	ctx := context.Background()
	if *ignoreTerm {
		signal.Ignore(syscall.SIGTERM)
	} else {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, syscall.SIGTERM)
		defer stop()
	}
	// Printed once signal handling is set up, so tests can wait for it.
	fmt.Println("simserver starting", os.Getpid())

	if *listen != "" {
		ln, err := net.Listen("tcp", *listen)
		if err != nil {
			fmt.Fprintln(os.Stderr, "listen:", err)
			os.Exit(70)
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) {
			if !ready() {
				http.Error(w, "not ready", http.StatusServiceUnavailable)
				return
			}
			_, _ = w.Write([]byte("ok"))
		})
		mux.HandleFunc("POST /ready", func(http.ResponseWriter, *http.Request) { setReady(true) })
		mux.HandleFunc("POST /unready", func(http.ResponseWriter, *http.Request) { setReady(false) })
		mux.HandleFunc("/info", func(w http.ResponseWriter, _ *http.Request) {
			wd, _ := os.Getwd()
			_ = json.NewEncoder(w).Encode(map[string]any{
				"pid": os.Getpid(), "args": os.Args[1:], "env": os.Environ(), "cwd": wd,
			})
		})
		go func() { _ = http.Serve(ln, mux) }()
	}
	if *grpcListen != "" {
		ln, err := net.Listen("tcp", *grpcListen)
		if err != nil {
			fmt.Fprintln(os.Stderr, "grpc listen:", err)
			os.Exit(71)
		}
		hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
		hs.SetServingStatus("sim.Runner", healthpb.HealthCheckResponse_NOT_SERVING)
		gs := grpc.NewServer()
		healthpb.RegisterHealthServer(gs, hs)
		go func() { _ = gs.Serve(ln) }()
		if *readyAfter == 0 {
			hs.SetServingStatus("sim.Runner", healthpb.HealthCheckResponse_SERVING)
		}
	}

	if *exitCode >= 0 {
		select {
		case <-time.After(*exitAfter):
			os.Exit(*exitCode)
		case <-ctx.Done():
			os.Exit(0)
		}
	}
	<-ctx.Done()
	fmt.Println("simserver: SIGTERM, exiting")
}
