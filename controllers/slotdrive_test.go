package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/host"
)

// recordingRunner refuses every registration and records what it got.
type recordingRunner struct {
	runnerpb.RunnerServiceClient
	spec    string
	md      metadata.MD
	cleaned bool
}

func (r *recordingRunner) RegisterTrial(ctx context.Context, in *runnerpb.RegisterTrialRequest, _ ...grpc.CallOption) (*runnerpb.RegisterTrialResponse, error) {
	r.spec = in.GetTrialSpecJson()
	r.md, _ = metadata.FromOutgoingContext(ctx)
	return &runnerpb.RegisterTrialResponse{Success: false, Error: "refused by the test"}, nil
}

func (r *recordingRunner) CleanupTrial(context.Context, *runnerpb.CleanupTrialRequest, ...grpc.CallOption) (*runnerpb.CleanupTrialResponse, error) {
	r.cleaned = true
	return &runnerpb.CleanupTrialResponse{Success: true}, nil
}

func (r *recordingRunner) HealthCheck(context.Context, *runnerpb.HealthCheckRequest, ...grpc.CallOption) (*runnerpb.HealthCheckResponse, error) {
	return &runnerpb.HealthCheckResponse{Status: "healthy", DbServiceConnected: true}, nil
}

// dbLater is a slot runner whose DB service answers from the n-th health
// check on (never, for n < 0).
type dbLater struct {
	runnerpb.RunnerServiceClient
	n, calls int
}

func (d *dbLater) HealthCheck(context.Context, *runnerpb.HealthCheckRequest, ...grpc.CallOption) (*runnerpb.HealthCheckResponse, error) {
	d.calls++
	ok := d.n >= 0 && d.calls >= d.n
	return &runnerpb.HealthCheckResponse{Status: map[bool]string{true: "healthy", false: "degraded"}[ok], DbServiceConnected: ok}, nil
}

// A fresh slot's runner is Ready before its loopback DB service may be:
// the attempt waits for the runner to reach it, and ends InfraFailed only
// when it never does.
func TestWaitSlotDB(t *testing.T) {
	d := &dbLater{n: 3}
	if err := waitSlotDB(context.Background(), d, 5*time.Second); err != nil || d.calls != 3 {
		t.Fatalf("err %v after %d checks", err, d.calls)
	}
	err := waitSlotDB(context.Background(), &dbLater{n: -1}, 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "status degraded") {
		t.Fatalf("err = %v", err)
	}
}

type idleActor struct{}

func (idleActor) Next(context.Context, []task.Message, []*runnerpb.ToolSchema) (host.Turn, error) {
	return host.Turn{}, errors.New("not called")
}

// An attempt on a slot dials the slot pod with the slot's token, tells the
// runner its DB service is on the pod's loopback, and sends the Trial's
// judge key in RegisterTrial's metadata, never in the TrialSpec. An
// attempt with pods of its own sends no such metadata.
func TestDriveSlot(t *testing.T) {
	const judgeKey = "ns/t1/0123456789abcdef"
	tr := slotTrial()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	gw := gatewaySecret(tr, judgeKey)
	attemptSecret := authSecret(attemptRef{tr, 1}, "attempt-token", "")
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(gw, attemptSecret).Build()
	var addr, token string
	rr := &recordingRunner{}
	d := &Driver{
		APIReader: c, GatewayURL: "http://gw:8090/v1",
		Actors: func(context.Context, ActorRequest) (host.Actor, error) { return idleActor{}, nil },
		Dial: func(_ context.Context, a, tok string) (runnerpb.RunnerServiceClient, io.Closer, error) {
			addr, token = a, tok
			return rr, io.NopCloser(nil), nil
		},
	}
	in := &attemptInput{Trial: tr, Number: 1, Task: resolvedShop()}
	res := d.DriveSlot(in, "10.1.2.3", "", "slot-token")(context.Background(), func(runnerReport) {})
	if addr != "10.1.2.3:50051" || token != "slot-token" {
		t.Errorf("dialed %s with %q", addr, token)
	}
	var spec task.TrialSpec
	if err := json.Unmarshal([]byte(rr.spec), &spec); err != nil {
		t.Fatalf("spec: %v (%s)", err, res)
	}
	if spec.EnvEndpoints == nil || spec.EnvEndpoints.DBServiceURL != "http://127.0.0.1:8000" {
		t.Errorf("env endpoints %+v", spec.EnvEndpoints)
	}
	if got := rr.md.Get(runnerpb.JudgeKeyMetadata); len(got) != 1 || got[0] != judgeKey {
		t.Errorf("judge key metadata %v", got)
	}
	if strings.Contains(rr.spec, judgeKey) {
		t.Error("the judge key is in the TrialSpec")
	}
	if !rr.cleaned {
		t.Error("no CleanupTrial")
	}

	// Per-attempt pods: the attempt's Secret, the DB pod's address, no metadata.
	*rr = recordingRunner{}
	d.Drive(in, "10.0.0.1", "10.0.0.2", "")(context.Background(), func(runnerReport) {})
	if token != "attempt-token" || rr.md.Get(runnerpb.JudgeKeyMetadata) != nil {
		t.Errorf("pods: token %q metadata %v", token, rr.md)
	}

	// A gateway Secret not controlled by the Trial is not used.
	gw.OwnerReferences[0].UID = "someone-else"
	c2 := fake.NewClientBuilder().WithScheme(scheme).WithObjects(gw).Build()
	d.APIReader = c2
	res = d.DriveSlot(in, "10.1.2.3", "", "slot-token")(context.Background(), func(runnerReport) {})
	if res.Outcome != evalv1.OutcomeInfraFailed || res.Reason != evalv1.ReasonCredentialUnavailable {
		t.Errorf("foreign gateway secret: %+v", res)
	}
}

