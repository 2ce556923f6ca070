package host_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/controllers/host"
	"tolokaforge.io/operator/results/local"
)

// wholeOutputRunner answers every ExecuteTool with a ToolOutputTrailer, as
// the runner does for a terminal task's bash calls.
type wholeOutputRunner struct {
	runnerpb.RunnerServiceClient
	whole string
}

func (w wholeOutputRunner) ExecuteTool(ctx context.Context, in *runnerpb.ExecuteToolRequest, opts ...grpc.CallOption) (*runnerpb.ExecuteToolResponse, error) {
	resp, err := w.RunnerServiceClient.ExecuteTool(ctx, in, opts...)
	for _, o := range opts {
		if t, ok := o.(grpc.TrailerCallOption); ok {
			*t.TrailerAddr = metadata.Join(*t.TrailerAddr, runnerpb.ToolOutputMD([]byte(w.whole+" of "+in.GetCallId())))
		}
	}
	return resp, err
}

func (w wholeOutputRunner) GradeTrial(ctx context.Context, in *runnerpb.GradeTrialRequest, opts ...grpc.CallOption) (*runnerpb.GradeTrialResponse, error) {
	resp, err := w.RunnerServiceClient.GradeTrial(ctx, in, opts...)
	for _, o := range opts {
		if t, ok := o.(grpc.TrailerCallOption); ok {
			*t.TrailerAddr = metadata.Join(*t.TrailerAddr, runnerpb.TestOutputMD([]byte("TESTS SAID")))
		}
	}
	return resp, err
}

// A call's whole output sent beside the response lands, at once, as
// attempts/<n>/tools/<call id>.txt of the trial's artifacts (the transcript
// keeps what the model saw), and the tests' whole output sent beside
// GradeTrial's as attempts/<n>/tests-output.txt.
func TestToolOutputArtifact(t *testing.T) {
	s := startStack(t, local.StackConfig{})
	td := calcTask(t)
	spec := specFor(s, td, &task.ModelConfig{Provider: task.ProviderOracle})
	dir := t.TempDir()
	turns := 0
	agent := funcActor(func(ctx context.Context, conv []task.Message, tools []*runnerpb.ToolSchema) (host.Turn, error) {
		turns++
		if turns == 1 {
			return host.Turn{ToolCalls: []task.ToolCall{{ID: "call/1", Type: "function", Function: task.FunctionCall{Name: "calculator", Arguments: `{"expression":"2+2"}`}}}}, nil
		}
		return host.Turn{Content: host.StopMarker}, nil
	})
	cfg := attempt(s, spec, agent, nil)
	cfg.Runner = wholeOutputRunner{RunnerServiceClient: s.Runner, whole: "WHOLE OUTPUT"}
	cfg.ArtifactsDir = dir
	res := host.RunAttempt(ctxT(t), cfg)
	if res.ArtifactsError != nil {
		t.Fatal(res.ArtifactsError)
	}
	name := host.ToolOutputName(td.TaskID, 0, 1, "call/1")
	if name != "trials/calc/0/attempts/1/tools/call_1.txt" {
		t.Fatalf("name %s", name)
	}
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil || string(b) != "WHOLE OUTPUT of call/1" {
		t.Fatalf("artifact %q %v", b, err)
	}
	// The tests' whole output, sent beside GradeTrial's response.
	b, err = os.ReadFile(filepath.Join(dir, filepath.FromSlash(host.TestOutputName(td.TaskID, 0, 1))))
	if err != nil || string(b) != "TESTS SAID" {
		t.Fatalf("tests-output.txt %q %v", b, err)
	}
}
