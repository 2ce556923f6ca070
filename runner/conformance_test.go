package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/examples/shop"
	"tolokaforge.io/operator/runner/grading"
)

// Reference digests of spec/shop-domain.md.
const (
	shopInitialHash = "fb5cce61f84a018b3860412ad354f6efc0e8c1887b869918f6f03de158cc0977"
	shopGoldenHash  = "4c8b535f7c229f6c10058392e478c0ea0196a644ce9410f58375842be6681c2b"
)

var shopGolden = []call{
	{tool: "place_order", args: `{"customer_id":"C-101","items":[{"product_id":"P-001","quantity":1,"unit_price":89.99},{"product_id":"P-002","quantity":2,"unit_price":34.5}]}`},
	{tool: "confirm_payment", args: `{"order_id":"O-001"}`},
}

func shopSpec(id string) string {
	return fmt.Sprintf(`{"trial_id":%q,"run_id":"r","attempt_id":"a","task":%s,"agent":{"provider":"oracle"}}`, id, shop.TaskJSON())
}

func registerShop(tb testing.TB, h *harness, id string) *runnerpb.RegisterTrialResponse {
	tb.Helper()
	resp := h.registerRaw(tb, &runnerpb.RegisterTrialRequest{TrialId: id, TrialSpecJson: shopSpec(id), EngineProtocolVersion: task.EngineProtocolVersion})
	if !resp.GetSuccess() {
		tb.Fatalf("register shop: %s", resp.GetError())
	}
	return resp
}

func TestShopConformance(t *testing.T) {
	h := startRunner(t, nil)
	resp := registerShop(t, h, "shop_orders_02:0")
	var names []string
	for _, s := range resp.GetToolSchemas() {
		names = append(names, s.GetName())
	}
	if strings.Join(names, ",") != "list_products,get_customer,place_order,confirm_payment" || resp.GetNumAgentTools() != 4 || resp.GetNumUserTools() != 0 {
		t.Fatalf("tools: %v (%d/%d)", names, resp.GetNumAgentTools(), resp.GetNumUserTools())
	}
	if st := h.state(t, "shop_orders_02:0", false); st.GetStableHash() != shopInitialHash {
		t.Fatalf("initial stable hash %s, want %s", st.GetStableHash(), shopInitialHash)
	}

	path := []struct {
		c         call
		mutations int32
		contains  string
	}{
		{call{tool: "list_products", args: `{}`}, 0, `"P-001"`},
		{call{tool: "get_customer", args: `{"customer_id":"C-101"}`}, 0, `"C-101"`},
		{shopGolden[0], 2, `"id": "O-001"`}, // products (stock) and orders
		{shopGolden[1], 2, `"status": "paid"`},
	}
	for i, p := range path {
		p.c.callID = fmt.Sprintf("call_%d", i)
		r := h.exec(t, "shop_orders_02:0", p.c)
		if r.GetStatus() != stSuccess || !strings.Contains(r.GetOutput(), p.contains) || r.GetMetrics().GetStateMutations() != p.mutations {
			t.Fatalf("%s: %s %q %q mutations=%d", p.c.tool, r.GetStatus(), r.GetOutput(), r.GetErrorMessage(), r.GetMetrics().GetStateMutations())
		}
	}
	st := h.state(t, "shop_orders_02:0", false)
	if st.GetStableHash() != shopGoldenHash {
		t.Fatalf("golden stable hash %s, want %s\nstate %s", st.GetStableHash(), shopGoldenHash, st.GetStateJson())
	}
	// A shop tool error is ERROR with the domain's message, and changes nothing.
	r := h.exec(t, "shop_orders_02:0", call{tool: "confirm_payment", args: `{"order_id":"O-001"}`, callID: "again"})
	if r.GetStatus() != stError || r.GetErrorMessage() != "Order 'O-001' cannot be paid" || r.GetMetrics().GetStateMutations() != 0 {
		t.Fatalf("paying twice: %s %q", r.GetStatus(), r.GetErrorMessage())
	}
	if st := h.state(t, "shop_orders_02:0", false); st.GetStableHash() != shopGoldenHash {
		t.Fatal("a failed call changed the state")
	}
}

