package grading

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/test/fakellm"
)

func toolCall(name, args string) fakellm.Reply {
	return fakellm.Reply{ToolCalls: []fakellm.ToolCall{{Name: name, Arguments: args}}, Usage: fakellm.Usage{PromptTokens: 100, CompletionTokens: 10}}
}

func judgeWithTools(maxCalls int, tools ...string) func(g *task.GradingConfig) {
	return func(g *task.GradingConfig) {
		g.LLMJudge.Tools = tools
		g.LLMJudge.MaxCalls = &maxCalls
	}
}

// unpaidRig is a judge rig whose agent placed the order but never paid, on a DB the
// test holds (to inject faults), with confirm_payment mislabelled category read so a
// judge may be offered it: the runner, not the label, must keep what is graded.
func unpaidRig(t *testing.T, edit func(g *task.GradingConfig)) (*judgeRig, *testDB) {
	t.Helper()
	r := newJudgeRig(t, edit)
	for i := range r.env.spec.Task.AgentTools {
		if at := &r.env.spec.Task.AgentTools[i]; at.Name == "confirm_payment" {
			at.Category = task.CategoryRead
		}
	}
	judgeCfg := r.env.spec.Judge
	db := newTestDB(t)
	r.env = newTrial(t, db, r.env.spec.Task)
	r.env.spec.Judge = judgeCfg
	r.transcript = agentRun(t, r.env, goldenPlaceOrderArgs, "", "Order O-001 placed.")
	return r, db
}

// The judge calls a read-only agent tool against the trial's state, sees its result,
// then answers; the call counts in the report and the state is the agent's after.
func TestJudgeCallsReadOnlyTools(t *testing.T) {
	r := newJudgeRig(t, judgeWithTools(4, "get_customer"))
	before := hashes(t, r.env.db, r.env.id)
	if err := r.llm.Enqueue(judgeModel,
		toolCall("get_customer", `{"customer_id":"C-101"}`),
		fakellm.Reply{Content: answer(t, 1, 1), Usage: fakellm.Usage{PromptTokens: 1000, CompletionTokens: 250}},
	); err != nil {
		t.Fatal(err)
	}
	g, err := r.grade(t)
	if err != nil {
		t.Fatalf("Grade: %v", err)
	}
	if g.JudgeStatus != runnerpb.JudgeStatus_JUDGE_STATUS_COMPLETED || g.Components.LlmJudge != 1 {
		t.Fatalf("judge_status %v, llm_judge %v", g.JudgeStatus, g.Components.LlmJudge)
	}
	if rep := g.JudgeReport; rep.Calls != 2 || rep.ToolCalls != 1 || rep.PromptTokens != 1100 {
		t.Errorf("judge_report calls %d, tool_calls %d, prompt tokens %d; want 2, 1, 1100", rep.Calls, rep.ToolCalls, rep.PromptTokens)
	}
	reqs := r.llm.RequestsFor(judgeModel)
	if len(reqs) != 2 {
		t.Fatalf("%d judge requests", len(reqs))
	}
	if len(reqs[0].Tools) != 1 || reqs[0].Tools[0].Name != "get_customer" {
		t.Errorf("tools offered: %+v, want get_customer only", reqs[0].Tools)
	}
	if len(reqs[1].Tools) != 0 {
		t.Errorf("the call after the tool call (the 2nd of 4: a tool call and the answer no longer both fit after it) offered %+v", reqs[1].Tools)
	}
	mustContainAll(t, reqs[0].Messages[0].Content, "You may call the tools offered (get_customer)", "at most 4 calls in all")
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	if last.Role != "tool" || !strings.Contains(last.Content, "C-101") || !strings.Contains(last.Content, "141.01") {
		t.Errorf("the judge was shown %+v, want get_customer's result on the trial's state (balance 141.01)", last)
	}
	var audit []task.Message
	if err := json.Unmarshal([]byte(g.JudgeReport.TranscriptJson), &audit); err != nil || len(audit) != 5 || audit[3].Role != task.RoleTool {
		t.Errorf("transcript_json = %s (%v), want system, user, tool call, tool result, answer", g.JudgeReport.TranscriptJson, err)
	}
	if after := hashes(t, r.env.db, r.env.id); after != before {
		t.Errorf("state changed by grading: %s -> %s", before, after)
	}
}

