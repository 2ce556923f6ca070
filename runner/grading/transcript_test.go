package grading

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"tolokaforge.io/operator/api/canonical"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/dbservice/client"
	"tolokaforge.io/operator/runner/grading/gradefmt"
	"tolokaforge.io/operator/runner/grading/timeline"
)

// conv builds a transcript while executing (and recording) its tool calls.
type conv struct {
	t    testing.TB
	env  *testEnv
	msgs []turn
	n    int
}

func (c *conv) say(role, content string) *conv {
	c.msgs = append(c.msgs, turn{Role: role, Content: content})
	return c
}

func (c *conv) call(executor, tool, args string) *conv {
	c.n++
	id := fmt.Sprintf("call_%d", c.n)
	m := calls([3]string{id, tool, args})
	m.Role = timeline.RoleOf(executor)
	c.msgs = append(c.msgs, m)
	rec := c.env.call(c.t, id, executor, tool, args)
	c.msgs = append(c.msgs, toolResult(id, rec.Output))
	return c
}

func (c *conv) wire() []byte { return wire(c.t, c.msgs...) }

func transcriptOnly(rules task.TranscriptRules) func(td *task.TaskDescription) {
	return func(td *task.TaskDescription) {
		td.Grading.StateChecks = nil
		td.Grading.TranscriptRules = &rules
		td.Grading.Weights = map[string]float64{"transcript_rules": 1}
		td.Grading.PassThreshold = ptrTo(1.0)
		td.UserTools = []task.ToolSchema{{Name: "check_balance", Description: "the user checks their balance"}}
	}
}

func checkBalance(ctx context.Context, db *client.Client, id string, _ canonical.Object) (string, error) {
	customers, err := readTable(ctx, db, id, "customers")
	if err != nil {
		return "", err
	}
	c, _ := findByID(customers, "C-101")
	return fmt.Sprint(num(c, "balance")), nil
}

