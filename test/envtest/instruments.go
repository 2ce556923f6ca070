package envtest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers"
	"tolokaforge.io/operator/controllers/host"
	"tolokaforge.io/operator/controllers/host/agents"
)

// Gates hold an attempt's agent at its first turn until the spec lets go,
// so "mid-trial" is a point the spec chooses, not a race it hopes to win.
// Its Actors is a manager's ActorFactory.
type Gates struct {
	base controllers.ActorFactory
	mu   sync.Mutex
	m    map[types.NamespacedName]*Gate
	// paces are the trials whose agents are slowed (Pace).
	paces map[types.NamespacedName]Pace
	// keys records the API key each trial's agent was last built with.
	keys map[types.NamespacedName]string
}

// NewGates wraps base (nil: controllers.DefaultActors).
func NewGates(base controllers.ActorFactory) *Gates {
	if base == nil {
		base = controllers.DefaultActors
	}
	return &Gates{base: base, m: map[types.NamespacedName]*Gate{}, paces: map[types.NamespacedName]Pace{},
		keys: map[types.NamespacedName]string{}}
}

// Pace slows a trial's agent into a long run: its first turn is the base
// agent's (the oracle's golden calls), then Extra turns each of one
// read-only shop call (list_products and get_customer in turn, so the
// stuck detector sees no repeat), then the base agent's again (its stop).
// Every turn first waits Delay and bills Usage, so the attempt runs for
// (Extra+2) x Delay and its spend grows turn by turn.
type Pace struct {
	Delay time.Duration
	Extra int
	Usage host.Usage
}

// SetPace paces every attempt of a trial's agent.
func (g *Gates) SetPace(key types.NamespacedName, p Pace) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.paces[key] = p
}

// Gate is one held attempt: Reached closes when its agent is at its first
// turn; closing Release lets the agent go on.
type Gate struct {
	Reached chan struct{}
	Release chan struct{}
	attempt int32
	once    sync.Once
}

// Hold gates attempt n of a trial.
func (g *Gates) Hold(key types.NamespacedName, n int32) *Gate {
	g.mu.Lock()
	defer g.mu.Unlock()
	gt := &Gate{attempt: n, Reached: make(chan struct{}), Release: make(chan struct{})}
	g.m[key] = gt
	return gt
}

// AgentKey is the API key the trial's agent was last built with.
func (g *Gates) AgentKey(key types.NamespacedName) (string, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	k, ok := g.keys[key]
	return k, ok
}

// Actors builds the base actors and gates the held attempt's agent.
func (g *Gates) Actors(ctx context.Context, req controllers.ActorRequest) (host.Actor, error) {
	a, err := g.base(ctx, req)
	if err != nil {
		return nil, err
	}
	key := types.NamespacedName{Namespace: req.Trial.Namespace, Name: req.Trial.Name}
	g.mu.Lock()
	gt := g.m[key]
	pace, paced := g.paces[key]
	if req.Role == controllers.ActorAgent {
		g.keys[key] = req.APIKey
	}
	g.mu.Unlock()
	if paced && req.Role == controllers.ActorAgent {
		a = &pacedActor{inner: a, pace: pace}
	}
	if gt == nil || gt.attempt != req.Attempt || req.Role != controllers.ActorAgent {
		return a, nil
	}
	return &gatedActor{inner: a, gate: gt}, nil
}

type gatedActor struct {
	inner host.Actor
	gate  *Gate
}

func (a *gatedActor) Next(ctx context.Context, conv []task.Message, tools []*runnerpb.ToolSchema) (host.Turn, error) {
	a.gate.once.Do(func() { close(a.gate.Reached) })
	select {
	case <-a.gate.Release:
	case <-ctx.Done():
		return host.Turn{}, context.Cause(ctx)
	}
	return a.inner.Next(ctx, conv, tools)
}

type pacedActor struct {
	inner host.Actor
	pace  Pace
	turns int
}

func (a *pacedActor) Next(ctx context.Context, conv []task.Message, tools []*runnerpb.ToolSchema) (host.Turn, error) {
	select {
	case <-time.After(a.pace.Delay):
	case <-ctx.Done():
		return host.Turn{}, context.Cause(ctx)
	}
	a.turns++
	if a.turns == 1 || a.turns > a.pace.Extra+1 {
		t, err := a.inner.Next(ctx, conv, tools)
		t.Usage.Add(a.pace.Usage)
		return t, err
	}
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.GetName()
	}
	name, args := "list_products", `{}`
	if a.turns%2 == 1 {
		name, args = "get_customer", `{"customer_id":"C-101"}`
	}
	resolved, err := agents.ResolveToolName(name, names)
	if err != nil {
		return host.Turn{}, err
	}
	return host.Turn{Usage: a.pace.Usage, ToolCalls: []task.ToolCall{{ID: fmt.Sprintf("paced_%d", a.turns), Type: "function",
		Function: task.FunctionCall{Name: resolved, Arguments: args}}}}, nil
}

// RPCLog records every runner RPC the managers make, per trial and
// attempt. Its Wrap is a manager's RunnerWrapper.
type RPCLog struct {
	mu    sync.Mutex
	calls []rpcCall
}

// rpcCall is one recorded runner RPC.
type rpcCall struct {
	Trial   types.NamespacedName
	Attempt int32
	Method  string
	TrialID string
	OK      bool
}

func (l *RPCLog) add(c rpcCall) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, c)
}

