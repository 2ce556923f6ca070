package controllers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tolokaforge.io/operator/api/artifacts/blobstore"
	"tolokaforge.io/operator/api/llm"
	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/gateway"
	"tolokaforge.io/operator/controllers/host"
	runnerclient "tolokaforge.io/operator/runner/client"
)

// RunnerDialer connects to the runner at addr (host:port), presenting token
// (the attempt's credential, package authn) on every call, and waits until
// it serves. The io.Closer releases the connection.
type RunnerDialer func(ctx context.Context, addr, token string) (runnerpb.RunnerServiceClient, io.Closer, error)

// RunnerWrapper lets a caller observe or alter one attempt's runner client
// (tests record RPCs with it). Production leaves it nil.
type RunnerWrapper func(trial types.NamespacedName, attempt int32, c runnerpb.RunnerServiceClient) runnerpb.RunnerServiceClient

// dialTimeout bounds connecting to a runner whose pod just turned Ready.
const dialTimeout = 30 * time.Second

// Driver turns a ready attempt into a DriveFunc for the pool.
type Driver struct {
	// APIReader reads API-key Secrets uncached at attempt start: the manager
	// may get Secrets but never lists or watches them.
	APIReader client.Reader
	Dial      RunnerDialer
	Actors    ActorFactory
	// Limits is the manager's one registry of per-model pacing, passed to
	// every actor of every Trial (nil: no shared pacing).
	Limits       *llm.Limits
	ArtifactsDir string
	// Artifacts, when set, is the store every attempt writes to (under
	// <namespace>/<trial>/attempt-<n>/, so two managers never share a key),
	// instead of ArtifactsDir.
	Artifacts  *blobstore.Store
	Metrics    *Metrics
	Log        logr.Logger
	WrapRunner RunnerWrapper
	// GatewayURL is the manager's LLM gateway as runner pods reach it
	// (PodConfig.GatewayURL); the judge's base URL in every TrialSpec.
	GatewayURL string
}

// attemptInput is what an attempt is driven from, fixed when it started so
// a Task edited mid-attempt does not change the attempt under the agent.
type attemptInput struct {
	Trial  *evalv1.Trial
	Number int32
	Task   *resolvedTask
}

// attemptTarget is where an attempt runs: its runner, its DB service as
// the runner reaches it, the environment (a terminal task), and for a slot
// the slot's token.
type attemptTarget struct {
	runnerIP, dbURL, envIP string
	// slotToken is the slot's credential; "" for an attempt with pods of
	// its own, whose credential is the attempt's Secret.
	slotToken string
}

// Drive returns the DriveFunc of one attempt whose pods are ready.
// envIP is the environment pod's (a terminal task), empty for other tasks.
func (d *Driver) Drive(in *attemptInput, runnerIP, dbIP, envIP string) driveFunc {
	tg := attemptTarget{runnerIP: runnerIP, envIP: envIP,
		dbURL: "http://" + net.JoinHostPort(dbIP, strconv.Itoa(DBServicePort))}
	return func(ctx context.Context, registered func(runnerReport)) host.AttemptResult {
		return d.run(ctx, in, tg, registered)
	}
}

// DriveSlot returns the DriveFunc of one attempt on a Ready slot: the
// runner at the slot pod's IP, its DB service on the pod's loopback (the
// runner reaches it there, nothing else can), the slot's token. envIP is
// the attempt's own environment pod's (a terminal task), empty otherwise.
func (d *Driver) DriveSlot(in *attemptInput, slotIP, envIP, token string) driveFunc {
	tg := attemptTarget{runnerIP: slotIP, dbURL: slotDBURL, envIP: envIP, slotToken: token}
	return func(ctx context.Context, registered func(runnerReport)) host.AttemptResult {
		return d.run(ctx, in, tg, registered)
	}
}