func TestTranscriptRules(t *testing.T) {
	db := newTestDB(t)
	// The standard conversation: browse, a failed payment attempt, order, pay, report.
	standard := func(c *conv) {
		c.say(task.RoleUser, "I want headphones. Last time the PAYMENT FAILED.")
		c.call(task.ExecutorAgent, "list_products", `{}`)
		c.call(task.ExecutorAgent, "confirm_payment", `{"order_id":"O-009"}`) // ERROR: no such order
		c.call(task.ExecutorAgent, "place_order", `{"customer_id":"C-101","items":[{"product_id":"P-001","quantity":2,"unit_price":89.99}]}`)
		c.call(task.ExecutorAgent, "confirm_payment", `{"order_id":"O-001"}`)
		c.call(task.ExecutorUser, "check_balance", `{}`)
		c.say(task.RoleAssistant, "Order o-001 is Paid. Your balance is 120.02.")
	}
	req := func(id, tool string, args string, compare *[]string) task.RequiredAction {
		return task.RequiredAction{ActionID: id, Requestor: task.RequestorAssistant, ToolName: tool, Arguments: []byte(args), CompareArgs: compare}
	}
	none := &[]string{}
	for _, c := range []struct {
		name    string
		rules   task.TranscriptRules
		score   float64
		reasons string
	}{
		{"must_contain is case-insensitive, over assistant turns only",
			task.TranscriptRules{MustContain: []string{"O-001", "PAID", "payment failed"}}, 2.0 / 3,
			`Transcript: 1 of 3 rules failed: must_contain[2]: no assistant message contains "payment failed"`},
		{"disallow_regex reads assistant turns only",
			task.TranscriptRules{DisallowRegex: []string{"(?i)payment failed", `balance is \d+\.\d\d`}}, 0.5,
			`Transcript: 1 of 2 rules failed: disallow_regex[1]: "balance is \\d+\\.\\d\\d" matched "balance is 120.02" in the assistant message at position 11`},
		{"max_turns counts assistant turns",
			task.TranscriptRules{MaxTurns: ptrTo(4)}, 0,
			`Transcript: 1 of 1 rules failed: max_turns: 5 assistant turns exceed the limit of 4`},
		{"max_turns at the limit passes",
			task.TranscriptRules{MaxTurns: ptrTo(5)}, 1, `Transcript: all 1 rules passed`},
		{"min_assistant_turns",
			task.TranscriptRules{MinAssistantTurns: ptrTo(6)}, 0,
			`Transcript: 1 of 1 rules failed: min_assistant_turns: 5 assistant turns, fewer than the 6 required`},
		{"required_actions: compare_args absent compares every given argument",
			task.TranscriptRules{RequiredActions: []task.RequiredAction{
				req("pay", "confirm_payment", `{"order_id":"O-001"}`, nil),
				req("pay-other", "confirm_payment", `{"order_id":"O-002"}`, nil),
				req("qty-as-float", "place_order", `{"customer_id":"C-101","items":[{"product_id":"P-001","quantity":2.0,"unit_price":89.99}]}`, nil),
			}}, 2.0 / 3,
			`Transcript: 1 of 3 rules failed: required_actions[pay-other]: no successful assistant call to confirm_payment with order_id="O-002"`},
		{"required_actions: compare_args [] is the name only",
			task.TranscriptRules{RequiredActions: []task.RequiredAction{
				req("browse", "list_products", `{"category":"audio"}`, none),
				req("stand", "get_customer", `{}`, none),
			}}, 0.5,
			`Transcript: 1 of 2 rules failed: required_actions[stand]: no assistant call to get_customer`},
		{"required_actions: a compare_args list compares those keys",
			task.TranscriptRules{RequiredActions: []task.RequiredAction{
				req("who", "place_order", `{"customer_id":"C-101","items":[]}`, &[]string{"customer_id"}),
				req("what", "place_order", `{"customer_id":"C-101","items":[]}`, &[]string{"items"}),
				req("absent-both", "place_order", `{"customer_id":"C-101"}`, &[]string{"coupon"}),
			}}, 2.0 / 3,
			`Transcript: 1 of 3 rules failed: required_actions[what]: no successful assistant call to place_order with items=[]`},
		{"required_actions: successful calls only",
			task.TranscriptRules{RequiredActions: []task.RequiredAction{req("pay-9", "confirm_payment", `{"order_id":"O-009"}`, nil)}}, 0,
			`Transcript: 1 of 1 rules failed: required_actions[pay-9]: no successful assistant call to confirm_payment with order_id="O-009"`},
		{"required_actions: requestor user resolves against the user's tools",
			task.TranscriptRules{RequiredActions: []task.RequiredAction{
				{ActionID: "user-checks", Requestor: task.RequestorUser, ToolName: "check_balance", Arguments: []byte(`{}`)},
				{ActionID: "agent-checks", Requestor: task.RequestorAssistant, ToolName: "check_balance", Arguments: []byte(`{}`)},
				{ActionID: "user-pays", Requestor: task.RequestorUser, ToolName: "confirm_payment", Arguments: []byte(`{}`)},
			}}, 1.0 / 3,
			`Transcript: 2 of 3 rules failed: required_actions[agent-checks]: tool "check_balance" matches no registered agent tool (neither "check_balance" nor *_check_balance); ` +
				`required_actions[user-pays]: tool "confirm_payment" matches no registered user tool (neither "confirm_payment" nor *_confirm_payment)`},
		{"communicate_info: required items only",
			task.TranscriptRules{CommunicateInfo: []task.CommunicateInfo{{Info: "120.02"}, {Info: "141.01", Required: ptrTo(true)}, {Info: "refund", Required: ptrTo(false)}}}, 0.5,
			`Transcript: 1 of 2 rules failed: communicate_info[1]: "141.01" was never communicated in an assistant message`},
		{"each rule instance counts once",
			task.TranscriptRules{MustContain: []string{"o-001"}, MaxTurns: ptrTo(10), MinAssistantTurns: ptrTo(1),
				RequiredActions: []task.RequiredAction{req("pay", "confirm_payment", `{"order_id":"O-001"}`, nil)},
				CommunicateInfo: []task.CommunicateInfo{{Info: "paid"}}}, 1,
			`Transcript: all 5 rules passed`},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := newTrial(t, db, loadShopTask(t, transcriptOnly(c.rules)))
			env.tools["check_balance"] = checkBalance
			cv := &conv{t: t, env: env}
			standard(cv)
			g := mustGrade(t, env, cv.wire())
			if g.Components.TranscriptRules != c.score || g.Score != gradefmt.Round6(c.score) || g.Components.StateChecks != -1 {
				t.Errorf("components %v score %v, want transcript %v", g.Components, g.Score, c.score)
			}
			if g.Reasons != c.reasons {
				t.Errorf("reasons:\n got %s\nwant %s", g.Reasons, c.reasons)
			}
			if g.BinaryPass != (c.score == 1) {
				t.Errorf("binary_pass = %v", g.BinaryPass)
			}
		})
	}
}