// Of returns the calls of one trial, of one method unless method is "".
func (l *RPCLog) Of(key types.NamespacedName, method string) []rpcCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []rpcCall
	for _, c := range l.calls {
		if c.Trial == key && (method == "" || c.Method == method) {
			out = append(out, c)
		}
	}
	return out
}

// Wrap records the RPCs of one attempt's runner client.
func (l *RPCLog) Wrap(key types.NamespacedName, attempt int32, c runnerpb.RunnerServiceClient) runnerpb.RunnerServiceClient {
	return &recordingRunner{RunnerServiceClient: c, log: l, key: key, attempt: attempt}
}

type recordingRunner struct {
	runnerpb.RunnerServiceClient
	log     *RPCLog
	key     types.NamespacedName
	attempt int32
}

func (r *recordingRunner) rec(method, trialID string, ok bool) {
	r.log.add(rpcCall{Trial: r.key, Attempt: r.attempt, Method: method, TrialID: trialID, OK: ok})
}

func (r *recordingRunner) RegisterTrial(ctx context.Context, in *runnerpb.RegisterTrialRequest, opts ...grpc.CallOption) (*runnerpb.RegisterTrialResponse, error) {
	resp, err := r.RunnerServiceClient.RegisterTrial(ctx, in, opts...)
	r.rec("RegisterTrial", in.GetTrialId(), err == nil && resp.GetSuccess())
	return resp, err
}

func (r *recordingRunner) ExecuteTool(ctx context.Context, in *runnerpb.ExecuteToolRequest, opts ...grpc.CallOption) (*runnerpb.ExecuteToolResponse, error) {
	resp, err := r.RunnerServiceClient.ExecuteTool(ctx, in, opts...)
	r.rec("ExecuteTool", in.GetTrialId(), err == nil && resp.GetStatus() == runnerpb.ExecutionStatus_EXECUTION_STATUS_SUCCESS)
	return resp, err
}

func (r *recordingRunner) GradeTrial(ctx context.Context, in *runnerpb.GradeTrialRequest, opts ...grpc.CallOption) (*runnerpb.GradeTrialResponse, error) {
	resp, err := r.RunnerServiceClient.GradeTrial(ctx, in, opts...)
	r.rec("GradeTrial", in.GetTrialId(), err == nil && resp.GetSuccess())
	return resp, err
}

func (r *recordingRunner) CleanupTrial(ctx context.Context, in *runnerpb.CleanupTrialRequest, opts ...grpc.CallOption) (*runnerpb.CleanupTrialResponse, error) {
	resp, err := r.RunnerServiceClient.CleanupTrial(ctx, in, opts...)
	r.rec("CleanupTrial", in.GetTrialId(), err == nil && resp.GetSuccess())
	return resp, err
}

// APICounter counts API requests by whether they change something, and
// writes by verb and resource (WritesByKind), so a benchmark can say where
// its writes per trial go.
type APICounter struct {
	Writes atomic.Int64
	Reads  atomic.Int64

	mu     sync.Mutex
	byKind map[string]int64
}

// WritesByKind returns the writes so far keyed "VERB resource[/subresource]"
// (e.g. "PATCH trials/status").
func (c *APICounter) WritesByKind() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.byKind))
	for k, v := range c.byKind {
		out[k] = v
	}
	return out
}

func (c *APICounter) countWrite(method, path string) {
	c.Writes.Add(1)
	k := method + " " + writeKind(path)
	c.mu.Lock()
	if c.byKind == nil {
		c.byKind = map[string]int64{}
	}
	c.byKind[k]++
	c.mu.Unlock()
}

// writeKind reduces an API path to its resource and subresource:
// /apis/g/v/namespaces/ns/trials/name/status -> trials/status.
func writeKind(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i := 0; i < len(parts); i++ {
		if parts[i] == "namespaces" && i+2 < len(parts) {
			rest := parts[i+2:]
			if len(rest) >= 3 {
				return rest[0] + "/" + rest[2]
			}
			return rest[0]
		}
	}
	if len(parts) > 0 {
		return parts[len(parts)-1]
	}
	return path
}

type countingTransport struct {
	next http.RoundTripper
	c    *APICounter
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		t.c.countWrite(req.Method, req.URL.Path)
	default:
		t.c.Reads.Add(1)
	}
	return t.next.RoundTrip(req)
}

// Counted returns a copy of cfg whose every transport (client-go builds
// several: clients, watches, the event broadcaster) is counted by c.
func Counted(cfg *rest.Config, c *APICounter) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &countingTransport{next: rt, c: c}
	})
	return out
}

// ModelActors are controllers.DefaultActors except that an agent of
// provider openai is an LLM agent talking to its model's base URL (a
// test/fakellm server): the campaign specs' scripted LLM.
func ModelActors(ctx context.Context, req controllers.ActorRequest) (host.Actor, error) {
	if req.Role != controllers.ActorAgent || req.Model.Provider != evalv1.ProviderOpenAI {
		return controllers.DefaultActors(ctx, req)
	}
	cfg := &task.ModelConfig{Provider: task.ProviderOpenAI, Model: req.Model.Model, BaseURL: req.Model.BaseURL}
	if p := req.Model.Pricing; p != nil {
		cfg.Pricing = &task.Pricing{InputUSDPerMTok: p.InputUSDPerMTok, OutputUSDPerMTok: p.OutputUSDPerMTok}
	}
	m, err := agents.NewChatModel("agent", cfg, agents.Options{APIKey: req.APIKey})
	if err != nil {
		return nil, err
	}
	return agents.NewLLMAgent(m), nil
}