func (d *Driver) run(ctx context.Context, in *attemptInput, tg attemptTarget, registered func(runnerReport)) host.AttemptResult {
	t := in.Trial
	key := types.NamespacedName{Namespace: t.Namespace, Name: t.Name}
	log := d.Log.WithValues("trial", key.String(), "attempt", in.Number)
	start := time.Now()
	fail := func(o evalv1.AttemptOutcome, reason, format string, args ...any) host.AttemptResult {
		return host.AttemptResult{Outcome: o, Reason: reason, Message: fmt.Sprintf(format, args...),
			StartTime: start, EndTime: time.Now()}
	}

	spec := buildTrialSpecVia(t, in.Number, in.Task.Desc, tg.dbURL, d.GatewayURL)
	if tg.envIP != "" {
		spec.EnvEndpoints.EnvironmentURL = net.JoinHostPort(tg.envIP, strconv.Itoa(EnvironmentPort))
	}
	agentKey, err := d.secretValue(ctx, t.Namespace, t.Spec.Agent.APIKeySecretRef, t.Spec.Agent.BaseURL)
	if err != nil {
		o, reason := keyFailure(err)
		return fail(o, reason, "agent API key: %v", err)
	}
	agentHeaders, err := d.headerValues(ctx, t.Namespace, t.Spec.Agent.ExtraHeaders, t.Spec.Agent.BaseURL)
	if err != nil {
		o, reason := keyFailure(err)
		return fail(o, reason, "agent extra header: %v", err)
	}
	agent, err := d.Actors(ctx, ActorRequest{Role: ActorAgent, Trial: t, Attempt: in.Number, Spec: spec,
		Task: spec.Task, Model: t.Spec.Agent, InitialUserMessage: in.Task.InitialUserMessage, APIKey: agentKey,
		Headers: agentHeaders, Limits: d.Limits, Log: log.WithName("agent")})
	if err != nil {
		return fail(evalv1.OutcomeInvalid, evalv1.ReasonInvalidConfig, "agent: %v", err)
	}
	user, err := d.userActor(ctx, in, spec, log)
	if err != nil {
		var se *secretError
		if errors.As(err, &se) {
			o, reason := keyFailure(err)
			return fail(o, reason, "user simulator API key: %v", err)
		}
		return fail(evalv1.OutcomeInvalid, evalv1.ReasonInvalidConfig, "user simulator: %v", err)
	}

	token := tg.slotToken
	judgeKey, envToken := "", ""
	if token == "" {
		if token, err = attemptToken(ctx, d.APIReader, t, in.Number); err != nil {
			return fail(evalv1.OutcomeInfraFailed, evalv1.ReasonCredentialUnavailable, "runner credential: %v", err)
		}
	} else {
		if usesGateway(t, d.GatewayURL) {
			if judgeKey, err = gatewayToken(ctx, d.APIReader, t); err != nil {
				return fail(evalv1.OutcomeInfraFailed, evalv1.ReasonCredentialUnavailable, "judge key: %v", err)
			}
		}
		if tg.envIP != "" {
			// The attempt's environment has a token of its own, in the
			// attempt's Secret; the slot's runner mounts no such file.
			if envToken, err = attemptEnvironmentToken(ctx, d.APIReader, t, in.Number); err != nil {
				return fail(evalv1.OutcomeInfraFailed, evalv1.ReasonCredentialUnavailable, "environment credential: %v", err)
			}
		}
	}
	addr := net.JoinHostPort(tg.runnerIP, strconv.Itoa(RunnerPort))
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	rc, closer, err := d.Dial(dctx, addr, token)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return fail(evalv1.OutcomeInfraFailed, evalv1.ReasonCanceled, "attempt canceled: %v", context.Cause(ctx))
		}
		return fail(evalv1.OutcomeInfraFailed, evalv1.ReasonRunnerUnavailable, "dial runner %s: %v", addr, err)
	}
	defer closer.Close()
	if d.WrapRunner != nil {
		rc = d.WrapRunner(key, in.Number, rc)
	}
	rc = &observedRunner{RunnerServiceClient: rc, registered: registered, metrics: d.Metrics}
	if judgeKey != "" || envToken != "" {
		rc = &registrationSecrets{RunnerServiceClient: rc, judgeKey: judgeKey, envToken: envToken}
	}
	if tg.slotToken != "" {
		// A slot pod is Ready when its runner serves; its DB service, on
		// loopback, has no probe of its own. The runner says whether it
		// reaches it: a fresh slot is waited for, not failed.
		if err := waitSlotDB(ctx, rc, dialTimeout); err != nil {
			if ctx.Err() != nil {
				return fail(evalv1.OutcomeInfraFailed, evalv1.ReasonCanceled, "attempt canceled: %v", context.Cause(ctx))
			}
			return fail(evalv1.OutcomeInfraFailed, evalv1.ReasonDBServiceUnavailable, "slot at %s: %v", addr, err)
		}
	}

	cfg := host.AttemptConfig{
		Runner:             rc,
		Spec:               spec,
		InitialUserMessage: in.Task.InitialUserMessage,
		MaxTurns:           maxTurns(t, in.Task),
		Agent:              agent,
		User:               user,
		ArtifactsDir:       attemptArtifactsDir(d.ArtifactsDir, t, in.Number),
		Record:             recordOf(t),
		TrialIndex:         int(t.Spec.TrialIndex),
		AttemptNumber:      int(in.Number),
		Progress:           progressSink(ctx),
		Log:                log,
	}
	if d.Artifacts != nil {
		cfg.ArtifactsDir = ""
		cfg.ArtifactsSink = d.Artifacts.Sink(attemptArtifactsKey(t, in.Number))
	}
	if to := t.Spec.Timeouts.Trial; to != nil {
		cfg.TrialTimeout = to.Duration
	}
	// A terminal task bounds its agent ([agent] timeout_sec); the Trial's
	// own bound wins when it is shorter. The tests still run after it.
	if env := in.Task.Desc.Environment; env != nil && env.Agent.TimeoutS > 0 {
		if a := time.Duration(env.Agent.TimeoutS * float64(time.Second)); cfg.TrialTimeout == 0 || a < cfg.TrialTimeout {
			cfg.TrialTimeout = a
		}
	}
	if to := t.Spec.Timeouts.Tool; to != nil {
		cfg.DefaultToolTimeout = to.Duration
	}
	if to := t.Spec.Timeouts.Grading; to != nil {
		cfg.GradingTimeout = to.Duration
	}
	res := host.RunAttempt(ctx, cfg)
	if d.Artifacts != nil && res.ArtifactsPath != "" {
		res.ArtifactsURL = d.Artifacts.URL(trialArtifactsKey(t))
	}
	return res
}

