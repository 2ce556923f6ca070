package grading

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/dbservice/client"
)

func TestReplayRestoresWhenTheCallerCancelsMidReplay(t *testing.T) {
	db := newTestDB(t)
	env := newTrial(t, db, loadShopTask(t, nil))
	transcript := agentRun(t, env, goldenPlaceOrderArgs, "O-001", goldenFinal)
	before := hashes(t, db.client, env.id)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env.beforeRun = func(_ context.Context, i int, _ string) {
		if i == 1 {
			cancel()
		}
	}
	_, err := New().Grade(ctx, env, Request{Transcript: transcript})
	if err == nil || !strings.HasPrefix(err.Error(), "Hash grading failed: GoldenReplayError: action 1 (confirm_payment): ") ||
		!strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("error = %v", err)
	}
	if after := hashes(t, db.client, env.id); after != before {
		t.Errorf("state not restored after cancellation: %s -> %s", before, after)
	}
	if env.pushes != 2 {
		t.Errorf("PushToTools called %d times, want 2 (after reset, after restore)", env.pushes)
	}
}

func TestReplayReportsARestoreThatFails(t *testing.T) {
	db := newTestDB(t)
	env := newTrial(t, db, loadShopTask(t, nil))
	transcript := agentRun(t, env, goldenPlaceOrderArgs, "O-001", goldenFinal)
	before := hashes(t, db.client, env.id)
	patchRule := afterReset(isPatch, 3)
	db.faults.set(func(r *http.Request) bool {
		return strings.HasSuffix(r.URL.Path, "/restore") || patchRule(r)
	})
	_, err := grade(t, env, transcript)
	db.faults.set(nil)
	want := `Hash grading failed: GoldenReplayError: action 1 (confirm_payment): patch table "customers" of trial "` + env.id +
		`": dbservice: 503 Unavailable: injected fault; then RestoreError: restoring pre_golden (the trial's database may hold the golden state): restore snapshot "pre_golden" of trial "` +
		env.id + `": dbservice: 503 Unavailable: injected fault`
	if err == nil || err.Error() != want {
		t.Fatalf("error:\n got %v\nwant %s", err, want)
	}
	// The snapshot survived, so the agent's state is recoverable by hand.
	if _, err := db.client.Restore(context.Background(), env.id, snapshotName); err != nil {
		t.Fatalf("manual restore: %v", err)
	}
	if after := hashes(t, db.client, env.id); after != before {
		t.Errorf("manual restore gave %s, want %s", after, before)
	}
}

func TestReplayReplacesAStaleSnapshot(t *testing.T) {
	db := newTestDB(t)
	env := newTrial(t, db, loadShopTask(t, nil))
	// A pre_golden left by an earlier, interrupted grade, holding the initial state.
	if _, err := db.client.Snapshot(context.Background(), env.id, snapshotName); err != nil {
		t.Fatal(err)
	}
	transcript := agentRun(t, env, wrongQtyPlaceOrder, "O-001", "paid, balance 106.51")
	before := hashes(t, db.client, env.id)
	g := mustGrade(t, env, transcript)
	if g.Components.StateChecks == 1 {
		t.Errorf("wrong quantity scored a full state: %v", g)
	}
	if after := hashes(t, db.client, env.id); after != before {
		t.Errorf("grading restored a stale snapshot: %s -> %s", before, after)
	}
}

func hashOnly(edit func(sc *task.StateChecks)) func(td *task.TaskDescription) {
	return func(td *task.TaskDescription) {
		td.Grading.TranscriptRules = nil
		td.Grading.Weights = map[string]float64{"state_checks": 1}
		td.Grading.PassThreshold = ptrTo(1.0)
		sc := td.Grading.StateChecks
		sc.JSONPaths, sc.HashWeight = nil, nil
		edit(sc)
	}
}

