package grading

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
)

// customOnly grades the shop task on custom_checks alone; block is the custom_checks
// block as the pack writes it (JSON), decoded strictly.
func customOnly(t testing.TB, block string) func(td *task.TaskDescription) {
	return func(td *task.TaskDescription) {
		cfg, err := task.DecodeGradingConfig([]byte(`{"weights":{"custom_checks":1},"custom_checks":` + block + `}`))
		if err != nil {
			t.Fatalf("decode custom block: %v", err)
		}
		td.Grading = cfg
		td.Metadata = map[string]json.RawMessage{"difficulty": json.RawMessage(`"easy"`), "turns": json.RawMessage(`14`)}
	}
}

func TestCustomChecksVerdicts(t *testing.T) {
	db := newTestDB(t)
	env := newTrial(t, db, loadShopTask(t, customOnly(t, `{"enabled":true,"checks":[
		{"name":"paid","expr":"db.customers[0].balance < 300.0 && db.orders[0].status == 'paid'"},
		{"name":"paid-once","expr":"timeline.filter(e, e.tool == 'confirm_payment' && e.status == 'success').size() == 1"},
		{"name":"finished","expr":"termination_reason == 'agent_done'"},
		{"name":"placed","expr":"timeline.exists(e, e.tool == 'place_order' && e.result.id == 'O-001' && e.args.items[1].quantity == 2)"},
		{"name":"task","expr":"task.id == 'shop_orders_02' && task.category == 'tool_use' && task.metadata.turns == 14"},
		{"name":"two-orders","expr":"db.orders.size() == 2","weight":2,"description":"two orders placed"},
		{"name":"guarded","when":"termination_reason == 'max_turns'","expr":"false"}]}`)))
	g := mustGrade(t, env, agentRun(t, env, goldenPlaceOrderArgs, "O-001", goldenFinal))
	want := []*runnerpb.CustomCheckResult{
		{CheckName: "paid", Status: "passed", Score: 1},
		{CheckName: "paid-once", Status: "passed", Score: 1},
		{CheckName: "finished", Status: "passed", Score: 1},
		{CheckName: "placed", Status: "passed", Score: 1},
		{CheckName: "task", Status: "passed", Score: 1},
		{CheckName: "two-orders", Status: "failed", Message: "the expression evaluated to false: two orders placed"},
		{CheckName: "guarded", Status: "skipped", Message: "the when guard evaluated to false"},
	}
	assertCustom(t, g.CustomChecks, want)
	reasons := "Custom checks: score=0.714286 (5 passed, 1 failed, 1 skipped); two-orders: failed: the expression evaluated to false: two orders placed; " +
		"guarded: skipped: the when guard evaluated to false"
	if g.Components.CustomChecks != 0.714286 || g.Score != 0.714286 || g.BinaryPass || g.Reasons != reasons {
		t.Errorf("grade = %v\nwant reasons %s", g, reasons)
	}
}

func assertCustom(t *testing.T, got, want []*runnerpb.CustomCheckResult) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("custom_checks = %v, want %d results", got, len(want))
	}
	for i := range want {
		if got[i].String() != want[i].String() {
			t.Errorf("custom_checks[%d] = %v\nwant %v", i, got[i], want[i])
		}
	}
}

// customEnv is a trial with no database: expressions over the timeline never read it.
func customEnv(t testing.TB, block string, s *script) (*testEnv, []byte) {
	t.Helper()
	cfg, err := task.DecodeGradingConfig([]byte(`{"weights":{"custom_checks":1},"custom_checks":` + block + `}`))
	if err != nil {
		t.Fatalf("decode custom block: %v", err)
	}
	env, tr := traceEnv(t, `{"constraints":[]}`, s)
	env.spec.Task.Grading = cfg
	return env, tr
}

