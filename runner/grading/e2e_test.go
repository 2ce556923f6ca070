package grading_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/dbservice"
	"tolokaforge.io/operator/examples/shop"
	"tolokaforge.io/operator/runner"
	"tolokaforge.io/operator/runner/client"
	"tolokaforge.io/operator/runner/grading"
	"tolokaforge.io/operator/test/mcpstandin"
)

// The shop task end to end over gRPC: a real runner (with this package's Grader, the
// shop MCP server as a subprocess) and a real DB service behind a fault switch, both on
// loopback.

var shopBin struct {
	once sync.Once
	path string
	err  error
}

func buildShopBin(t *testing.T) string {
	t.Helper()
	shopBin.once.Do(func() {
		dir, err := filepathTemp()
		if err != nil {
			shopBin.err = err
			return
		}
		if shopBin.path, shopBin.err = mcpstandin.Build(dir); shopBin.err != nil {
			_ = os.RemoveAll(dir)
		}
	})
	if shopBin.err != nil {
		t.Fatal(shopBin.err)
	}
	return shopBin.path
}

// dbSwitch fails DB requests while its rule says so (503), in front of the real service.
type dbSwitch struct {
	mu   sync.Mutex
	rule func(r *http.Request) bool
}

func (s *dbSwitch) set(rule func(r *http.Request) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rule = rule
}

func (s *dbSwitch) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		fail := s.rule != nil && s.rule(r)
		s.mu.Unlock()
		if fail {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":"Unavailable","message":"injected fault","details":{}}`))
			return
		}
		next.ServeHTTP(w, r)
	})
}

type e2e struct {
	c      *client.Client
	faults *dbSwitch
}

func startE2E(t *testing.T) *e2e {
	t.Helper()
	sw := &dbSwitch{}
	db := httptest.NewServer(sw.wrap(dbservice.New(dbservice.Options{}).Handler()))
	t.Cleanup(db.Close)
	srv, err := runner.New(runner.Config{
		DBServiceURL: db.URL, SelfExecutable: buildShopBin(t), WorkDir: t.TempDir(),
		Grader: grading.New(), DrainTimeout: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ctx, ln)
	}()
	c, err := client.Dial(context.Background(), ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		cancel()
		<-done
	})
	wctx, wcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer wcancel()
	if err := c.WaitReady(wctx); err != nil {
		t.Fatal(err)
	}
	return &e2e{c: c, faults: sw}
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func (e *e2e) register(t *testing.T, id string) {
	t.Helper()
	spec := fmt.Sprintf(`{"trial_id":%q,"run_id":"r","attempt_id":"a","task":%s,"agent":{"provider":"oracle"}}`, id, shop.TaskJSON())
	resp, err := e.c.RegisterTrial(ctxFor(t), &runnerpb.RegisterTrialRequest{TrialId: id, TrialSpecJson: spec, EngineProtocolVersion: task.EngineProtocolVersion})
	if err != nil || !resp.GetSuccess() {
		t.Fatalf("register %s: %v %s", id, err, resp.GetError())
	}
	t.Cleanup(func() { _, _ = e.c.CleanupTrial(context.Background(), &runnerpb.CleanupTrialRequest{TrialId: id}) })
}

func (e *e2e) state(t *testing.T, id string) *runnerpb.GetStateResponse {
	t.Helper()
	st, err := e.c.GetState(ctxFor(t), &runnerpb.GetStateRequest{TrialId: id, IncludeUnstable: true})
	if err != nil || !st.GetSuccess() {
		t.Fatalf("get state: %v %s", err, st.GetError())
	}
	return st
}

