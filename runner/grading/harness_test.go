package grading

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"tolokaforge.io/operator/api/canonical"
	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/dbservice"
	"tolokaforge.io/operator/dbservice/client"
)

// faults sits in front of the real DB service and fails the requests its rule picks
// with a 503, the way a DB service that starts failing would answer.
type faults struct {
	mu   sync.Mutex
	rule func(r *http.Request) bool
	seen []string // "METHOD path" of every request that reached the middleware
}

func (f *faults) set(rule func(r *http.Request) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rule = rule
}

func (f *faults) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.seen = append(f.seen, r.Method+" "+r.URL.Path)
		fail := f.rule != nil && f.rule(r)
		f.mu.Unlock()
		if fail {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":"Unavailable","message":"injected fault","details":{}}`))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// testDB is a real DB service over loopback HTTP with a fault middleware.
type testDB struct {
	url    string
	faults *faults
	client *client.Client
}

func newTestDB(t testing.TB) *testDB {
	t.Helper()
	f := &faults{}
	srv := httptest.NewServer(f.wrap(dbservice.New(dbservice.Options{}).Handler()))
	t.Cleanup(srv.Close)
	return &testDB{url: srv.URL, faults: f, client: client.New(srv.URL, client.WithBackoff(time.Millisecond), client.WithRetries(1))}
}

// toolError is a tool-shaped failure (status ERROR); any other error from a tool is a
// fault outside it (the DB).
type toolError struct{ msg string }

func (e *toolError) Error() string { return e.msg }

type toolFunc func(ctx context.Context, db *client.Client, id string, args canonical.Object) (string, error)

// testEnv is Env for a registered trial with plain Go tools over the DB client.
type testEnv struct {
	id         string
	spec       *task.TrialSpec
	db         *client.Client
	tools      map[string]toolFunc
	agentTools []string
	userTools  []string
	workDir    string
	site       VerifierSite
	python     PythonSite

	mu        sync.Mutex
	records   []task.RecordedToolCall
	replayed  []string
	syncs     int
	pushes    int
	syncErr   error
	pushHook  func(ctx context.Context, n int)              // runs on the n-th PushToTools (1-based)
	beforeRun func(ctx context.Context, i int, tool string) // runs before each replayed action
}

func (e *testEnv) TrialID() string              { return e.id }
func (e *testEnv) Spec() *task.TrialSpec        { return e.spec }
func (e *testEnv) AgentTools() []string         { return e.agentTools }
func (e *testEnv) UserTools() []string          { return e.userTools }
func (e *testEnv) DB() *client.Client           { return e.db }
func (e *testEnv) WorkDir() string              { return e.workDir }
func (e *testEnv) VerifierSite() VerifierSite   { return e.site }
func (e *testEnv) PythonSite() PythonSite       { return e.python }
func (e *testEnv) Environment() EnvironmentExec { return nil }

// AgentToolSchemas advertises the task's agent tools as the runner would.
func (e *testEnv) AgentToolSchemas() []*runnerpb.ToolSchema {
	out := make([]*runnerpb.ToolSchema, 0, len(e.spec.Task.AgentTools))
	for _, ts := range e.spec.Task.AgentTools {
		out = append(out, &runnerpb.ToolSchema{Name: ts.Name, Description: ts.Description, ParametersJson: string(ts.Parameters), Category: string(ts.Category)})
	}
	return out
}
func (e *testEnv) PushToTools(ctx context.Context) error {
	e.mu.Lock()
	e.pushes++
	n, hook := e.pushes, e.pushHook
	e.mu.Unlock()
	if hook != nil {
		hook(ctx, n)
	}
	return nil
}

func (e *testEnv) SyncFromTools(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.syncs++
	return e.syncErr
}

func (e *testEnv) Records() []task.RecordedToolCall {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]task.RecordedToolCall(nil), e.records...)
}

func (e *testEnv) Replay(ctx context.Context, tool string, args json.RawMessage) (task.ToolCallStatus, string, error) {
	e.mu.Lock()
	i := len(e.replayed)
	e.replayed = append(e.replayed, tool)
	hook := e.beforeRun
	e.mu.Unlock()
	if hook != nil {
		hook(ctx, i, tool)
	}
	return e.run(ctx, tool, args)
}

func (e *testEnv) run(ctx context.Context, tool string, args json.RawMessage) (task.ToolCallStatus, string, error) {
	fn, ok := e.tools[tool]
	if !ok {
		return task.ToolCallToolNotFound, fmt.Sprintf("Tool '%s' not found in agent tools", tool), nil
	}
	a, err := parseArgs(args)
	if err != nil {
		return task.ToolCallInvalidArguments, err.Error(), nil
	}
	out, err := fn(ctx, e.db, e.id, a)
	var te *toolError
	switch {
	case errors.As(err, &te):
		return task.ToolCallError, te.msg, nil
	case err != nil:
		return "", "", err
	}
	return task.ToolCallSuccess, out, nil
}