func TestHashExpectedStateVariants(t *testing.T) {
	db := newTestDB(t)
	type tc struct {
		name     string
		edit     func(sc *task.StateChecks)
		agent    bool // the agent ran the golden path (else it only chatted)
		want     *runnerpb.Grade
		replayed int
		diff     bool
	}
	for _, c := range []tc{
		{
			name:  "empty golden path, untouched state: the initial state is expected",
			edit:  func(sc *task.StateChecks) { sc.GoldenActions = nil },
			agent: false, replayed: 0,
			want: &runnerpb.Grade{BinaryPass: true, Score: 1, Reasons: "State: hash match"},
		},
		{
			name:  "empty golden path, the agent changed state: a refusal task failed",
			edit:  func(sc *task.StateChecks) { sc.GoldenActions = nil },
			agent: true, replayed: 0, diff: true,
			want: &runnerpb.Grade{BinaryPass: false, Score: 0, Reasons: "State: hash mismatch (customers: 0 added, 0 removed, 1 modified; orders: 1 added, 0 removed, 0 modified; products: 0 added, 0 removed, 2 modified)"},
		},
		{
			name:  "expected_hash alone is the expected digest, nothing replayed",
			edit:  func(sc *task.StateChecks) { sc.GoldenActions, sc.ExpectedHash = nil, ptrTo(shopGoldenDigest) },
			agent: true, replayed: 0,
			want: &runnerpb.Grade{BinaryPass: true, Score: 1, Reasons: "State: hash match"},
		},
		{
			name:  "expected_hash alone, mismatch: no state to diff against",
			edit:  func(sc *task.StateChecks) { sc.GoldenActions, sc.ExpectedHash = nil, ptrTo(shopGoldenDigest) },
			agent: false, replayed: 0,
			want: &runnerpb.Grade{BinaryPass: false, Score: 0, Reasons: "State: hash mismatch"},
		},
		{
			name:  "expected_hash agreeing with the replay",
			edit:  func(sc *task.StateChecks) { sc.ExpectedHash = ptrTo(shopGoldenDigest) },
			agent: true, replayed: 2,
			want: &runnerpb.Grade{BinaryPass: true, Score: 1, Reasons: "State: hash match"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := newTrial(t, db, loadShopTask(t, hashOnly(c.edit)))
			var transcript []byte
			if c.agent {
				transcript = agentRun(t, env, goldenPlaceOrderArgs, "O-001", goldenFinal)
			} else {
				transcript = wire(t, user("please delete my account"), assistant("I cannot do that."))
			}
			before := hashes(t, db.client, env.id)
			g := mustGrade(t, env, transcript)
			if g.BinaryPass != c.want.BinaryPass || g.Score != c.want.Score || g.Reasons != c.want.Reasons {
				t.Errorf("grade = %v, want %v", g, c.want)
			}
			if g.Components.StateChecks != c.want.Score || g.Components.TranscriptRules != -1 {
				t.Errorf("components = %v", g.Components)
			}
			if (g.StateDiffJson != "") != c.diff {
				t.Errorf("state_diff_json = %q, want present=%v", g.StateDiffJson, c.diff)
			}
			if len(env.replayed) != c.replayed {
				t.Errorf("replayed %v, want %d actions", env.replayed, c.replayed)
			}
			if after := hashes(t, db.client, env.id); after != before {
				t.Errorf("state changed: %s -> %s", before, after)
			}
		})
	}
}

func TestGoldenActionsResolveByPrefix(t *testing.T) {
	db := newTestDB(t)
	// The toolset registers prefixed names; golden actions stay unprefixed.
	td := loadShopTask(t, func(td *task.TaskDescription) {
		for i := range td.AgentTools {
			td.AgentTools[i].Name = "shop_" + td.AgentTools[i].Name
		}
	})
	env := newTrial(t, db, td)
	for name, fn := range shopTools() {
		env.tools["shop_"+name] = fn
	}
	transcript := func() []byte {
		// The agent calls the prefixed tools.
		msgs := []turn{user("buy")}
		for i, c := range [][2]string{{"shop_list_products", "{}"}, {"shop_get_customer", `{"customer_id":"C-101"}`},
			{"shop_place_order", goldenPlaceOrderArgs}, {"shop_confirm_payment", `{"order_id":"O-001"}`}} {
			id := "c" + string(rune('0'+i))
			msgs = append(msgs, calls([3]string{id, c[0], c[1]}))
			rec := env.call(t, id, task.ExecutorAgent, c[0], c[1])
			msgs = append(msgs, toolResult(id, rec.Output))
		}
		return wire(t, append(msgs, assistant(goldenFinal))...)
	}()
	g := mustGrade(t, env, transcript)
	if g.Score != 1 || !g.BinaryPass {
		t.Fatalf("grade = %v", g)
	}
	if got := strings.Join(env.replayed, ","); got != "shop_place_order,shop_confirm_payment" {
		t.Errorf("replayed %s", got)
	}
}