// play drives the agent's side: each call through ExecuteTool, the transcript in the
// wire format the host sends.
func (e *e2e) play(t *testing.T, id string, place, final string) string {
	t.Helper()
	msgs := []task.Message{{Role: task.RoleSystem, Content: "You are a shop agent."}, {Role: task.RoleUser, Content: "Buy 1 headphones and 2 hubs for C-101."}}
	for i, c := range [][2]string{{"list_products", `{}`}, {"get_customer", `{"customer_id":"C-101"}`}, {"place_order", place}, {"confirm_payment", `{"order_id":"O-001"}`}} {
		callID := fmt.Sprintf("call_%d", i)
		resp, err := e.c.ExecuteTool(ctxFor(t), &runnerpb.ExecuteToolRequest{TrialId: id, ToolName: c[0], ArgumentsJson: c[1], CallId: callID, Executor: "agent"})
		if err != nil || resp.GetStatus() != runnerpb.ExecutionStatus_EXECUTION_STATUS_SUCCESS {
			t.Fatalf("%s: %v %s %s", c[0], err, resp.GetStatus(), resp.GetErrorMessage())
		}
		msgs = append(msgs,
			task.Message{Role: task.RoleAssistant, ToolCalls: []task.ToolCall{{ID: callID, Type: "function", Function: task.FunctionCall{Name: c[0], Arguments: c[1]}}}},
			task.Message{Role: task.RoleTool, Content: resp.GetOutput(), ToolCallID: callID})
	}
	msgs = append(msgs, task.Message{Role: task.RoleAssistant, Content: final})
	b, err := task.EncodeTranscriptWire(msgs)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func (e *e2e) grade(t *testing.T, id, transcript string) *runnerpb.GradeTrialResponse {
	t.Helper()
	resp, err := e.c.GradeTrial(ctxFor(t), &runnerpb.GradeTrialRequest{TrialId: id, LlmMessagesJson: transcript, TerminationReason: "agent_done"})
	if err != nil {
		t.Fatalf("GradeTrial: %v", err)
	}
	return resp
}

const (
	e2eGoldenPlace = `{"customer_id":"C-101","items":[{"product_id":"P-001","quantity":1,"unit_price":89.99},{"product_id":"P-002","quantity":2,"unit_price":34.5}]}`
	e2eWrongPlace  = `{"customer_id":"C-101","items":[{"product_id":"P-001","quantity":1,"unit_price":89.99},{"product_id":"P-002","quantity":3,"unit_price":34.5}]}`
	e2eGoldenFinal = "Order O-001 is paid. Total $158.99, remaining balance $141.01."
	e2eGoldenHash  = "4c8b535f7c229f6c10058392e478c0ea0196a644ce9410f58375842be6681c2b"
)

func TestE2EShopGoldenScoresOneAndRegradesTheSame(t *testing.T) {
	e := startE2E(t)
	e.register(t, "shop:golden")
	transcript := e.play(t, "shop:golden", e2eGoldenPlace, e2eGoldenFinal)
	before := e.state(t, "shop:golden")
	if before.GetStableHash() != e2eGoldenHash {
		t.Fatalf("agent state %s, want the golden digest", before.GetStableHash())
	}
	first := e.grade(t, "shop:golden", transcript)
	if !first.GetSuccess() {
		t.Fatalf("grade: %s", first.GetError())
	}
	g := first.GetGrade()
	if g.GetScore() != 1 || !g.GetBinaryPass() || g.GetReasons() != "State: hash match | JSONPath: all 7 checks passed | Transcript: all 9 rules passed" ||
		g.GetComponents().GetLlmJudge() != -1 || g.GetComponents().GetCustomChecks() != -1 || g.GetComponents().TraceChecks != nil {
		t.Fatalf("grade = %v", g)
	}
	second := e.grade(t, "shop:golden", transcript)
	if !second.GetSuccess() || !proto.Equal(first.GetGrade(), second.GetGrade()) {
		t.Fatalf("second grade differs: %v", second)
	}
	after := e.state(t, "shop:golden")
	if after.GetStableHash() != before.GetStableHash() || after.GetFullHash() != before.GetFullHash() {
		t.Errorf("grading changed the trial's state")
	}
}

func TestE2EShopWrongQuantityFailsWithDiff(t *testing.T) {
	e := startE2E(t)
	e.register(t, "shop:wrong")
	transcript := e.play(t, "shop:wrong", e2eWrongPlace, "Order O-001 is paid; remaining balance $106.51.")
	resp := e.grade(t, "shop:wrong", transcript)
	if !resp.GetSuccess() {
		t.Fatal(resp.GetError())
	}
	g := resp.GetGrade()
	if g.GetBinaryPass() || g.GetComponents().GetStateChecks() != 0.228571 || g.GetComponents().GetTranscriptRules() != 8.0/9 {
		t.Errorf("grade = %v", g)
	}
	if !strings.HasPrefix(g.GetReasons(), "State: hash mismatch (customers: 0 added, 0 removed, 1 modified; orders: 0 added, 0 removed, 1 modified; products: 0 added, 0 removed, 1 modified) | JSONPath: 4 of 7 checks passed") {
		t.Errorf("reasons = %s", g.GetReasons())
	}
	var diff struct {
		Tables map[string]json.RawMessage `json:"tables"`
	}
	if err := json.Unmarshal([]byte(g.GetStateDiffJson()), &diff); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"products", "orders"} {
		if _, ok := diff.Tables[table]; !ok {
			t.Errorf("the diff does not name %s: %s", table, g.GetStateDiffJson())
		}
	}
}