// userActor is nil (the host's default scripted user: the task's scripted
// flow, else the initial message) unless the Trial asks for scripted lines or
// an LLM user.
func (d *Driver) userActor(ctx context.Context, in *attemptInput, spec *task.TrialSpec, log logr.Logger) (host.Actor, error) {
	u := in.Trial.Spec.UserSimulator
	if u == nil {
		return nil, nil
	}
	switch u.Mode {
	case evalv1.UserSimulatorLLM:
		if u.Model == nil {
			return nil, fmt.Errorf("mode llm needs a model")
		}
		key, err := d.secretValue(ctx, in.Trial.Namespace, u.Model.APIKeySecretRef, u.Model.BaseURL)
		if err != nil {
			return nil, err
		}
		headers, err := d.headerValues(ctx, in.Trial.Namespace, u.Model.ExtraHeaders, u.Model.BaseURL)
		if err != nil {
			return nil, err
		}
		return d.Actors(ctx, ActorRequest{Role: actorUser, Trial: in.Trial, Attempt: in.Number, Spec: spec,
			Task: spec.Task, Model: *u.Model, InitialUserMessage: in.Task.InitialUserMessage, APIKey: key,
			Headers: headers, Limits: d.Limits, Log: log.WithName("user")})
	default:
		if len(u.Lines) == 0 {
			return nil, nil
		}
		return host.NewScriptedUser(u.Lines...), nil
	}
}

// secretError marks a failure to read an API key (retried: the Secret may
// appear), as opposed to a configuration nobody can drive.
type secretError struct{ err error }

func (e *secretError) Error() string { return e.err.Error() }
func (e *secretError) Unwrap() error { return e.err }

// secretValue reads one key of a provider Secret for the model at baseURL,
// checking again that the Secret is opted in for it (the check before the
// pods may be minutes old). The value is returned, never put into an error
// or a log line.
func (d *Driver) secretValue(ctx context.Context, ns string, ref *corev1.SecretKeySelector, baseURL string) (string, error) {
	v, err := readProviderKey(ctx, d.APIReader, ns, ref, normalizeBaseURL(baseURL))
	if err != nil {
		return "", &secretError{err}
	}
	return v, nil
}

// headerValues reads each extra header's Secret; errors name the header,
// never its value.
func (d *Driver) headerValues(ctx context.Context, ns string, hs []evalv1.ExtraHeader, baseURL string) (map[string]string, error) {
	if len(hs) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(hs))
	for _, h := range hs {
		ref := h.ValueFrom.SecretKeyRef
		v, err := d.secretValue(ctx, ns, &ref, baseURL)
		if err != nil {
			return nil, fmt.Errorf("header %s: %w", h.Name, err)
		}
		if v != "" {
			out[h.Name] = v
		}
	}
	return out, nil
}

// keyFailure is the attempt's end when a provider Secret cannot be used:
// one that is not (or no longer) opted in, or unreadable for RBAC, makes the
// attempt Invalid; one missing is an infrastructure fault that may heal.
func keyFailure(err error) (evalv1.AttemptOutcome, string) {
	var ke *keyError
	if errors.As(err, &ke) && !ke.Transient {
		return evalv1.OutcomeInvalid, ke.Reason
	}
	return evalv1.OutcomeInfraFailed, evalv1.ReasonAPIKeyUnavailable
}

// observedRunner times registration and grading and tells the pool when the
// runner accepted the trial.
type observedRunner struct {
	runnerpb.RunnerServiceClient
	registered func(runnerReport)
	metrics    *Metrics
}

