package envtest

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/controllers"
)

// A warm slot (docs/warm-slots.md) is one pod of two containers: the runner
// and its DB service on the pod's loopback, 127.0.0.1:8000. The simulator
// runs a pod's first container only and gives every pod its own 127.x
// address on the host's one loopback, so a simulated slot is adapted at
// both ends: its runner starts the DB service itself on the pod's own
// address (slotRunnerArgs), and the manager's dialer points RegisterTrial's
// loopback DB URL at that address (slotDial). Per-attempt pods are left as
// they are: their DB URL is never the loopback one.

// slotLoopbackDB is the DB URL a slot's runner is given.
const slotLoopbackDB = "http://127.0.0.1:8000"

// slotRunnerArgs adapts a slot runner's args: the DB URL moves to the pod's
// address, and --slot is dropped (the runner of this tree may not know it
// yet; the baseline check it turns on is the runner's own to test). It
// reports whether the runner is a slot's, and the auth token file its DB
// service is to share.
func slotRunnerArgs(args []string, podIP string) (out []string, slot bool, tokenFile string) {
	for _, a := range args {
		if a == "--slot" {
			slot = true
		}
	}
	if !slot {
		return args, false, ""
	}
	out = make([]string, 0, len(args))
	for _, a := range args {
		switch {
		case a == "--slot":
			continue
		case a == "--db-service-url="+slotLoopbackDB:
			a = "--db-service-url=http://" + net.JoinHostPort(podIP, "8000")
		case strings.HasPrefix(a, "--auth-token-file="):
			tokenFile = strings.TrimPrefix(a, "--auth-token-file=")
		}
		out = append(out, a)
	}
	return out, true, tokenFile
}

// runSlotDB runs a simulated slot's DB service until ctx ends; wait blocks
// until it has.
func runSlotDB(ctx context.Context, podIP, tokenFile string) (wait func()) {
	var wg sync.WaitGroup
	wg.Go(func() {
		_ = runDBService(ctx, []string{"--listen=" + net.JoinHostPort(podIP, "8000"), "--auth-token-file=" + tokenFile})
	})
	return wg.Wait
}

// slotDial wraps a dialer so a runner at a slot pod's address is told to
// reach its DB service at that address instead of 127.0.0.1.
func slotDial(d controllers.RunnerDialer) controllers.RunnerDialer {
	return func(ctx context.Context, addr, token string) (runnerpb.RunnerServiceClient, io.Closer, error) {
		c, closer, err := d(ctx, addr, token)
		if err != nil {
			return nil, nil, err
		}
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, nil, errors.Join(err, closer.Close())
		}
		return &slotRewrite{RunnerServiceClient: c, db: "http://" + net.JoinHostPort(host, "8000")}, closer, nil
	}
}

type slotRewrite struct {
	runnerpb.RunnerServiceClient
	db string
}

func (s *slotRewrite) RegisterTrial(ctx context.Context, in *runnerpb.RegisterTrialRequest, opts ...grpc.CallOption) (*runnerpb.RegisterTrialResponse, error) {
	const loop = `"db_service_url":"` + slotLoopbackDB + `"`
	if strings.Contains(in.GetTrialSpecJson(), loop) {
		cp := proto.Clone(in).(*runnerpb.RegisterTrialRequest)
		cp.TrialSpecJson = strings.Replace(cp.TrialSpecJson, loop, `"db_service_url":"`+s.db+`"`, 1)
		in = cp
	}
	return s.RunnerServiceClient.RegisterTrial(ctx, in, opts...)
}