func TestE2EShopJSONPathPartialCredit(t *testing.T) {
	e := startE2E(t)
	e.register(t, "shop:partial")
	// The right items, but four hubs: total, balance and P-002's stock are off.
	transcript := e.play(t, "shop:partial", strings.Replace(e2eGoldenPlace, `"quantity":2`, `"quantity":4`, 1), e2eGoldenFinal)
	g := e.grade(t, "shop:partial", transcript).GetGrade()
	if want := "JSONPath: 4 of 7 checks passed"; !strings.Contains(g.GetReasons(), want) || g.GetComponents().GetStateChecks() != 0.228571 {
		t.Errorf("grade = %v", g)
	}
}

func TestE2EDBFaultMidReplayLeavesTheTrialRestored(t *testing.T) {
	e := startE2E(t)
	e.register(t, "shop:fault")
	transcript := e.play(t, "shop:fault", e2eWrongPlace, "paid")
	before := e.state(t, "shop:fault")
	// Once golden replay has reset the trial, every write fails until the restore.
	reset := false
	e.faults.set(func(r *http.Request) bool {
		switch {
		case strings.HasSuffix(r.URL.Path, "/reset"):
			reset = true
		case strings.HasSuffix(r.URL.Path, "/restore"):
			reset = false
		case reset && r.Method == http.MethodPatch:
			return true
		}
		return false
	})
	resp := e.grade(t, "shop:fault", transcript)
	e.faults.set(nil)
	if resp.GetSuccess() || resp.GetGrade() != nil || !strings.HasPrefix(resp.GetError(), "Hash grading failed: ") || !strings.Contains(resp.GetError(), "injected fault") {
		t.Fatalf("response = %v", resp)
	}
	after := e.state(t, "shop:fault")
	if after.GetStableHash() != before.GetStableHash() || after.GetFullHash() != before.GetFullHash() {
		t.Fatalf("state not restored: %s -> %s", before.GetStableHash(), after.GetStableHash())
	}
	t.Logf("fault surfaced as: %s", resp.GetError())
	// It grades normally once the DB recovers.
	if r := e.grade(t, "shop:fault", transcript); !r.GetSuccess() || r.GetGrade().GetComponents().GetStateChecks() != 0.228571 {
		t.Errorf("regrade after recovery: %v", r)
	}
	// The tool server holds the agent's state again, not the initial or golden one:
	// the balance is what the agent's wrong order left.
	out, err := e.c.ExecuteTool(ctxFor(t), &runnerpb.ExecuteToolRequest{TrialId: "shop:fault", ToolName: "get_customer", ArgumentsJson: `{"customer_id":"C-101"}`, CallId: "after", Executor: "agent"})
	if err != nil || !strings.Contains(out.GetOutput(), "106.51") {
		t.Fatalf("get_customer after the fault: %v %v", err, out)
	}
}

func filepathTemp() (string, error) { return os.MkdirTemp("", "grading-shopbin-") }

func TestMain(m *testing.M) {
	code := m.Run()
	if shopBin.path != "" {
		_ = os.RemoveAll(filepath.Dir(shopBin.path))
	}
	os.Exit(code)
}
