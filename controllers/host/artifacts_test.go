package host_test

import (
	"os"
	"path/filepath"
	"testing"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"

	"sigs.k8s.io/yaml"

	"tolokaforge.io/operator/api/artifacts"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/controllers/host"
	"tolokaforge.io/operator/controllers/host/agents"
	"tolokaforge.io/operator/results/local"
	"tolokaforge.io/operator/test/fakellm"
)

type doc = map[string]any

func readYAML(t *testing.T, path string) doc {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d doc
	if err := yaml.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return d
}

func TestArtifactsOfAttempts(t *testing.T) {
	s := startStack(t, local.StackConfig{})
	out := t.TempDir()
	tk := shopTask(t)
	var script []fakellm.Reply
	for range agents.DefaultRetryPolicy.MaxRetries + 1 {
		script = append(script, fakellm.Reply{Status: 500})
	}
	f := fakeLLM(t, map[string][]fakellm.Reply{"agent": append(script,
		fakellm.Reply{ToolCalls: []fakellm.ToolCall{call("c1", "confirm_payment", `{"order_id":"O-001"}`)}},
		fakellm.Reply{ToolCalls: []fakellm.ToolCall{call("c2", "place_order", placeArgs), call("c3", "list_products", `{}`)}},
		fakellm.Reply{Content: "O-001 placed ###STOP###"},
	)})
	agent, cfg := llmActor(t, f, "agent", nil)
	spec := specFor(s, tk, cfg)

	// Attempt 1 dies of provider errors; attempt 2 is graded (and fails).
	var res [2]host.AttemptResult
	for i := range res {
		ac := attempt(s, spec, agent, nil)
		ac.ArtifactsDir, ac.TrialIndex, ac.AttemptNumber = out, 4, i+1
		res[i] = host.RunAttempt(ctxT(t), ac)
	}
	if res[0].Outcome != evalv1.OutcomeInfraFailed || res[1].GradedBy != host.GradedByRunner || res[1].Grade.GetBinaryPass() {
		t.Fatalf("attempts: %s / %s", res[0], res[1])
	}
	top := filepath.Join(out, "trials", "shop_orders_02", "4")
	if res[1].ArtifactsPath != top || res[0].ArtifactsPath != top {
		t.Fatalf("ArtifactsPath = %q, %q; want %q", res[0].ArtifactsPath, res[1].ArtifactsPath, top)
	}
	a1 := artifacts.AttemptDir(out, "shop_orders_02", 4, 1)
	if _, err := os.Stat(filepath.Join(a1, artifacts.GradeFile)); !os.IsNotExist(err) {
		t.Fatalf("attempt 1 has a grade.yaml (%v)", err)
	}
	if tr := readYAML(t, filepath.Join(a1, artifacts.TrajectoryFile)); tr["outcome"] != "InfraFailed" || tr["termination_reason"] != "api_error" ||
		tr["attempt"] != 1.0 || tr["reason"] != evalv1.ReasonProviderError {
		t.Fatalf("attempt 1 trajectory = %v", tr)
	}

	tr := readYAML(t, filepath.Join(top, artifacts.TrajectoryFile))
	if tr["attempt"] != 2.0 || tr["trial_id"] != spec.TrialID || tr["task_id"] != "shop_orders_02" || tr["trial_index"] != 4.0 ||
		tr["termination_reason"] != "agent_done" || tr["turns"] != 3.0 {
		t.Fatalf("trajectory header = %v", tr)
	}
	msgs := tr["messages"].([]any)
	if len(msgs) != 8 { // system, user, 3 assistant turns, 3 tool results
		t.Fatalf("%d messages: %v", len(msgs), msgs)
	}
	for i, m := range msgs {
		if ts, _ := m.(doc)["timestamp"].(string); ts == "" {
			t.Fatalf("message %d has no timestamp: %v", i, m)
		}
	}
	calls := tr["tool_calls"].([]any)
	if len(calls) != 3 {
		t.Fatalf("tool_calls = %v", calls)
	}
	first := calls[0].(doc)
	if first["call_id"] != "c1" || first["status"] != "error" || first["executor"] != "agent" || first["sequence"] != 0.0 ||
		first["arguments"].(doc)["order_id"] != "O-001" {
		t.Fatalf("tool_calls[0] = %v", first)
	}

	g := readYAML(t, filepath.Join(top, artifacts.GradeFile))
	if g["graded_by"] != "runner" || g["binary_pass"] != false || g["attempt"] != 2.0 {
		t.Fatalf("grade = %v", g)
	}
	if _, ok := g["state_diff"].(doc); !ok {
		t.Fatalf("state_diff is not a mapping: %T %v", g["state_diff"], g["state_diff"])
	}
	comps := g["components"].(doc)
	if _, ok := comps["state_checks"]; !ok {
		t.Fatalf("components = %v", comps)
	}
	if _, ok := comps["llm_judge"]; ok {
		t.Fatalf("an unevaluated component is present: %v", comps)
	}

	m := readYAML(t, filepath.Join(top, artifacts.MetricsFile))
	if m["turns"] != 3.0 || m["tool_calls"] != 3.0 || m["outcome"] != "Failed" {
		t.Fatalf("metrics = %v", m)
	}
	usage := m["tool_usage"].([]any)
	want := map[string][3]float64{"confirm_payment": {1, 0, 1}, "list_products": {1, 1, 0}, "place_order": {1, 1, 0}}
	if len(usage) != 3 {
		t.Fatalf("tool_usage = %v", usage)
	}
	for _, u := range usage {
		u := u.(doc)
		w := want[u["tool_name"].(string)]
		if u["call_count"] != w[0] || u["success_count"] != w[1] || u["error_count"] != w[2] {
			t.Fatalf("tool_usage entry %v, want %v", u, w)
		}
		if _, ok := u["total_duration_s"].(float64); !ok {
			t.Fatalf("tool_usage entry %v lacks total_duration_s", u)
		}
	}
	if tok := m["tokens"].(doc)["agent"].(doc); tok["calls"] != 3.0 || tok["retries"] != 0.0 {
		t.Fatalf("agent tokens = %v", tok)
	}
	// No temp files are left behind by the atomic writes.
	for _, dir := range []string{top, a1} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.Name()[0] == '.' {
				t.Fatalf("leftover %s in %s", e.Name(), dir)
			}
		}
	}
}