// call executes a tool as the agent (or user) did during the trial and records it.
func (e *testEnv) call(t testing.TB, callID, executor, tool, args string) task.RecordedToolCall {
	t.Helper()
	status, out, err := e.run(context.Background(), tool, json.RawMessage(args))
	if err != nil {
		t.Fatalf("agent call %s(%s): %v", tool, args, err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	rec := task.RecordedToolCall{
		CallID: callID, Sequence: len(e.records), ToolName: tool, Arguments: json.RawMessage(args),
		Executor: executor, Status: status, Output: out, Timestamp: time.Unix(1700000000, 0).UTC(),
	}
	e.records = append(e.records, rec)
	return rec
}

// hashes returns the trial's stable and full hashes.
func hashes(t testing.TB, db *client.Client, id string) string {
	t.Helper()
	h, err := db.Hash(context.Background(), id)
	if err != nil {
		t.Fatalf("hash of %s: %v", id, err)
	}
	return h.StableHash + "/" + h.FullHash
}

// Reference digests of shared/spec/shop-domain.md.
const (
	shopInitialDigest = "fb5cce61f84a018b3860412ad354f6efc0e8c1887b869918f6f03de158cc0977"
	shopGoldenDigest  = "4c8b535f7c229f6c10058392e478c0ea0196a644ce9410f58375842be6681c2b"
)

const (
	goldenPlaceOrderArgs = `{"customer_id":"C-101","items":[{"product_id":"P-001","quantity":1,"unit_price":89.99},{"product_id":"P-002","quantity":2,"unit_price":34.5}]}`
	wrongQtyPlaceOrder   = `{"customer_id":"C-101","items":[{"product_id":"P-001","quantity":1,"unit_price":89.99},{"product_id":"P-002","quantity":3,"unit_price":34.5}]}`
)

// loadShopTask decodes testdata/shop_task.json (built from the shop_orders_02 fixture;
// its grading block mirrors the fixture's grading.yaml in wire form) and lets edit
// change it before it is validated again.
func loadShopTask(t testing.TB, edit func(td *task.TaskDescription)) *task.TaskDescription {
	t.Helper()
	data, err := os.ReadFile("testdata/shop_task.json")
	if err != nil {
		t.Fatal(err)
	}
	td, err := task.DecodeTaskDescription(data)
	if err != nil {
		t.Fatalf("decode shop task: %v", err)
	}
	if edit != nil {
		edit(td)
	}
	return td
}

var trialSeq struct {
	sync.Mutex
	n int
}

// newTrial registers td's initial state as a fresh trial in db and returns its Env.
func newTrial(t testing.TB, db *testDB, td *task.TaskDescription) *testEnv {
	t.Helper()
	trialSeq.Lock()
	trialSeq.n++
	id := fmt.Sprintf("shop_orders_02:%d", trialSeq.n)
	trialSeq.Unlock()
	init := td.InitialState.DBInit()
	if _, err := db.client.Init(context.Background(), id, init); err != nil {
		t.Fatalf("init %s: %v", id, err)
	}
	env := &testEnv{id: id, spec: &task.TrialSpec{TrialID: id, Task: td}, db: db.client, tools: shopTools()}
	for _, tool := range td.AgentTools {
		env.agentTools = append(env.agentTools, tool.Name)
	}
	for _, tool := range td.UserTools {
		env.userTools = append(env.userTools, tool.Name)
	}
	return env
}

// ---- transcripts ----

type turn = task.Message

func user(content string) turn      { return turn{Role: task.RoleUser, Content: content} }
func assistant(content string) turn { return turn{Role: task.RoleAssistant, Content: content} }
func toolResult(id, content string) turn {
	return turn{Role: task.RoleTool, Content: content, ToolCallID: id}
}

// calls is an assistant turn carrying tool calls (id, name, arguments triples).
func calls(cs ...[3]string) turn {
	m := turn{Role: task.RoleAssistant}
	for _, c := range cs {
		m.ToolCalls = append(m.ToolCalls, task.ToolCall{ID: c[0], Type: "function", Function: task.FunctionCall{Name: c[1], Arguments: c[2]}})
	}
	return m
}

func wire(t testing.TB, msgs ...turn) []byte {
	t.Helper()
	b, err := task.EncodeTranscriptWire(msgs)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSpace(b)
}

// agentRun drives env through a shop conversation the way the host would: every tool
// call is executed (and recorded) and its result appended. place is place_order's
// arguments; pay, when non-empty, is the order confirm_payment is called with; final is
// the agent's closing message.
func agentRun(t testing.TB, env *testEnv, place, pay, final string) []byte {
	t.Helper()
	msgs := []turn{
		{Role: task.RoleSystem, Content: env.spec.Task.SystemPrompt},
		user("Hi! I'm customer C-101. I'd like 1 x Wireless Headphones and 2 x USB-C Hub 7-Port."),
	}
	step := func(id, tool, args string) {
		msgs = append(msgs, calls([3]string{id, tool, args}))
		rec := env.call(t, id, task.ExecutorAgent, tool, args)
		msgs = append(msgs, toolResult(id, rec.Output))
	}
	step("call_1", "list_products", `{}`)
	step("call_2", "get_customer", `{"customer_id":"C-101"}`)
	step("call_3", "place_order", place)
	if pay != "" {
		step("call_4", "confirm_payment", fmt.Sprintf(`{"order_id":%q}`, pay))
	}
	msgs = append(msgs, assistant(final))
	return wire(t, msgs...)
}

const goldenFinal = "Order ID: O-001. Order total: $158.99. Status: paid. Remaining balance: $141.01."

func mustContainAll(t testing.TB, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%q does not contain %q", s, sub)
		}
	}
}