func TestCustomChecksErrors(t *testing.T) {
	long := &script{}
	for range 20 {
		long.say(task.RoleUser, "more?").say(task.RoleAssistant, "sure")
	}
	const notCounted = " | no component was scored, yet the task asked for custom_checks (configured and weighted): nothing it asked for was counted"
	const overCost = "evaluation exceeded its cost limit of 50 over the trial's state: counted as failed, not as an error, since the agent decides how large that state is"
	// pairs costs more than 50 units on any timeline of more than a few events: the
	// agent, which writes the timeline and the state, decides whether it does.
	const pairs = "timeline.all(a, timeline.all(b, a.position >= 0))"
	for _, c := range []struct {
		name    string
		block   string
		opts    []Option
		err     string  // the RPC fails with this
		reasons string  // else the grade carries this
		score   float64 // and this custom_checks score (-1: unscored)
		result  *runnerpb.CustomCheckResult
	}{
		{
			name:  "an evaluation error fails the RPC under fail_on_error (the default)",
			block: `{"enabled":true,"checks":[{"name":"ok","expr":"true"},{"name":"oob","expr":"timeline[99].content == 'x'"}]}`,
			err:   `Grading error: custom_checks failed to run (fail_on_error is true): check "oob": evaluation error: index out of bounds: 99`,
		},
		{
			name:  "fail_on_error false: the checks that ran are scored, the erroring one excluded and named",
			block: `{"enabled":true,"fail_on_error":false,"checks":[{"name":"ok","expr":"true"},{"name":"oob","expr":"timeline[99].content == 'x'"}]}`,
			reasons: `Custom checks: score=1 (1 passed, 0 failed, 0 skipped, 1 errored and excluded under fail_on_error: false); ` +
				`oob: error: evaluation error: index out of bounds: 99`,
			score:  1,
			result: &runnerpb.CustomCheckResult{CheckName: "oob", Status: "error", Message: "evaluation error: index out of bounds: 99"},
		},
		{
			name: "fail_on_error false: an error beside a pass and a failure",
			block: `{"enabled":true,"fail_on_error":false,"checks":[{"name":"ok","expr":"true"},{"name":"no","expr":"false","weight":3},
				{"name":"oob","expr":"timeline[99].content == 'x'","weight":100}]}`,
			reasons: `Custom checks: score=0.25 (1 passed, 1 failed, 0 skipped, 1 errored and excluded under fail_on_error: false); ` +
				`no: failed: the expression evaluated to false; oob: error: evaluation error: index out of bounds: 99`,
			score: 0.25,
		},
		{
			name:    "fail_on_error false, every check errored: unscored, the errors its segment",
			block:   `{"enabled":true,"fail_on_error":false,"checks":[{"name":"text","expr":"timeline[0].content"},{"name":"oob","expr":"timeline[99].content == 'x'"}]}`,
			reasons: `Custom checks: the suite failed to run — check "text": the expression yielded string ("I want a refund for order O-1"), not a bool; check "oob": evaluation error: index out of bounds: 99` + notCounted,
			score:   -1,
		},
		{
			name:    "over the cost limit is a failed check, not a dropped one (fail_on_error false)",
			block:   `{"enabled":true,"fail_on_error":false,"checks":[{"name":"pairs","expr":"` + pairs + `"}]}`,
			opts:    []Option{withCELLimits(50, 0)},
			reasons: `Custom checks: score=0 (0 passed, 1 failed, 0 skipped); pairs: failed: ` + overCost,
			score:   0,
			result:  &runnerpb.CustomCheckResult{CheckName: "pairs", Status: "failed", Message: overCost},
		},
		{
			name:    "over the cost limit is a failed check, not a failed RPC (fail_on_error true)",
			block:   `{"enabled":true,"checks":[{"name":"ok","expr":"true"},{"name":"pairs","expr":"` + pairs + `"}]}`,
			opts:    []Option{withCELLimits(50, 0)},
			reasons: `Custom checks: score=0.5 (1 passed, 1 failed, 0 skipped); pairs: failed: ` + overCost,
			score:   0.5,
		},
		{
			name:    "a when guard over the cost limit fails its check rather than skipping it",
			block:   `{"enabled":true,"checks":[{"name":"ok","expr":"true"},{"name":"guarded","when":"` + pairs + `","expr":"true"}]}`,
			opts:    []Option{withCELLimits(50, 0)},
			reasons: `Custom checks: score=0.5 (1 passed, 1 failed, 0 skipped); guarded: failed: when: ` + overCost,
			score:   0.5,
		},
		{
			name: "the timeout interrupts an expression the cost limit allows",
			block: `{"enabled":true,"fail_on_error":false,"checks":[{"name":"quads",
				"expr":"timeline.all(a, timeline.all(b, timeline.all(c, timeline.all(d, a.content + b.content + c.content + d.content != 'x'))))"}]}`,
			opts:    []Option{withCELLimits(1<<62, 20*time.Millisecond)},
			reasons: `Custom checks: the suite failed to run — check "quads": evaluation exceeded its timeout of 20ms` + notCounted,
			score:   -1,
		},
		{
			name:    "every check skipped: no verdict",
			block:   `{"enabled":true,"checks":[{"name":"g","when":"size(timeline) == 0","expr":"true"}]}`,
			reasons: `Custom checks: no check reached a verdict — 0 passed, 0 failed, 1 skipped` + notCounted,
			score:   -1,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := goodRefund()
			if strings.Contains(c.name, "timeout") {
				s = long
			}
			env, tr := customEnv(t, c.block, s)
			g, err := New(c.opts...).Grade(context.Background(), env, Request{Transcript: tr})
			if c.err != "" {
				if err == nil || err.Error() != c.err {
					t.Fatalf("err = %v\nwant %s", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if g.Reasons != c.reasons || g.Components.CustomChecks != c.score {
				t.Errorf("grade = %v\nwant reasons %s", g, c.reasons)
			}
			if c.result != nil {
				var found bool
				for _, r := range g.CustomChecks {
					if r.CheckName == c.result.CheckName {
						found = r.String() == c.result.String()
					}
				}
				if !found {
					t.Errorf("custom_checks = %v, want %v among them", g.CustomChecks, c.result)
				}
			}
		})
	}
}

// TestCustomChecksHugeWeights: check weights whose naive sum overflows still fold to
// the weighted mean.
func TestCustomChecksHugeWeights(t *testing.T) {
	env, tr := customEnv(t, `{"enabled":true,"checks":[{"name":"yes","expr":"true","weight":1e308},{"name":"no","expr":"false","weight":1e308}]}`, goodRefund())
	g, err := New().Grade(context.Background(), env, Request{Transcript: tr})
	if err != nil {
		t.Fatal(err)
	}
	if g.Score != 0.5 || g.Components.CustomChecks != 0.5 {
		t.Errorf("grade = %v, want score 0.5", g)
	}
}
