package client_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"tolokaforge.io/operator/runner/client"
)

func serveHealth(t *testing.T) (*health.Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	hs := health.NewServer()
	healthpb.RegisterHealthServer(gs, hs)
	go gs.Serve(ln)
	t.Cleanup(gs.Stop)
	return hs, ln.Addr().String()
}

func TestWaitReady(t *testing.T) {
	hs, addr := serveHealth(t)
	hs.SetServingStatus(client.ServiceName, healthpb.HealthCheckResponse_NOT_SERVING)
	c, err := client.Dial(context.Background(), addr, client.WithReadyPoll(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Connect first, so the answer WaitReady sees is the health status and
	// not a connection still being set up on a loaded machine.
	cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer ccancel()
	if _, err := c.Health().Check(cctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true)); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err = c.WaitReady(ctx)
	if !errors.Is(err, client.ErrNotServing) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "health status NOT_SERVING") {
		t.Fatalf("not serving: %v", err)
	}

	hs.SetServingStatus(client.ServiceName, healthpb.HealthCheckResponse_SERVING)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	if err := c.WaitReady(ctx2); err != nil {
		t.Fatalf("serving: %v", err)
	}
	if c.Conn().Target() != addr {
		t.Fatalf("target %s", c.Conn().Target())
	}
}

func TestWaitReadyWithNothingListening(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c, err := client.Dial(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err = c.WaitReady(ctx)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "wait for runner "+addr) {
		t.Fatalf("got %v", err)
	}
}

func TestDialWithDoneContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := client.Dial(ctx, "127.0.0.1:1"); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
}