func TestTranscriptRequiredActionByPrefix(t *testing.T) {
	db := newTestDB(t)
	env := newTrial(t, db, loadShopTask(t, func(td *task.TaskDescription) {
		transcriptOnly(task.TranscriptRules{RequiredActions: []task.RequiredAction{
			{ActionID: "pay", Requestor: task.RequestorAssistant, ToolName: "confirm_payment", Arguments: []byte(`{"order_id":"O-001"}`)},
		}})(td)
		td.AgentTools = []task.ToolSchema{{Name: "shop_place_order", Description: "x"}, {Name: "shop_confirm_payment", Description: "x"}}
	}))
	env.tools = map[string]toolFunc{"shop_place_order": placeOrder, "shop_confirm_payment": confirmPayment}
	cv := &conv{t: t, env: env}
	cv.call(task.ExecutorAgent, "shop_place_order", goldenPlaceOrderArgs).call(task.ExecutorAgent, "shop_confirm_payment", `{"order_id":"O-001"}`)
	g := mustGrade(t, env, cv.say(task.RoleAssistant, "done").wire())
	if g.Components.TranscriptRules != 1 || g.Reasons != "Transcript: all 1 rules passed" {
		t.Errorf("grade = %v", g)
	}
}

func TestTranscriptEmptyTimelineIsARecordedSkip(t *testing.T) {
	db := newTestDB(t)
	all := task.TranscriptRules{MustContain: []string{"x"}, DisallowRegex: []string{"y"}, MaxTurns: ptrTo(3),
		RequiredActions: []task.RequiredAction{{ActionID: "a", Requestor: task.RequestorAssistant, ToolName: "list_products", Arguments: []byte(`{}`)}},
		CommunicateInfo: []task.CommunicateInfo{{Info: "z"}}}
	skipped := "transcript_rules.communicate_info, transcript_rules.disallow_regex, transcript_rules.max_turns, transcript_rules.must_contain, transcript_rules.required_actions: skipped: the trial's timeline carries no events"
	withMin := all
	withMin.MinAssistantTurns = ptrTo(1)
	withMinZero := all
	withMinZero.MinAssistantTurns = ptrTo(0)
	for _, c := range []struct {
		name       string
		rules      task.TranscriptRules
		transcript []byte
		component  float64
		score      float64
		reasons    string
	}{
		{"no min_assistant_turns: the component is not scored", all, nil, -1, 0,
			"no component was scored, yet the task asked for transcript_rules (configured and weighted): nothing it asked for was counted | " + skipped},
		{"only a system message: still no events", all, wire(t, turn{Role: task.RoleSystem, Content: "policy"}), -1, 0,
			"no component was scored, yet the task asked for transcript_rules (configured and weighted): nothing it asked for was counted | " + skipped},
		{"min_assistant_turns is evaluated: absence is its answer", withMin, nil, 0, 0,
			"Transcript: 1 of 1 rules failed: min_assistant_turns: 0 assistant turns, fewer than the 1 required | " + skipped},
		{"min_assistant_turns 0 passes on nothing", withMinZero, []byte("[]"), 1, 1,
			"Transcript: all 1 rules passed | " + skipped},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := newTrial(t, db, loadShopTask(t, transcriptOnly(c.rules)))
			g := mustGrade(t, env, c.transcript)
			if g.Components.TranscriptRules != c.component || g.Score != c.score || g.Reasons != c.reasons {
				t.Errorf("grade = %v\nwant transcript %v score %v reasons %s", g, c.component, c.score, c.reasons)
			}
		})
	}
}

func TestTimelineFromRecordsAlone(t *testing.T) {
	// Hash-only grading may omit the transcript: the timeline is the runner's record.
	db := newTestDB(t)
	env := newTrial(t, db, loadShopTask(t, transcriptOnly(task.TranscriptRules{RequiredActions: []task.RequiredAction{
		{ActionID: "pay", Requestor: task.RequestorAssistant, ToolName: "confirm_payment", Arguments: []byte(`{"order_id":"O-001"}`)},
	}})))
	agentRun(t, env, goldenPlaceOrderArgs, "O-001", goldenFinal)
	g := mustGrade(t, env, nil)
	if g.Components.TranscriptRules != 1 || !strings.HasPrefix(g.Reasons, "Transcript: all 1 rules passed") {
		t.Errorf("grade = %v", g)
	}
}
