package agents_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/controllers/host"
	"tolokaforge.io/operator/controllers/host/agents"
)

func TestResolveToolName(t *testing.T) {
	cases := []struct {
		name    string
		offered []string
		want    string
		err     string
	}{
		{"place_order", []string{"list_products", "place_order"}, "place_order", ""},
		{"place_order", []string{"shop_place_order", "list_products"}, "shop_place_order", ""},
		// An exact match wins over a suffix match.
		{"order", []string{"shop_order", "order"}, "order", ""},
		{"pay", []string{"a_pay", "b_pay"}, "", `tool "pay" is ambiguous: a_pay, b_pay all end in _pay`},
		{"pay", []string{"repay", "pay_now"}, "", `tool "pay" matches no offered tool, exactly or as <prefix>_pay (offered: repay, pay_now)`},
		{"pay", []string{"_pay"}, "", `tool "pay" matches no offered tool, exactly or as <prefix>_pay (offered: _pay)`},
		{"", []string{"x"}, "", `names no tool (offered: x)`},
	}
	for _, tc := range cases {
		got, err := agents.ResolveToolName(tc.name, tc.offered)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("ResolveToolName(%q, %v) = %q, %v; want %q, %q", tc.name, tc.offered, got, err, tc.want, tc.err)
		}
	}
}

func goldenTask(actions ...task.GoldenAction) *task.TaskDescription {
	return &task.TaskDescription{TaskID: "t", Grading: &task.GradingConfig{StateChecks: &task.StateChecks{GoldenActions: actions}}}
}

func TestOracleReplaysThenStops(t *testing.T) {
	o := agents.NewOracle(goldenTask(
		task.GoldenAction{ToolName: "place_order", Arguments: json.RawMessage(`{"customer_id": "C-101"}`)},
		task.GoldenAction{ToolName: "confirm_payment"},
	))
	tools := []*runnerpb.ToolSchema{{Name: "shop_place_order"}, {Name: "confirm_payment"}}
	user := []task.Message{{Role: task.RoleSystem, Content: "p"}, {Role: task.RoleUser, Content: "hi"}}
	turn, err := o.Next(ctxT(t), user, tools)
	if err != nil {
		t.Fatal(err)
	}
	want := []task.ToolCall{
		{ID: "oracle_0", Type: "function", Function: task.FunctionCall{Name: "shop_place_order", Arguments: `{"customer_id": "C-101"}`}},
		{ID: "oracle_1", Type: "function", Function: task.FunctionCall{Name: "confirm_payment", Arguments: "{}"}},
	}
	if turn.Content != "" || len(turn.ToolCalls) != 2 || turn.ToolCalls[0] != want[0] || turn.ToolCalls[1] != want[1] {
		t.Fatalf("first turn = %+v", turn)
	}
	after := append(user, task.Message{Role: task.RoleAssistant, ToolCalls: turn.ToolCalls})
	turn, err = o.Next(ctxT(t), after, tools)
	if err != nil || turn.Content != host.StopMarker || len(turn.ToolCalls) != 0 {
		t.Fatalf("second turn = %+v, %v", turn, err)
	}
}

func TestOracleWithoutGoldenActionsStops(t *testing.T) {
	for _, td := range []*task.TaskDescription{nil, {TaskID: "t"}, goldenTask()} {
		turn, err := agents.NewOracle(td).Next(ctxT(t), nil, nil)
		if err != nil || turn.Content != host.StopMarker || len(turn.ToolCalls) != 0 {
			t.Fatalf("%+v: turn = %+v, %v", td, turn, err)
		}
	}
}

func TestOracleUnresolvableActionEndsAsError(t *testing.T) {
	o := agents.NewOracle(goldenTask(task.GoldenAction{ToolName: "refund"}))
	_, err := o.Next(ctxT(t), nil, []*runnerpb.ToolSchema{{Name: "list_products"}})
	var ae *host.ActorError
	if !errors.As(err, &ae) || ae.Termination != task.TerminationError ||
		ae.Err.Error() != `oracle: golden action 0: tool "refund" matches no offered tool, exactly or as <prefix>_refund (offered: list_products)` {
		t.Fatalf("err = %v", err)
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// A terminal task's oracle writes the solution's files under /solution and
// runs its command with bash, bounded by the agent's timeout; without a
// solution it stops at once, and a solution whose files were not shipped
// ends the trial as an error naming them.
func TestOracleTerminalTask(t *testing.T) {
	env := func(sol *task.EnvironmentSolution) *task.TaskDescription {
		return &task.TaskDescription{TaskID: "hello", AdapterType: task.AdapterTerminalBench,
			ToolArtifacts: map[string]string{"solution/solve.sh": b64("echo 'hi' > /app/out\n"), "solution/lib/x.txt": b64("x"), "tests/test.sh": b64("exit 0")},
			Environment:   &task.Environment{Image: "i", Agent: task.EnvironmentActor{TimeoutS: 300}, Solution: sol}}
	}
	user := []task.Message{{Role: task.RoleUser, Content: "hi"}}
	turn, err := agents.NewOracle(env(&task.EnvironmentSolution{Files: []string{"solution"}, Command: []string{"bash", "/solution/solve.sh"}})).Next(ctxT(t), user, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range turn.ToolCalls {
		got = append(got, c.ID+" "+c.Function.Name+" "+c.Function.Arguments)
	}
	want := []string{
		`oracle_0 write_file {"content":"x","path":"/solution/lib/x.txt"}`,
		`oracle_1 write_file {"content":"echo 'hi' \u003e /app/out\n","path":"/solution/solve.sh"}`,
		`oracle_2 bash {"command":"'bash' '/solution/solve.sh'","timeout_s":300}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("calls\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	after := append(user, task.Message{Role: task.RoleAssistant, ToolCalls: turn.ToolCalls})
	if turn, err := agents.NewOracle(env(nil)).Next(ctxT(t), after, nil); err != nil || turn.Content != host.StopMarker {
		t.Fatalf("after the solution: %+v %v", turn, err)
	}
	if turn, err := agents.NewOracle(env(nil)).Next(ctxT(t), user, nil); err != nil || turn.Content != host.StopMarker {
		t.Fatalf("no solution: %+v %v", turn, err)
	}
	_, err = agents.NewOracle(env(&task.EnvironmentSolution{Files: []string{"sol.sh"}, Command: []string{"bash"}})).Next(ctxT(t), user, nil)
	var ae *host.ActorError
	if !errors.As(err, &ae) || ae.Termination != task.TerminationError || !strings.Contains(err.Error(), "the task's solution (sol.sh) has no files") {
		t.Fatalf("error %v", err)
	}
}