// Read-only is guaranteed by the runner, not trusted to the pack: a tool that writes,
// mislabelled read so it is offered, changes nothing that is graded. The DB is restored
// after the judge, before custom checks read it, and its hash checked.
func TestJudgeToolThatWritesIsUndone(t *testing.T) {
	r, _ := unpaidRig(t, func(g *task.GradingConfig) {
		judgeWithTools(6, "confirm_payment", "get_customer")(g)
		g.Weights["custom_checks"] = 1
		g.CustomChecks = &task.CustomChecks{Enabled: true, Checks: []task.CustomCheck{
			{Name: "paid", Expr: "db.customers.exists(c, c.id == 'C-101' && c.balance == 141.01)"}}}
	})
	before := hashes(t, r.env.db, r.env.id)
	if err := r.llm.Enqueue(judgeModel,
		toolCall("confirm_payment", `{"order_id":"O-001"}`),
		toolCall("get_customer", `{"customer_id":"C-101"}`),
		fakellm.Reply{Content: answer(t, 1, 1)},
	); err != nil {
		t.Fatal(err)
	}
	g, err := r.grade(t)
	if err != nil {
		t.Fatalf("Grade: %v", err)
	}
	if g.JudgeReport.ToolCalls != 2 {
		t.Fatalf("tool_calls = %d", g.JudgeReport.ToolCalls)
	}
	// The judge saw its own write (the payment went through inside its view) ...
	reqs := r.llm.RequestsFor(judgeModel)
	if got := reqs[2].Messages[len(reqs[2].Messages)-1].Content; !strings.Contains(got, "141.01") {
		t.Errorf("get_customer after the judge's payment showed %q", got)
	}
	// ... but the grade is the agent's: unpaid, so the custom check (run after the
	// judge) sees no debit, and the DB is as the agent left it.
	if g.Components.CustomChecks != 0 {
		t.Errorf("custom_checks = %v, want 0: the agent never paid", g.Components.CustomChecks)
	}
	if after := hashes(t, r.env.db, r.env.id); after != before {
		t.Errorf("the judge's write survived grading: %s -> %s", before, after)
	}
}

// A judge that errors after a writing tool call (mid-loop) leaves the state as the
// agent left it too, and a restore that fails fails the grade whatever the judge's
// share: nothing after the judge may be graded on a state the agent did not leave.
func TestJudgeStateRestoredWhenTheJudgeErrors(t *testing.T) {
	const prefix = "Grading error: llm_judge: JUDGE_STATUS_ERRORED (no score; llm_judge carries a weight share, so the grade cannot be computed without it): "
	for _, c := range []struct {
		name      string
		replies   []fakellm.Reply
		failStore bool
		noShare   bool
		err       string
	}{
		{name: "an answer that is not JSON",
			replies: []fakellm.Reply{toolCall("confirm_payment", `{"order_id":"O-001"}`), {Content: "not json"}},
			err:     prefix + "the judge's answer is not the JSON object"},
		{name: "the provider fails after the tool call",
			replies: []fakellm.Reply{toolCall("confirm_payment", `{"order_id":"O-001"}`), {Status: 400, ErrorMessage: "bad request"}},
			err:     prefix + "judge call failed"},
		{name: "max_calls runs out", replies: []fakellm.Reply{
			{ToolCalls: []fakellm.ToolCall{{Name: "confirm_payment", Arguments: `{"order_id":"O-001"}`}, {Name: "get_customer", Arguments: `{"customer_id":"C-101"}`}, {Name: "get_customer", Arguments: `{"customer_id":"C-102"}`}}}},
			err: prefix + "llm_judge.max_calls 3 exhausted before the judge answered (1 LLM calls, 1 tool calls): its tool calls [get_customer get_customer] were not run, the last call being kept for the answer"},
		{name: "the restore fails", failStore: true, noShare: true,
			replies: []fakellm.Reply{toolCall("confirm_payment", `{"order_id":"O-001"}`), {Content: answer(t, 1, 1)}},
			err:     "Grading error: llm_judge: the trial's state after the judge's tool calls: restoring pre_judge (the trial's database may hold what the judge's tools changed): "},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, db := unpaidRig(t, func(g *task.GradingConfig) {
				judgeWithTools(3, "confirm_payment", "get_customer")(g)
				if c.noShare {
					g.Weights["llm_judge"] = 0
				}
			})
			before := hashes(t, r.env.db, r.env.id)
			if err := r.llm.Enqueue(judgeModel, c.replies...); err != nil {
				t.Fatal(err)
			}
			if c.failStore {
				db.faults.set(func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/snapshots/pre_judge/restore") })
			}
			_, err := r.grade(t)
			if err == nil || !strings.HasPrefix(err.Error(), c.err) {
				t.Fatalf("err = %v\nwant it to begin %q", err, c.err)
			}
			jr := JudgeReportOf(err)
			if jr.GetToolCalls() < 1 {
				t.Errorf("judge report %v: the tool call is not counted", jr)
			}
			if c.failStore {
				// The fault is the DB's, not the judge's: with the DB answering again the
				// state is visibly not the agent's, which is why the grade failed.
				db.faults.set(nil)
				if after := hashes(t, r.env.db, r.env.id); after == before {
					t.Errorf("the injected restore fault changed nothing; the test proves nothing")
				}
				return
			}
			if after := hashes(t, r.env.db, r.env.id); after != before {
				t.Errorf("the judge's write survived its failed run: %s -> %s", before, after)
			}
		})
	}
}

