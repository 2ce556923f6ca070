package grading

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/dbservice/client"
	"tolokaforge.io/operator/runner/grading/gradefmt"
)

func grade(t testing.TB, env *testEnv, transcript []byte, opts ...Option) (*runnerpb.Grade, error) {
	t.Helper()
	return New(opts...).Grade(context.Background(), env, Request{Transcript: transcript, TerminationReason: "agent_done"})
}

func mustGrade(t testing.TB, env *testEnv, transcript []byte) *runnerpb.Grade {
	t.Helper()
	g, err := grade(t, env, transcript)
	if err != nil {
		t.Fatalf("Grade: %v", err)
	}
	return g
}

func TestShopGoldenTranscriptScoresOne(t *testing.T) {
	db := newTestDB(t)
	env := newTrial(t, db, loadShopTask(t, nil))
	if h := hashes(t, db.client, env.id); !strings.HasPrefix(h, shopInitialDigest+"/") {
		t.Fatalf("initial state hashes to %s, want %s", h, shopInitialDigest)
	}
	transcript := agentRun(t, env, goldenPlaceOrderArgs, "O-001", goldenFinal)
	before := hashes(t, db.client, env.id)
	if !strings.HasPrefix(before, shopGoldenDigest+"/") {
		t.Fatalf("the agent's golden run hashes to %s, want the spec's %s", before, shopGoldenDigest)
	}

	g := mustGrade(t, env, transcript)
	want := &runnerpb.Grade{
		BinaryPass: true,
		Score:      1,
		Components: &runnerpb.GradeComponents{StateChecks: 1, TranscriptRules: 1, LlmJudge: -1, CustomChecks: -1},
		Reasons:    "State: hash match | JSONPath: all 7 checks passed | Transcript: all 9 rules passed",
	}
	if !proto.Equal(g, want) {
		t.Fatalf("grade:\n got %v\nwant %v", g, want)
	}
	if g.Components.TraceChecks != nil {
		t.Errorf("trace_checks = %v, want unset", *g.Components.TraceChecks)
	}
	if after := hashes(t, db.client, env.id); after != before {
		t.Errorf("grading changed the trial's state: %s -> %s", before, after)
	}
	if got, want := env.replayed, []string{"place_order", "confirm_payment"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("replayed %v, want %v", got, want)
	}
	if len(env.Records()) != 4 {
		t.Errorf("golden replay was recorded: %d records, want the agent's 4", len(env.Records()))
	}
	// The snapshot is gone after grading.
	if _, err := db.client.Restore(context.Background(), env.id, snapshotName); !errors.Is(err, client.ErrSnapshotNotFound) {
		t.Errorf("restore of %s after grading: %v, want ErrSnapshotNotFound", snapshotName, err)
	}
}

func TestShopGradingTwiceGivesTheSameGrade(t *testing.T) {
	db := newTestDB(t)
	for _, tc := range []struct {
		name  string
		place string
		final string
	}{
		{"golden", goldenPlaceOrderArgs, goldenFinal},
		{"wrong quantity", wrongQtyPlaceOrder, "Order O-001 is paid. Remaining balance: $106.51."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newTrial(t, db, loadShopTask(t, nil))
			transcript := agentRun(t, env, tc.place, "O-001", tc.final)
			before := hashes(t, db.client, env.id)
			first := mustGrade(t, env, transcript)
			second := mustGrade(t, env, transcript)
			if !proto.Equal(first, second) {
				t.Fatalf("second grade differs:\n first %v\nsecond %v", first, second)
			}
			if after := hashes(t, db.client, env.id); after != before {
				t.Errorf("state changed: %s -> %s", before, after)
			}
		})
	}
}

