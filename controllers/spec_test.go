package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"tolokaforge.io/operator/api/llm"
	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/host"
	"tolokaforge.io/operator/controllers/host/agents"
	"tolokaforge.io/operator/examples/shop"
)

func TestBuildTrialSpec(t *testing.T) {
	tr := testTrial()
	tr.Spec.TrialIndex = 4
	tr.Spec.Agent = evalv1.ModelSpec{Provider: evalv1.ProviderOpenAI, Model: "gpt-x", BaseURL: "http://llm/v1",
		Temperature: ptr.To(0.2), MaxTokens: ptr.To[int32](512), Seed: ptr.To[int64](7),
		Pricing:         &evalv1.Pricing{InputUSDPerMTok: 1, OutputUSDPerMTok: 2},
		APIKeySecretRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "k"}, Key: "agent"}}
	tr.Spec.Judge = &evalv1.ModelSpec{Provider: evalv1.ProviderOpenAI, Model: "judge",
		APIKeySecretRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "k"}, Key: "judge"}}
	desc := &task.TaskDescription{TaskID: "shop_orders_02"}
	s := buildTrialSpec(tr, 2, desc, "http://10.0.0.2:8000")
	if s.TrialID != "shop_orders_02:4" || s.RunID != "ns/t1" || s.AttemptID != "uid-1-2" || s.Task != desc {
		t.Errorf("ids = %q %q %q", s.TrialID, s.RunID, s.AttemptID)
	}
	if s.EnvEndpoints == nil || s.EnvEndpoints.DBServiceURL != "http://10.0.0.2:8000" {
		t.Errorf("env endpoints = %+v", s.EnvEndpoints)
	}
	a := s.Agent
	if a.Provider != task.ProviderOpenAI || a.Model != "gpt-x" || a.BaseURL != "http://llm/v1" || *a.Temperature != 0.2 ||
		*a.MaxTokens != 512 || *a.Seed != 7 || a.Pricing.OutputUSDPerMTok != 2 {
		t.Errorf("agent = %+v", a)
	}
	if a.APIKeyEnv != "" {
		t.Errorf("agent api_key_env = %q: the agent's key stays in the manager", a.APIKeyEnv)
	}
	if s.Judge == nil || s.Judge.APIKeyEnv != "" || s.Judge.BaseURL != "" {
		t.Errorf("judge without a gateway = %+v, want no key file", s.Judge)
	}
	// Through the gateway: the judge's base URL is the gateway, its key
	// file the gateway token; the provider's URL and key stay in the manager.
	gs := buildTrialSpecVia(tr, 2, desc, "http://10.0.0.2:8000", "http://gw:8090/v1")
	if gs.Judge.BaseURL != "http://gw:8090/v1" || gs.Judge.APIKeyEnv != judgeKeyFile || gs.Judge.Model != "judge" {
		t.Errorf("judge via the gateway = %+v", gs.Judge)
	}
	if gs.Agent.BaseURL != "http://llm/v1" {
		t.Errorf("the agent's base URL changed: %q", gs.Agent.BaseURL)
	}
	if s.UserSimulatorModel != nil {
		t.Errorf("scripted user got a model: %+v", s.UserSimulatorModel)
	}
	var attempt int
	if err := json.Unmarshal(s.RuntimeContext["attempt"], &attempt); err != nil || attempt != 2 {
		t.Errorf("runtime_context.attempt = %s", s.RuntimeContext["attempt"])
	}
	// The spec must survive the runner's strict decoder.
	decoded, err := task.DecodeTaskDescription(shop.TaskJSON())
	if err != nil {
		t.Fatal(err)
	}
	s.Task = decoded
	raw, err := task.Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := task.DecodeTrialSpec(raw); err != nil {
		t.Errorf("runner would refuse the spec: %v", err)
	}
	if strings.Contains(strings.ToLower(string(raw)), "secret") {
		t.Errorf("the trial spec mentions a secret: %s", raw)
	}
}