func (o *observedRunner) RegisterTrial(ctx context.Context, in *runnerpb.RegisterTrialRequest, opts ...grpc.CallOption) (*runnerpb.RegisterTrialResponse, error) {
	start := time.Now()
	var md metadata.MD
	resp, err := o.RunnerServiceClient.RegisterTrial(ctx, in, append(opts[:len(opts):len(opts)], grpc.Trailer(&md))...)
	if o.metrics != nil {
		o.metrics.Registration.Observe(time.Since(start).Seconds())
	}
	if err == nil && resp.GetSuccess() && o.registered != nil {
		abi, ok := runnerpb.ConfinementFromMD(md)
		// The host calls RegisterTrial inside the attempt's span: its trace
		// is the attempt's.
		var traceID string
		if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
			traceID = sc.TraceID().String()
		}
		o.registered(runnerReport{reported: ok, landlockABI: abi, traceID: traceID})
	}
	return resp, err
}

func (o *observedRunner) GradeTrial(ctx context.Context, in *runnerpb.GradeTrialRequest, opts ...grpc.CallOption) (*runnerpb.GradeTrialResponse, error) {
	start := time.Now()
	resp, err := o.RunnerServiceClient.GradeTrial(ctx, in, opts...)
	if o.metrics != nil {
		o.metrics.Grading.Observe(time.Since(start).Seconds())
	}
	return resp, err
}

// registrationSecrets sends a slot's runner what a per-attempt runner reads
// from files of its pod, in RegisterTrial's metadata: the Trial's judge key
// (runnerpb.JudgeKeyMetadata) and the attempt's environment token
// (runnerpb.EnvironmentTokenMetadata). Never in the TrialSpec JSON nor in a
// log line; the slot's runner keeps them for that trial only.
type registrationSecrets struct {
	runnerpb.RunnerServiceClient
	judgeKey, envToken string
}

func (j *registrationSecrets) RegisterTrial(ctx context.Context, in *runnerpb.RegisterTrialRequest, opts ...grpc.CallOption) (*runnerpb.RegisterTrialResponse, error) {
	if j.judgeKey != "" {
		ctx = runnerpb.WithJudgeKey(ctx, j.judgeKey)
	}
	if j.envToken != "" {
		ctx = runnerpb.WithEnvironmentToken(ctx, j.envToken)
	}
	return j.RunnerServiceClient.RegisterTrial(ctx, in, opts...)
}

// slotDBPoll is how often waitSlotDB asks the runner again.
const slotDBPoll = 100 * time.Millisecond

// waitSlotDB waits until the slot's runner reaches its DB service (its
// HealthCheck's db_service_connected), at most limit.
func waitSlotDB(ctx context.Context, rc runnerpb.RunnerServiceClient, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	last := "no answer yet"
	for {
		resp, err := rc.HealthCheck(ctx, &runnerpb.HealthCheckRequest{})
		switch {
		case err == nil && resp.GetDbServiceConnected():
			return nil
		case err != nil:
			last = err.Error()
		default:
			last = "the runner does not reach its DB service (status " + resp.GetStatus() + ")"
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("DB service not reachable within %s: %s", limit, last)
		case <-time.After(slotDBPoll):
		}
	}
}

// gatewayToken reads the Trial's judge key (its gateway token) back,
// uncached, refusing a Secret the Trial does not control.
func gatewayToken(ctx context.Context, r client.Reader, t *evalv1.Trial) (string, error) {
	name := gateway.SecretName(t.Name)
	s := &corev1.Secret{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: t.Namespace, Name: name}, s); err != nil {
		return "", fmt.Errorf("read the trial's gateway token secret %s/%s: %w", t.Namespace, name, err)
	}
	if ref := metav1.GetControllerOf(s); ref == nil || ref.UID != t.UID {
		return "", fmt.Errorf("secret %s/%s is not controlled by trial %s", t.Namespace, name, t.Name)
	}
	tok := string(s.Data[gateway.TokenKey])
	if tok == "" {
		return "", fmt.Errorf("secret %s/%s has no %q key", t.Namespace, name, gateway.TokenKey)
	}
	return tok, nil
}

// DialRunner is the production RunnerDialer: runner/client's channel, ready
// once the runner's health service says SERVING.
func DialRunner(opts ...runnerclient.Option) RunnerDialer {
	return func(ctx context.Context, addr, token string) (runnerpb.RunnerServiceClient, io.Closer, error) {
		c, err := runnerclient.Dial(ctx, addr, append(opts[:len(opts):len(opts)], runnerclient.WithToken(token))...)
		if err != nil {
			return nil, nil, err
		}
		if err := c.WaitReady(ctx); err != nil {
			_ = c.Close()
			return nil, nil, err
		}
		return c, c, nil
	}
}
