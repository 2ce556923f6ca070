package client_test

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "tolokaforge.io/operator/api/execagentpb"
	"tolokaforge.io/operator/runner/execagent"
	"tolokaforge.io/operator/runner/execagent/client"
)

func TestDialNeedsToken(t *testing.T) {
	if _, err := client.Dial("127.0.0.1:1", client.Options{}); err == nil {
		t.Fatal("Dial without a token succeeded")
	}
}

// A call whose context has no deadline gets CallTimeout: an agent that
// never answers does not hang the caller.
func TestCallTimeoutBoundsACall(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // accept and say nothing
		}
	}()
	c, err := client.Dial(ln.Addr().String(), client.Options{Token: "t", CallTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	_, err = c.ReadFile(context.Background(), &pb.ReadFileRequest{Path: "/x"})
	if took := time.Since(start); err == nil || took > 5*time.Second {
		t.Fatalf("ReadFile: %v after %s, want an error after about 200ms", err, took)
	}
}

// The client presents its token; a wrong one is Unauthenticated.
func TestToken(t *testing.T) {
	srv, err := execagent.New(execagent.Options{Token: "right", StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln) //nolint:errcheck // Stop ends it
	t.Cleanup(func() { srv.Stop(context.Background()); srv.Close() })
	for _, tc := range []struct {
		token string
		code  codes.Code
	}{{"right", codes.OK}, {"wrong", codes.Unauthenticated}} {
		c, err := client.Dial(ln.Addr().String(), client.Options{Token: tc.token})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.ListDir(context.Background(), &pb.ListDirRequest{Path: "/"})
		c.Close()
		code := status.Code(err) // it wraps the status
		if code != tc.code {
			t.Fatalf("token %q: %v, want %s", tc.token, err, tc.code)
		}
	}
}