func TestMaxTurnsAndLabels(t *testing.T) {
	tr := testTrial()
	if got := maxTurns(tr, nil); got != defaultMaxTurns {
		t.Errorf("default = %d", got)
	}
	if got := maxTurns(tr, &resolvedTask{MaxTurns: ptr.To[int32](14)}); got != 14 {
		t.Errorf("task = %d", got)
	}
	tr.Spec.MaxTurns = ptr.To[int32](3)
	if got := maxTurns(tr, &resolvedTask{MaxTurns: ptr.To[int32](14)}); got != 3 {
		t.Errorf("trial = %d", got)
	}
	if got := runID(tr); got != "ns/t1" {
		t.Errorf("run id = %q", got)
	}
	tr.OwnerReferences = []metav1.OwnerReference{{APIVersion: evalv1.GroupVersion.String(), Kind: "Campaign",
		Name: "nightly", UID: "c", Controller: ptr.To(true)}}
	if got := runID(tr); got != "ns/nightly" {
		t.Errorf("run id of a campaign trial = %q", got)
	}
	if got := agentLabel(evalv1.ModelSpec{Provider: evalv1.ProviderOpenAI, Model: "gpt"}); got != "openai/gpt" {
		t.Errorf("label = %q", got)
	}
	if got := attemptArtifactsDir("/art", tr, 2); got != "/art/ns/t1/attempt-2" {
		t.Errorf("artifacts = %q", got)
	}
	if got := attemptArtifactsDir("", tr, 2); got != "" {
		t.Errorf("no root: %q", got)
	}
}

func TestDefaultActors(t *testing.T) {
	desc := &task.TaskDescription{TaskID: "t"}
	spec := &task.TrialSpec{Task: desc, Agent: &task.ModelConfig{Provider: task.ProviderOracle}}
	a, err := DefaultActors(context.Background(), ActorRequest{Role: ActorAgent, Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := a.(*agents.Oracle); !ok {
		t.Errorf("oracle agent is %T", a)
	}
	u, err := DefaultActors(context.Background(), ActorRequest{Role: actorUser, Spec: spec, InitialUserMessage: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := u.(*host.ScriptedUser); !ok {
		t.Errorf("default user is %T", u)
	}
	for _, tc := range []struct {
		req  ActorRequest
		want string
	}{
		{ActorRequest{Role: ActorAgent, Spec: &task.TrialSpec{Agent: &task.ModelConfig{Provider: "bogus"}}},
			`agent: provider "bogus" is not one of oracle, openai`},
		{ActorRequest{Role: actorUser, Spec: &task.TrialSpec{UserSimulatorModel: &task.ModelConfig{Provider: task.ProviderOracle}}},
			`user simulator: provider "oracle" cannot play the user`},
		{ActorRequest{Role: "judge", Spec: spec}, `unknown actor role "judge"`},
	} {
		if _, err := DefaultActors(context.Background(), tc.req); err == nil || err.Error() != tc.want {
			t.Errorf("err = %v, want %q", err, tc.want)
		}
	}
}

// TestDriverReadsTheKeyAndNeverLogsIt runs the driver up to the actor
// factory with a real Secret and a capturing logger.
func TestDriverReadsTheKeyAndNeverLogsIt(t *testing.T) {
	const secretValue = "sk-very-secret-0123"
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "keys",
			Annotations: map[string]string{evalv1.AnnotationAllowedBaseURLs: llm.DefaultBaseURL}},
		Data: map[string][]byte{"agent": []byte(secretValue)},
	}).Build()
	var logs strings.Builder
	log := funcr.New(func(prefix, args string) { logs.WriteString(prefix + args + "\n") }, funcr.Options{Verbosity: 10})

	var gotKey string
	d := &Driver{
		APIReader: c, Log: log,
		Actors: func(_ context.Context, req ActorRequest) (host.Actor, error) {
			gotKey = req.APIKey
			return nil, errors.New("stop here")
		},
		Dial: func(context.Context, string, string) (runnerpb.RunnerServiceClient, io.Closer, error) {
			t.Fatal("dialed although the actor failed")
			return nil, nil, nil
		},
	}
	tr := testTrial()
	tr.Spec.Agent.APIKeySecretRef = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "keys"}, Key: "agent"}
	in := &attemptInput{Trial: tr, Number: 1, Task: resolvedShop()}
	res := d.Drive(in, "10.0.0.1", "10.0.0.2", "")(context.Background(), func(runnerReport) {})
	if gotKey != secretValue {
		t.Errorf("actor got key %q", gotKey)
	}
	if res.Outcome != evalv1.OutcomeInvalid || res.Reason != evalv1.ReasonInvalidConfig || res.Message != "agent: stop here" {
		t.Errorf("result = %+v", res)
	}

	// A missing key is an infrastructure fault (the Secret may appear),
	// named without the value.
	tr.Spec.Agent.APIKeySecretRef.Key = "absent"
	res = d.Drive(in, "10.0.0.1", "10.0.0.2", "")(context.Background(), func(runnerReport) {})
	if res.Outcome != evalv1.OutcomeInfraFailed || res.Reason != evalv1.ReasonAPIKeyUnavailable ||
		res.Message != `agent API key: secret ns/keys has no key "absent"` {
		t.Errorf("result = %+v", res)
	}
	tr.Spec.Agent.APIKeySecretRef = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}, Key: "k", Optional: ptr.To(true)}
	gotKey = "unset"
	d.Drive(in, "10.0.0.1", "10.0.0.2", "")(context.Background(), func(runnerReport) {})
	if gotKey != "" {
		t.Errorf("optional missing secret gave key %q", gotKey)
	}
	if strings.Contains(logs.String(), secretValue) {
		t.Errorf("the key reached the log:\n%s", logs.String())
	}
}

