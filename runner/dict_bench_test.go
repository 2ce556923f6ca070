package runner_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"testing"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
)

// moveTool updates a user's city over either shape of the users table: the dict
// tau-bench writes (users[user_id]) or a list of records carrying user_id.
const moveTool = `
class Move:
    @staticmethod
    def invoke(data, user_id, city):
        users = data["users"]
        if isinstance(users, dict):
            user = users[user_id]
        else:
            user = next(u for u in users if u["user_id"] == user_id)
        user["address"]["city"] = city
        return "moved"
`

// BenchmarkPythonToolDictTable: the per-call cost of a tau_sync tool over a dict
// table whose records do not carry their key (the synthetic key column stripped
// before the tool sees a record and added to its change) against the same call over
// the same records as a list table keyed by user_id, in one run, at 500 users.
//
// Metrics: dict-p50-us, list-p50-us, dict/list.
func BenchmarkPythonToolDictTable(b *testing.B) {
	needPython(b)
	const users, calls = 500, 300
	h := startRunner(b, nil, withPython())
	artifacts := obj{"bench_tools/__init__.py": "", "bench_tools/move.py": base64.StdEncoding.EncodeToString([]byte(moveTool))}
	register := func(id string, dict bool) {
		recs := make([]any, users)
		for i := range users {
			r := obj{"name": fmt.Sprint(i), "address": obj{"city": "Austin", "zip": "73301"}, "orders": []any{fmt.Sprintf("#W%d", i)}}
			if dict {
				r[task.DictKeyField] = fmt.Sprintf("user_%04d", i)
			} else {
				r["user_id"] = fmt.Sprintf("user_%04d", i)
			}
			recs[i] = r
		}
		src := obj{"toolset": "bench", "module_path": "bench_tools.move", "class_name": "Move", "invocation_style": "tau_sync"}
		pk := "user_id"
		if dict {
			src["extra"] = obj{"dict_tables": obj{"users": task.DictKeyField}}
			pk = task.DictKeyField
		}
		doc := baseTask([]any{obj{"name": "move", "description": "", "source": src}}, nil, obj{"users": recs})
		doc["initial_state"].(obj)["schemas"] = []any{obj{"table_name": "users", "primary_key": pk}}
		doc["tool_artifacts"] = artifacts
		h.mustRegister(b, id, doc)
	}
	register("bench-dict", true)
	register("bench-list", false)
	ctx := context.Background()
	cities := []string{"Denver", "Boston"}
	call := func(id string, i int) error {
		r, err := h.c.ExecuteTool(ctx, &runnerpb.ExecuteToolRequest{TrialId: id, ToolName: "move", CallId: fmt.Sprintf("c%d", i),
			ArgumentsJson: fmt.Sprintf(`{"user_id":"user_%04d","city":%q}`, (i*7919)%users, cities[i%2])})
		if err == nil && (r.GetStatus() != stSuccess || r.GetMetrics().GetStateMutations() != 1) {
			err = fmt.Errorf("%s (mutations %d): %s", r.GetStatus(), r.GetMetrics().GetStateMutations(), r.GetErrorMessage())
		}
		return err
	}
	for _, id := range []string{"bench-dict", "bench-list"} {
		if err := call(id, -1+users); err != nil {
			b.Fatalf("%s: %v", id, err)
		}
	}
	b.ResetTimer()
	dictLat, _ := measure(b, 1, calls*b.N, func(_, i int) error { return call("bench-dict", i) })
	listLat, _ := measure(b, 1, calls*b.N, func(_, i int) error { return call("bench-list", i) })
	b.StopTimer()
	d50, l50 := us(percentile(dictLat, 50)), us(percentile(listLat, 50))
	b.ReportMetric(d50, "dict-p50-us")
	b.ReportMetric(l50, "list-p50-us")
	b.ReportMetric(d50/l50, "dict/list")
	fmt.Fprintf(os.Stderr, "python tool over %d users: dict table (synthetic key) p50 %.0f us, list table p50 %.0f us (ratio %.2fx)\n", users, d50, l50, d50/l50)
}