// A trace check's matched_positions resolve in trajectory.yaml: every event of the
// runner's timeline carries its position there (on its message, or on the tool call
// in the message and in tool_calls), and each position a verdict names is the event
// that decided it.
func TestTraceCheckPositionsResolveInTrajectory(t *testing.T) {
	s := startStack(t, local.StackConfig{})
	out := t.TempDir()
	tk := shopTask(t)
	tk.Grading.Weights["trace_checks"] = 1
	tk.Grading.TraceChecks = &task.TraceChecks{Constraints: []task.TraceConstraint{
		{ID: "pay-after-place", Kind: task.TracePrecedes,
			First: &task.Selector{Event: task.EventToolCall, Tool: "place_order"},
			Then:  &task.Selector{Event: task.EventToolCall, Tool: "confirm_payment"}},
		{ID: "names-the-order", Kind: task.TraceOccurs,
			Match: &task.Selector{Event: task.EventMessage, Role: task.RoleAssistant, ContentMatches: "O-001"}},
	}}
	f := fakeLLM(t, map[string][]fakellm.Reply{"agent": {
		{Content: "Let me look.", ToolCalls: []fakellm.ToolCall{call("c1", "get_customer", `{"customer_id":"C-101"}`), call("c2", "place_order", placeArgs)}},
		{ToolCalls: []fakellm.ToolCall{call("c3", "confirm_payment", `{"order_id":"O-001"}`)}},
		{Content: "O-001 is placed and paid. ###STOP###"},
	}})
	agent, cfg := llmActor(t, f, "agent", nil)
	ac := attempt(s, specFor(s, tk, cfg), agent, nil)
	ac.ArtifactsDir = out
	res := host.RunAttempt(ctxT(t), ac)
	if res.GradedBy != host.GradedByRunner {
		t.Fatalf("attempt: %s", res)
	}
	top := filepath.Join(out, "trials", "shop_orders_02", "0")
	tr := readYAML(t, filepath.Join(top, artifacts.TrajectoryFile))

	// Every event of the trajectory by its position.
	events := map[int]doc{}
	put := func(p any, ev doc) {
		n, ok := p.(float64)
		if !ok {
			return
		}
		if prev, dup := events[int(n)]; dup && prev["call_id"] != ev["call_id"] {
			t.Fatalf("position %v names two events: %v and %v", n, prev, ev)
		}
		events[int(n)] = ev
	}
	for _, m := range tr["messages"].([]any) {
		m := m.(doc)
		put(m["position"], doc{"kind": "message", "role": m["role"], "content": m["content"]})
		for _, c := range asList(m["tool_calls"]) {
			c := c.(doc)
			put(c["position"], doc{"kind": "tool_call", "call_id": c["id"], "tool": c["function"].(doc)["name"]})
		}
	}
	for _, c := range tr["tool_calls"].([]any) {
		c := c.(doc)
		if c["position"] == nil {
			t.Fatalf("recorded call without a position: %v", c)
		}
		put(c["position"], doc{"kind": "tool_call", "call_id": c["call_id"], "tool": c["tool_name"]})
	}
	// user, assistant "Let me look." + 2 calls, assistant + 1 call, assistant: 7 events, 0..6.
	if len(events) != 7 {
		t.Fatalf("%d positioned events, want 7: %v", len(events), events)
	}
	for p := range 7 {
		if _, ok := events[p]; !ok {
			t.Fatalf("no event at position %d: %v", p, events)
		}
	}

	g := readYAML(t, filepath.Join(top, artifacts.GradeFile))
	results := asList(g["trace_checks"])
	if len(results) != 2 {
		t.Fatalf("grade.yaml trace_checks = %v", g["trace_checks"])
	}
	for _, r := range results {
		r := r.(doc)
		if r["passed"] != true {
			t.Fatalf("trace check %v did not pass", r)
		}
		ps := asList(r["matched_positions"])
		if ps == nil {
			ps = asList(r["matchedPositions"])
		}
		if len(ps) == 0 {
			t.Fatalf("trace check %v names no position", r)
		}
		for _, p := range ps {
			ev, ok := events[int(p.(float64))]
			if !ok {
				t.Fatalf("%s: position %v is not in trajectory.yaml", r["id"], p)
			}
			switch r["id"] {
			case "pay-after-place":
				if ev["kind"] != "tool_call" || (ev["tool"] != "place_order" && ev["tool"] != "confirm_payment") {
					t.Errorf("pay-after-place names position %v = %v", p, ev)
				}
			case "names-the-order":
				if ev["kind"] != "message" || ev["role"] != "assistant" || ev["content"] != "O-001 is placed and paid. ###STOP###" {
					t.Errorf("names-the-order names position %v = %v", p, ev)
				}
			}
		}
	}
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}