type fakeRunner struct {
	runnerpb.RunnerServiceClient
	ok bool
	// trailer is what the fake runner sends after RegisterTrial.
	trailer metadata.MD
}

func (f fakeRunner) RegisterTrial(_ context.Context, _ *runnerpb.RegisterTrialRequest, opts ...grpc.CallOption) (*runnerpb.RegisterTrialResponse, error) {
	for _, o := range opts {
		if tr, ok := o.(grpc.TrailerCallOption); ok {
			*tr.TrailerAddr = f.trailer
		}
	}
	return &runnerpb.RegisterTrialResponse{Success: f.ok}, nil
}

func TestObservedRunnerSignalsRegistrationOnlyOnSuccess(t *testing.T) {
	for _, ok := range []bool{true, false} {
		n := 0
		var got runnerReport
		o := &observedRunner{RunnerServiceClient: fakeRunner{ok: ok, trailer: runnerpb.ConfinementMD(6)},
			registered: func(c runnerReport) { n++; got = c }, metrics: newMetrics()}
		if _, err := o.RegisterTrial(context.Background(), &runnerpb.RegisterTrialRequest{}); err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{true: 1, false: 0}[ok]; n != want {
			t.Errorf("success=%v: registered called %d times", ok, n)
		}
		if want := map[bool]runnerReport{true: {reported: true, landlockABI: 6}}[ok]; got != want {
			t.Errorf("success=%v: confinement %+v, want %+v", ok, got, want)
		}
	}
	// RegisterTrial inside the attempt's span reports the attempt's trace.
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	sctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid}))
	var traced runnerReport
	o := &observedRunner{RunnerServiceClient: fakeRunner{ok: true}, registered: func(c runnerReport) { traced = c }}
	if _, err := o.RegisterTrial(sctx, &runnerpb.RegisterTrialRequest{}); err != nil {
		t.Fatal(err)
	}
	if traced.traceID != tid.String() {
		t.Errorf("trace id %q, want %q", traced.traceID, tid)
	}
	// A runner that sends no trailer (an older image) reports nothing.
	var got runnerReport
	o = &observedRunner{RunnerServiceClient: fakeRunner{ok: true}, registered: func(c runnerReport) { got = c }}
	if _, err := o.RegisterTrial(context.Background(), &runnerpb.RegisterTrialRequest{}); err != nil {
		t.Fatal(err)
	}
	if got.reported {
		t.Errorf("confinement %+v from a runner that sent none", got)
	}
}