// max_calls bounds LLM calls and tool calls together: tools are offered only while a
// tool call and the answer still fit, so a judge that keeps calling tools runs out
// with an error, never a score.
func TestJudgeMaxCallsBoundsLLMAndToolCalls(t *testing.T) {
	const errored = "Grading error: llm_judge: JUDGE_STATUS_ERRORED (no score; llm_judge carries a weight share, so the grade cannot be computed without it): "
	for _, c := range []struct {
		name      string
		maxCalls  int
		replies   []fakellm.Reply
		err       string
		requests  int
		withTools []int // requests offered the tools; the others are offered none
		shown     string
		toolCalls int32
	}{
		{name: "the last call must answer", maxCalls: 3,
			replies:  []fakellm.Reply{toolCall("get_customer", `{"customer_id":"C-101"}`), toolCall("get_customer", `{"customer_id":"C-102"}`)},
			err:      "llm_judge.max_calls 3 exhausted: the judge called tools [get_customer] on its last call, which is offered none and must be the answer",
			requests: 2, withTools: []int{0}, toolCalls: 1},
		{name: "an answer within the budget", maxCalls: 3,
			replies:  []fakellm.Reply{toolCall("get_customer", `{"customer_id":"C-101"}`), {Content: answer(t, 1, 1)}},
			requests: 2, withTools: []int{0}, toolCalls: 1},
		{name: "tools offered while a tool call and the answer fit", maxCalls: 5,
			replies: []fakellm.Reply{toolCall("get_customer", `{"customer_id":"C-101"}`), toolCall("get_customer", `{"customer_id":"C-102"}`),
				{Content: answer(t, 1, 1)}},
			requests: 3, withTools: []int{0, 1}, toolCalls: 2},
		{name: "a tool not offered is refused by name and counted", maxCalls: 4,
			replies:  []fakellm.Reply{toolCall("place_order", `{}`), {Content: answer(t, 1, 1)}},
			requests: 2, withTools: []int{0}, toolCalls: 1,
			shown: `error: tool "place_order" is not one of the tools offered to you (get_customer); nothing was run`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newJudgeRig(t, judgeWithTools(c.maxCalls, "get_customer"))
			before := hashes(t, r.env.db, r.env.id)
			if err := r.llm.Enqueue(judgeModel, c.replies...); err != nil {
				t.Fatal(err)
			}
			g, err := r.grade(t)
			if c.err != "" {
				if err == nil || err.Error() != errored+c.err {
					t.Fatalf("err = %v\nwant %s%s", err, errored, c.err)
				}
				if tc := JudgeReportOf(err).GetToolCalls(); tc != c.toolCalls {
					t.Errorf("tool_calls = %d, want %d", tc, c.toolCalls)
				}
			} else {
				if err != nil || g.JudgeStatus != runnerpb.JudgeStatus_JUDGE_STATUS_COMPLETED {
					t.Fatalf("Grade: %v, %v", err, g)
				}
				if g.JudgeReport.ToolCalls != c.toolCalls {
					t.Errorf("tool_calls = %d, want %d", g.JudgeReport.ToolCalls, c.toolCalls)
				}
			}
			reqs := r.llm.RequestsFor(judgeModel)
			if len(reqs) != c.requests {
				t.Fatalf("%d judge requests, want %d", len(reqs), c.requests)
			}
			for i, req := range reqs {
				offered := false
				for _, k := range c.withTools {
					offered = offered || k == i
				}
				if got := len(req.Tools) > 0; got != offered {
					t.Errorf("request %d offered tools %+v, want offered=%v", i, req.Tools, offered)
				}
			}
			if c.shown != "" {
				if got := reqs[1].Messages[len(reqs[1].Messages)-1].Content; got != c.shown {
					t.Errorf("shown %q\nwant %q", got, c.shown)
				}
			}
			if after := hashes(t, r.env.db, r.env.id); after != before {
				t.Errorf("state changed by grading: %s -> %s", before, after)
			}
		})
	}
}

