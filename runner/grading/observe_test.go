package grading

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "tolokaforge.io/operator/api/execagentpb"
	"tolokaforge.io/operator/api/task"
)

// observingEnv is an Env that only observes; the environment verifier
// reaches nothing else of it.
type observingEnv struct {
	Env
	outcomes []string
	units    int
}

func (e *observingEnv) GradingUnit(string, time.Duration, error) { e.units++ }
func (e *observingEnv) VerifierRan(outcome string)               { e.outcomes = append(e.outcomes, outcome) }

// scriptedExec is an exec agent whose tests end as exec says and whose
// verifier directory holds reward.txt when reward is not "".
type scriptedExec struct {
	exec    *pb.ExecResponse
	execErr error
	reward  string
}

func (x *scriptedExec) Exec(context.Context, *pb.ExecRequest) (*pb.ExecResponse, error) {
	return x.exec, x.execErr
}

func (x *scriptedExec) ReadFile(_ context.Context, req *pb.ReadFileRequest) (*pb.ReadFileResponse, error) {
	if x.reward == "" || req.GetPath() != "/logs/verifier/"+rewardTxtName {
		return nil, status.Error(codes.NotFound, "no such file")
	}
	return &pb.ReadFileResponse{Content: []byte(x.reward), Size: int64(len(x.reward))}, nil
}

func (x *scriptedExec) PutTar(context.Context, *pb.PutTarRequest) (*pb.PutTarResponse, error) {
	return &pb.PutTarResponse{}, nil
}

func (x *scriptedExec) ResetDir(context.Context, *pb.ResetDirRequest) (*pb.ResetDirResponse, error) {
	return &pb.ResetDirResponse{}, nil
}

func (x *scriptedExec) KillAll(context.Context, *pb.KillAllRequest) (*pb.KillAllResponse, error) {
	return &pb.KillAllResponse{}, nil
}

func (x *scriptedExec) Address() string         { return "agent:1" }
func (x *scriptedExec) Paths() EnvironmentPaths { return DefaultEnvironmentPaths() }

// TestEnvironmentVerifierOutcomes: a terminal task's verifier run is
// reported once by outcome: a timeout (which scores 0) as timeout, a
// reward at or above the threshold as passed, below it as failed, and an
// agent that fails or a reward that is no number as error.
func TestEnvironmentVerifierOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name string
		x    *scriptedExec
		want string
	}{
		{"timeout", &scriptedExec{exec: &pb.ExecResponse{TimedOut: true, ExitCode: -1}}, VerifierTimeout},
		{"passed", &scriptedExec{exec: &pb.ExecResponse{}, reward: "1"}, VerifierPassed},
		{"failed", &scriptedExec{exec: &pb.ExecResponse{ExitCode: 1}, reward: "0.5"}, VerifierFailed},
		{"agent gone", &scriptedExec{execErr: errors.New("connection refused")}, VerifierError},
		{"bad reward", &scriptedExec{exec: &pb.ExecResponse{}, reward: "lots"}, VerifierError},
		{"no reward", &scriptedExec{exec: &pb.ExecResponse{}}, VerifierError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := &observingEnv{}
			opts := newOptions([]Option{WithLogger(logr.Discard())})
			g := &gradeCtx{opts: &opts, env: env, id: "t1",
				task: &task.TaskDescription{Environment: &task.Environment{}},
				cfg:  &task.GradingConfig{TestExecution: &task.TestExecution{Command: []string{"run-tests"}}}}
			_, _ = runEnvironmentVerification(context.Background(), g, tc.x)
			if len(env.outcomes) != 1 || env.outcomes[0] != tc.want {
				t.Fatalf("outcomes %v, want [%s]", env.outcomes, tc.want)
			}
		})
	}
	// Refused before the tests ran: no run to count.
	env := &observingEnv{}
	opts := newOptions(nil)
	g := &gradeCtx{opts: &opts, env: env, id: "t1", task: &task.TaskDescription{Environment: &task.Environment{}},
		cfg: &task.GradingConfig{TestExecution: &task.TestExecution{}}}
	if _, err := runEnvironmentVerification(context.Background(), g, &scriptedExec{}); err == nil || len(env.outcomes) != 0 {
		t.Fatalf("an empty command: err %v, outcomes %v", err, env.outcomes)
	}
}

// BenchmarkGradingUnit is what each evaluator pays to be timed and traced
// when the runner does not trace (a no-op span) and counts into an observer.
func BenchmarkGradingUnit(b *testing.B) {
	env := &observingEnv{}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, end := startUnit(ctx, env, evalHash)
		end(true, nil)
	}
}