func TestShopWrongQuantityFailsWithDiff(t *testing.T) {
	db := newTestDB(t)
	env := newTrial(t, db, loadShopTask(t, nil))
	transcript := agentRun(t, env, wrongQtyPlaceOrder, "O-001", "Order O-001 is paid. Remaining balance: $106.51.")
	g := mustGrade(t, env, transcript)

	// JSONPath: total, balance and P-002's stock fail: 4 of 7. State =
	// round6(4/7*0.4 + 0*0.6); transcript: "141.01" never said: 8 of 9.
	state := gradefmt.Round6(4.0 / 7.0 * 0.4)
	if g.Components.StateChecks != state || state != 0.228571 {
		t.Errorf("state_checks = %v, want %v", g.Components.StateChecks, state)
	}
	if g.Components.TranscriptRules != 8.0/9.0 {
		t.Errorf("transcript_rules = %v, want 8/9", g.Components.TranscriptRules)
	}
	if want := gradefmt.Round6(0.7*state + 0.3*8.0/9.0); g.Score != want || g.BinaryPass {
		t.Errorf("score = %v pass = %v, want %v false", g.Score, g.BinaryPass, want)
	}
	wantState := "State: hash mismatch (customers: 0 added, 0 removed, 1 modified; orders: 0 added, 0 removed, 1 modified; products: 0 added, 0 removed, 1 modified)"
	wantJP := "JSONPath: 4 of 7 checks passed; failed: Order total: 1x$89.99 + 2x$34.50 = $158.99 ($['db']['orders'][0]['total'] is 193.49, expected equals 158.99); " +
		"Customer balance after payment: $300.00 - $158.99 = $141.01 ($['db']['customers'][0]['balance'] is 106.51, expected equals 141.01); " +
		"USB-C Hub stock reduced by 2: 15 -> 13 ($['db']['products'][1]['stock'] is 12, expected equals 13)"
	wantTr := `Transcript: 1 of 9 rules failed: communicate_info[2]: "141.01" was never communicated in an assistant message`
	if want := wantState + " | " + wantJP + " | " + wantTr; g.Reasons != want {
		t.Errorf("reasons:\n got %s\nwant %s", g.Reasons, want)
	}

	var diff struct {
		Tables map[string]struct {
			Added    []json.RawMessage `json:"added"`
			Removed  []json.RawMessage `json:"removed"`
			Modified []struct {
				Key    json.RawMessage `json:"key"`
				Fields []struct {
					Field    string          `json:"field"`
					Expected json.RawMessage `json:"expected"`
					Actual   json.RawMessage `json:"actual"`
				} `json:"fields"`
			} `json:"modified"`
		} `json:"tables"`
		Added, Removed, Modified int
		DiffLines                []string `json:"diff_lines"`
		Summary                  string   `json:"summary"`
	}
	if err := json.Unmarshal([]byte(g.StateDiffJson), &diff); err != nil {
		t.Fatalf("state_diff_json: %v\n%s", err, g.StateDiffJson)
	}
	if diff.Added != 0 || diff.Removed != 0 || diff.Modified != 3 || "State: "+diff.Summary != wantState {
		t.Errorf("diff counts/summary: %+v", diff)
	}
	products := diff.Tables["products"]
	if len(products.Modified) != 1 || string(products.Modified[0].Key) != `"P-002"` ||
		len(products.Modified[0].Fields) != 1 || products.Modified[0].Fields[0].Field != "stock" ||
		string(products.Modified[0].Fields[0].Expected) != "13" || string(products.Modified[0].Fields[0].Actual) != "12" {
		t.Errorf("products diff: %+v", products)
	}
	orders := diff.Tables["orders"]
	if len(orders.Modified) != 1 || string(orders.Modified[0].Key) != `"O-001"` {
		t.Fatalf("orders diff: %+v", orders)
	}
	var fields []string
	for _, f := range orders.Modified[0].Fields {
		fields = append(fields, f.Field+":"+string(f.Expected)+"->"+string(f.Actual))
	}
	if got := strings.Join(fields, " "); !strings.HasPrefix(got, "items:") || !strings.HasSuffix(got, "total:158.99->193.49") {
		t.Errorf("orders fields: %s", got)
	}
	lines := strings.Join(diff.DiffLines, "\n")
	mustContainAll(t, lines, "--- expected (golden replay)", "+++ actual (trial)",
		`-      "stock": 13`, `+      "stock": 12`, `-      "total": 158.99`, `+      "total": 193.49`, `-      "balance": 141.01`)
}

func TestShopJSONPathPartialCredit(t *testing.T) {
	db := newTestDB(t)
	// The agent places the right order and never pays: status and balance fail.
	env := newTrial(t, db, loadShopTask(t, nil))
	transcript := agentRun(t, env, goldenPlaceOrderArgs, "", "Order O-001 is placed; it is pending payment.")
	g := mustGrade(t, env, transcript)
	jp := 5.0 / 7.0
	if want := gradefmt.Round6(jp*0.4 + 0*0.6); g.Components.StateChecks != want {
		t.Errorf("state_checks = %v, want %v (JSONPath 5/7 at 0.4, hash 0 at 0.6)", g.Components.StateChecks, want)
	}
	mustContainAll(t, g.Reasons, "JSONPath: 5 of 7 checks passed; failed: Order status is 'paid' after confirm_payment ($['db']['orders'][0]['status'] is \"pending\", expected equals \"paid\")",
		"State: hash mismatch (customers: 0 added, 0 removed, 1 modified; orders: 0 added, 0 removed, 1 modified)")

	// JSONPath alone (hash disabled): the score is the JSONPath fraction itself, and
	// the unread hash_weight files its own line.
	td := loadShopTask(t, func(td *task.TaskDescription) {
		td.Grading.StateChecks.HashEnabled = false
		td.Grading.TranscriptRules = nil
		td.Grading.Weights = map[string]float64{"state_checks": 1}
	})
	env2 := newTrial(t, db, td)
	agentRun(t, env2, goldenPlaceOrderArgs, "", "placed")
	g2 := mustGrade(t, env2, nil)
	if g2.Components.StateChecks != jp || g2.Score != gradefmt.Round6(jp) || g2.BinaryPass {
		t.Errorf("JSONPath only: %v", g2)
	}
	if want := "JSONPath: 5 of 7 checks passed"; !strings.HasPrefix(g2.Reasons, want) {
		t.Errorf("reasons %q", g2.Reasons)
	}
	mustContainAll(t, g2.Reasons, " | "+hashWeightNotConsulted+" | state_checks.golden_actions: skipped: hash grading not enabled")
	if len(env2.replayed) != 0 {
		t.Errorf("hash disabled but replayed %v", env2.replayed)
	}
	if math.IsNaN(g2.Score) {
		t.Fatal("NaN score")
	}
}
