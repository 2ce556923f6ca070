package execagent_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"tolokaforge.io/operator/api/authn"
	pb "tolokaforge.io/operator/api/execagentpb"
	"tolokaforge.io/operator/runner/execagent"
	"tolokaforge.io/operator/runner/execagent/client"
)

func TestMain(m *testing.M) {
	// Orphans of the commands (double forks) come back to this process, as
	// they do to the agent, so KillAll finds them by their parents.
	if err := execagent.SetSubreaper(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

type agent struct {
	srv   *execagent.Server
	c     *client.Client
	addr  string
	token string
	state string
}

// startAgent serves an agent in process on 127.0.0.1:0 and returns a
// client with its token. edit may change the options.
func startAgent(t *testing.T, edit func(*execagent.Options)) *agent {
	t.Helper()
	token, err := authn.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	opts := execagent.Options{Token: token, StateDir: t.TempDir() + "/state", Version: "test-1"}
	if edit != nil {
		edit(&opts)
	}
	srv, err := execagent.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis) //nolint:errcheck // Stop ends it
	c, err := client.Dial(lis.Addr().String(), client.Options{Token: token, CallTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Stop(ctx)
		srv.Close()
	})
	return &agent{srv: srv, c: c, addr: lis.Addr().String(), token: token, state: opts.StateDir}
}

// run execs a shell command with a 10 s timeout and fails the test on an
// RPC error.
func (a *agent) run(t *testing.T, cmd string) *pb.ExecResponse {
	t.Helper()
	resp, err := a.c.Exec(context.Background(), &pb.ExecRequest{Command: cmd, TimeoutMs: 10_000})
	if err != nil {
		t.Fatalf("exec %q: %v", cmd, err)
	}
	return resp
}