func TestResolveTool(t *testing.T) {
	registered := []string{"place_order", "shop_confirm_payment", "a_pay", "b_pay", "_x", "pay_extra"}
	for _, c := range []struct {
		name, want string
		matches    []string
	}{
		{"place_order", "place_order", nil},
		{"confirm_payment", "shop_confirm_payment", nil},
		{"pay", "", []string{"a_pay", "b_pay"}},
		{"x", "", nil}, // "_x" has no prefix
		{"extra", "pay_extra", nil},
		{"tra", "", nil}, // a suffix match needs the whole name after "_"
		{"", "", nil},
	} {
		got, matches := resolveTool(c.name, registered)
		if got != c.want || strings.Join(matches, ",") != strings.Join(c.matches, ",") {
			t.Errorf("resolveTool(%q) = %q %v, want %q %v", c.name, got, matches, c.want, c.matches)
		}
	}
	if _, err := resolveGoldenActions([]task.GoldenAction{{ToolName: "confirm_payment", Arguments: json.RawMessage(`{}`)}}, registered); err != nil {
		t.Errorf("suffix resolution: %v", err)
	}
	_, err := resolveGoldenActions(nil, registered)
	if err != nil {
		t.Errorf("no actions: %v", err)
	}
	var ge *Error
	_, err = resolveGoldenActions([]task.GoldenAction{{ToolName: "nope"}}, nil)
	if !errors.As(err, &ge) || err.Error() != `Hash grading failed: UnresolvableGoldenAction: golden actions naming no tool the replay can call: action 0 (nope) matches no registered agent tool (neither "nope" nor *_nope); registered agent tools: []` {
		t.Errorf("err = %v", err)
	}
}

func TestReplayBoundAndOptions(t *testing.T) {
	db := newTestDB(t)
	env := newTrial(t, db, loadShopTask(t, nil))
	transcript := agentRun(t, env, wrongQtyPlaceOrder, "O-001", "paid; balance 106.51")
	before := hashes(t, db.client, env.id)
	// The second golden action hangs until the replay bound expires.
	env.beforeRun = func(ctx context.Context, i int, _ string) {
		if i == 1 {
			<-ctx.Done()
		}
	}
	var logs []string
	logger := funcr.New(func(prefix, args string) { logs = append(logs, args) }, funcr.Options{Verbosity: 1})
	_, err := grade(t, env, transcript, withReplayBound(50*time.Millisecond), WithLogger(logger))
	if err == nil || !strings.HasPrefix(err.Error(), "Hash grading failed: GoldenReplayError: action 1 (confirm_payment): ") ||
		!strings.Contains(err.Error(), "context deadline exceeded") {
		t.Fatalf("error = %v", err)
	}
	if after := hashes(t, db.client, env.id); after != before {
		t.Errorf("state not restored after the replay bound: %s -> %s", before, after)
	}
	if joined := strings.Join(logs, "\n"); !strings.Contains(joined, `"msg"="grading failed" "trial"="`+env.id+`"`) {
		t.Errorf("logs = %s", joined)
	}

	env.beforeRun = nil
	g, err := grade(t, env, transcript, withMaxDiffLines(4))
	if err != nil {
		t.Fatal(err)
	}
	var diff struct {
		DiffLines []string `json:"diff_lines"`
	}
	if err := json.Unmarshal([]byte(g.StateDiffJson), &diff); err != nil {
		t.Fatal(err)
	}
	if len(diff.DiffLines) != 5 || !strings.HasSuffix(diff.DiffLines[4], "more diff lines not shown") {
		t.Errorf("diff_lines = %q", diff.DiffLines)
	}
}

func TestRestoreMismatchIsCaught(t *testing.T) {
	db := newTestDB(t)
	env := newTrial(t, db, loadShopTask(t, nil))
	transcript := agentRun(t, env, wrongQtyPlaceOrder, "O-001", "paid")
	before := hashes(t, db.client, env.id)
	// A tool server that writes its own (stale) tables back while being loaded after
	// the restore: the state grading reads is no longer the agent's.
	env.pushHook = func(ctx context.Context, n int) {
		if n == 2 {
			if err := patch(ctx, db.client, env.id, "orders", client.Delete(json.RawMessage(`{}`))); err != nil {
				t.Error(err)
			}
		}
	}
	_, err := grade(t, env, transcript)
	after := hashes(t, db.client, env.id)
	want := "Hash grading failed: RestoreMismatch: after restoring pre_golden the trial's stable state hashes to " +
		strings.SplitN(after, "/", 2)[0] + ", not the " + strings.SplitN(before, "/", 2)[0] + " it held before golden replay"
	if err == nil || err.Error() != want {
		t.Fatalf("error:\n got %v\nwant %s", err, want)
	}
}