// A judge tool that resolves to a registered tool not of category read is refused by
// name before the judge makes any call (validation refuses it earlier; this holds for
// a spec built in Go or a registration that differs from the task).
func TestJudgeToolNotReadIsRefusedBeforeAnyCall(t *testing.T) {
	for _, c := range []struct {
		name  string
		tools []string
		err   string
	}{
		{name: "a write tool", tools: []string{"get_customer", "place_order"},
			err: "llm_judge.tools: judge tool place_order is registered with category write: the judge may call only tools of category read"},
		{name: "a tool not registered", tools: []string{"get_weather"},
			err: `llm_judge.tools[0] (get_weather) matches no registered agent tool (neither "get_weather" nor *_get_weather); registered agent tools: [get_customer, place_order, confirm_payment, list_products]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newJudgeRig(t, judgeWithTools(8, c.tools...))
			before := hashes(t, r.env.db, r.env.id)
			_, err := r.grade(t)
			want := "Grading error: llm_judge: JUDGE_STATUS_ERRORED (no score; llm_judge carries a weight share, so the grade cannot be computed without it): " + c.err
			if err == nil || err.Error() != want {
				t.Fatalf("err = %v\nwant %s", err, want)
			}
			if n := len(r.llm.Requests()); n != 0 {
				t.Errorf("%d provider requests for a refused judge", n)
			}
			if after := hashes(t, r.env.db, r.env.id); after != before {
				t.Errorf("state changed: %s -> %s", before, after)
			}
		})
	}
}

// A restore that "succeeds" but leaves a state hashing otherwise than the snapshotted
// one (here a tool server that writes when the restored tables are pushed to it) fails
// the grade, naming both hashes.
func TestJudgeRestoreHashMismatchFailsTheGrade(t *testing.T) {
	r, _ := unpaidRig(t, func(g *task.GradingConfig) {
		judgeWithTools(3, "get_customer")(g)
		g.Weights["llm_judge"] = 0
	})
	env := r.env
	judged := false
	env.beforeRun = func(_ context.Context, _ int, tool string) { judged = judged || tool == "get_customer" }
	env.pushHook = func(ctx context.Context, _ int) {
		if judged {
			if _, _, err := env.run(ctx, "confirm_payment", json.RawMessage(`{"order_id":"O-001"}`)); err != nil {
				t.Errorf("the stale push: %v", err)
			}
		}
	}
	if err := r.llm.Enqueue(judgeModel, toolCall("get_customer", `{"customer_id":"C-101"}`), fakellm.Reply{Content: answer(t, 1, 1)}); err != nil {
		t.Fatal(err)
	}
	_, err := r.grade(t)
	const want = "Grading error: llm_judge: the trial's state after the judge's tool calls: after restoring pre_judge the trial's stable state hashes to "
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), "it held before the judge's tool calls") {
		t.Fatalf("err = %v\nwant %q...", err, want)
	}
}
