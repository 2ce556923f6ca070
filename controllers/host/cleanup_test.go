package host_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/controllers/host"
	"tolokaforge.io/operator/results/local"
)

// refusingCleanup answers CleanupTrial as a slot runner that found something
// left behind (after really cleaning up, so the stack stays usable).
type refusingCleanup struct {
	runnerpb.RunnerServiceClient
	answer string
}

func (r refusingCleanup) CleanupTrial(ctx context.Context, in *runnerpb.CleanupTrialRequest, opts ...grpc.CallOption) (*runnerpb.CleanupTrialResponse, error) {
	if _, err := r.RunnerServiceClient.CleanupTrial(ctx, in, opts...); err != nil {
		return nil, err
	}
	return &runnerpb.CleanupTrialResponse{Success: false, Error: r.answer}, nil
}

// The result says how CleanupTrial went: a slot is reused only when it
// succeeded, so a refusal must reach the caller, not only the log.
func TestCleanupErrorIsInTheResult(t *testing.T) {
	for _, tc := range []struct {
		name   string
		refuse string
		want   string
	}{
		{name: "clean"},
		{name: "refused", refuse: "process 4242 (sleep) of no registered trial remains", want: "CleanupTrial refused: process 4242 (sleep) of no registered trial remains"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startStack(t, local.StackConfig{})
			agent := funcActor(func(context.Context, []task.Message, []*runnerpb.ToolSchema) (host.Turn, error) {
				return host.Turn{Content: "###STOP###"}, nil
			})
			cfg := attempt(s, specFor(s, calcTask(t), nil), agent, nil)
			if tc.refuse != "" {
				cfg.Runner = refusingCleanup{RunnerServiceClient: s.Runner, answer: tc.refuse}
			}
			res := host.RunAttempt(ctxT(t), cfg)
			if res.CleanupError != tc.want || (tc.want != "" && !strings.HasPrefix(res.CleanupError, "CleanupTrial refused")) {
				t.Fatalf("CleanupError = %q, want %q (%s)", res.CleanupError, tc.want, res)
			}
		})
	}
}