// An attempt of a terminal task on a slot names its own environment pod in
// the TrialSpec and sends the environment's token, read from the attempt's
// Secret, in RegisterTrial's metadata beside the judge key: never in the
// TrialSpec. Without that Secret the attempt ends InfraFailed before it
// dials. Per-attempt pods send no token: their runner mounts it.
func TestDriveSlotEnvironment(t *testing.T) {
	const envToken = "env-token-of-attempt-1"
	tr := slotTrial()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	attemptSecret := authSecret(attemptRef{tr, 1}, "attempt-token", envToken)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(attemptSecret).Build()
	rr := &recordingRunner{}
	dialed := false
	d := &Driver{
		APIReader: c,
		Actors:    func(context.Context, ActorRequest) (host.Actor, error) { return idleActor{}, nil },
		Dial: func(context.Context, string, string) (runnerpb.RunnerServiceClient, io.Closer, error) {
			dialed = true
			return rr, io.NopCloser(nil), nil
		},
	}
	in := &attemptInput{Trial: tr, Number: 1, Task: &resolvedTask{Desc: terminalTask("img")}}
	res := d.DriveSlot(in, "10.1.2.3", "10.9.9.9", "slot-token")(context.Background(), func(runnerReport) {})
	var spec task.TrialSpec
	if err := json.Unmarshal([]byte(rr.spec), &spec); err != nil {
		t.Fatalf("spec: %v (%+v)", err, res)
	}
	if spec.EnvEndpoints == nil || spec.EnvEndpoints.EnvironmentURL != "10.9.9.9:7070" || spec.EnvEndpoints.DBServiceURL != slotDBURL {
		t.Errorf("env endpoints %+v", spec.EnvEndpoints)
	}
	if got := rr.md.Get(runnerpb.EnvironmentTokenMetadata); len(got) != 1 || got[0] != envToken {
		t.Errorf("environment token metadata %v", got)
	}
	if strings.Contains(rr.spec, envToken) {
		t.Error("the environment token is in the TrialSpec")
	}

	// Per-attempt pods: the runner reads the token from its own file.
	*rr = recordingRunner{}
	d.Drive(in, "10.0.0.1", "10.0.0.2", "10.9.9.9")(context.Background(), func(runnerReport) {})
	if rr.md.Get(runnerpb.EnvironmentTokenMetadata) != nil {
		t.Errorf("pods: metadata %v", rr.md)
	}

	// No attempt Secret: nothing to give the runner, so no dial.
	*rr, dialed = recordingRunner{}, false
	d.APIReader = fake.NewClientBuilder().WithScheme(scheme).Build()
	res = d.DriveSlot(in, "10.1.2.3", "10.9.9.9", "slot-token")(context.Background(), func(runnerReport) {})
	if res.Outcome != evalv1.OutcomeInfraFailed || res.Reason != evalv1.ReasonCredentialUnavailable ||
		!strings.HasPrefix(res.Message, "environment credential: read the attempt's credential secret ") || dialed {
		t.Errorf("no attempt secret: dialed %t, %+v", dialed, res)
	}
}