// TestShopGoldenReplayThroughEnv plays grading's part (snapshot, reset,
// replay, restore) through grading.Env on the shop's MCP server, and checks
// the trial continues from its own state afterwards.
func TestShopGoldenReplayThroughEnv(t *testing.T) {
	for _, pushAfterRestore := range []bool{true, false} {
		t.Run(fmt.Sprintf("push_after_restore=%v", pushAfterRestore), func(t *testing.T) {
			pg := &probeGrader{}
			h := startRunner(t, nil, withGrader(pg))
			registerShop(t, h, "shop")
			h.mustExec(t, "shop", call{tool: "get_customer", args: `{"customer_id":"C-101"}`, callID: "c0"})
			goldenCh := make(chan string, 1)
			pg.set(func(ctx context.Context, env grading.Env, _ grading.Request) (*runnerpb.Grade, error) {
				db := env.DB()
				if err := env.SyncFromTools(ctx); err != nil {
					return nil, err
				}
				if _, err := db.Snapshot(ctx, "shop", "pre_golden"); err != nil {
					return nil, err
				}
				if _, err := db.Reset(ctx, "shop"); err != nil {
					return nil, err
				}
				if err := env.PushToTools(ctx); err != nil {
					return nil, err
				}
				for _, g := range shopGolden {
					if st, out, err := env.Replay(ctx, g.tool, []byte(g.args)); err != nil || st != task.ToolCallSuccess {
						return nil, fmt.Errorf("replay %s: %s %s %v", g.tool, st, out, err)
					}
				}
				if err := env.SyncFromTools(ctx); err != nil {
					return nil, err
				}
				hh, err := db.Hash(ctx, "shop")
				if err != nil {
					return nil, err
				}
				goldenCh <- hh.StableHash
				if _, err := db.Restore(ctx, "shop", "pre_golden"); err != nil {
					return nil, err
				}
				if pushAfterRestore {
					if err := env.PushToTools(ctx); err != nil {
						return nil, err
					}
				}
				return &runnerpb.Grade{}, nil
			})
			if r := grade(t, h, &runnerpb.GradeTrialRequest{TrialId: "shop"}); !r.GetSuccess() {
				t.Fatal(r.GetError())
			}
			if golden := <-goldenCh; golden != shopGoldenHash {
				t.Fatalf("golden replay hash %s, want %s", golden, shopGoldenHash)
			}
			if st := h.state(t, "shop", false); st.GetStableHash() != shopInitialHash {
				t.Fatalf("trial state after grading %s, want the restored initial state", st.GetStableHash())
			}
			// The MCP server holds the restored state too (reloaded even when the
			// grader did not push): the agent's first order is still O-001.
			for i, g := range shopGolden {
				g.callID = fmt.Sprintf("after-%d", i)
				h.mustExec(t, "shop", g)
			}
			if st := h.state(t, "shop", false); st.GetStableHash() != shopGoldenHash {
				t.Fatalf("after grading, the golden path lands on %s", st.GetStableHash())
			}
		})
	}
}

// TestShopGradedByTheRealGrader runs the golden path and grades it with
// runner/grading's Grader through GradeTrial.
func TestShopGradedByTheRealGrader(t *testing.T) {
	h := startRunner(t, nil, withGrader(grading.New()))
	registerShop(t, h, "graded")
	var msgs []string
	msgs = append(msgs, `{"role":"system","content":"policy"}`, `{"role":"user","content":"Order one headphones and two hubs for C-101, then pay."}`)
	for i, g := range shopGolden {
		id := fmt.Sprintf("call_%d", i)
		g.callID = id
		out := h.mustExec(t, "graded", g)
		args, _ := json.Marshal(g.args)
		msgs = append(msgs,
			fmt.Sprintf(`{"role":"assistant","content":"","tool_calls":[{"id":%q,"function":{"name":%q,"arguments":%s}}]}`, id, g.tool, args),
			fmt.Sprintf(`{"role":"tool","content":%s,"tool_call_id":%q}`, mustJSON(out), id))
	}
	msgs = append(msgs, `{"role":"assistant","content":"Order O-001 is paid; your balance is 141.01."}`)
	r := grade(t, h, &runnerpb.GradeTrialRequest{TrialId: "graded", LlmMessagesJson: "[" + strings.Join(msgs, ",") + "]", TerminationReason: "agent_done"})
	if !r.GetSuccess() {
		t.Fatalf("GradeTrial: %s", r.GetError())
	}
	if got := r.GetGrade().GetComponents().GetStateChecks(); got != 1 || !strings.Contains(r.GetGrade().GetReasons(), "State: hash match") {
		t.Fatalf("grade: state_checks=%v reasons=%q", got, r.GetGrade().GetReasons())
	}
	t.Logf("grade: score=%v pass=%v reasons=%q", r.GetGrade().GetScore(), r.GetGrade().GetBinaryPass(), r.GetGrade().GetReasons())
	// Grading put the trial's state back.
	if st := h.state(t, "graded", false); st.GetStableHash() != shopGoldenHash {
		t.Fatalf("state after grading: %s", st.GetStableHash())
	}
}

func mustJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
