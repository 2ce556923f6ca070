package runner_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"tolokaforge.io/operator/api/runnerpb"
)

// benchPython times food_delivery_2's CancelOrder called in-process by plain
// Python on the same orders table, alternating the reason so every call
// changes one record: the baseline of BenchmarkPythonTool.
const benchPython = `
import json, sys, time
sys.path.insert(0, sys.argv[1])
from tau_tools.cancel_order import CancelOrder
n, calls = int(sys.argv[2]), int(sys.argv[3])
orders = {}
for i in range(n):
    oid = "order_%d" % i
    orders[oid] = {"order_id": oid, "user_id": "user_%d" % (i % 500), "status": "Pending",
                   "menu_items_list": [{"menu_item_id": "item_1", "quantity": 1, "price": 1271}],
                   "total_price": 1271, "updated_at": "2025-03-02T13:00:00"}
data = {"orders": orders}
reasons = ["Delivery delay", "Order by mistake"]
lat = []
for i in range(calls):
    t0 = time.perf_counter()
    CancelOrder.invoke(data, order_id="order_%d" % ((i * 7919) % n), reason=reasons[i % 2])
    lat.append(time.perf_counter() - t0)
lat.sort()
print(lat[len(lat) // 2] * 1e6)
`

// BenchmarkPythonTool measures a tau_sync tool call (food_delivery_2's
// cancel_order) through the runner (ExecuteTool over loopback gRPC, the
// trial's Python tool host, one PATCH to a real DB service) against the same
// class called in-process by plain Python on the same table, at 1k and 100k
// records. The point is the ratio and that neither grows with the state.
//
// The in-process figure has no RPC, no process boundary and no DB write, so
// the ratio to it is large; the builtin db_update on the same trial (a Go
// tool making the same one-record PATCH) is reported beside it as the floor
// of any writing tool in the runner.
//
// Metrics: p50-us (runner), python-p50-us, p50/python, builtin-p50-us,
// p50/builtin.
func BenchmarkPythonTool(b *testing.B) {
	needPython(b)
	for _, n := range []int{1000, 100000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			benchPythonTool(b, n)
		})
	}
}

func benchPythonTool(b *testing.B, n int) {
	const calls = 400
	h := startRunner(b, nil, withPython())
	orders := make([]any, n)
	for i := range n {
		oid := fmt.Sprintf("order_%d", i)
		orders[i] = obj{"order_id": oid, "user_id": fmt.Sprintf("user_%d", i%500), "status": "Pending",
			"menu_items_list": []any{obj{"menu_item_id": "item_1", "quantity": 1, "price": 1271}},
			"total_price":     1271, "updated_at": "2025-03-02T13:00:00"}
	}
	src := obj{"toolset": "food_delivery_2", "module_path": "tau_tools.cancel_order", "class_name": "CancelOrder",
		"invocation_style": "tau_sync", "extra": obj{"dict_tables": obj{"orders": "order_id"}}}
	doc := baseTask([]any{obj{"name": "cancel_order", "description": "", "source": src}, tool("db_update")}, nil, obj{"orders": orders})
	doc["initial_state"].(obj)["schemas"] = []any{obj{"table_name": "orders", "primary_key": "order_id"}}
	doc["tool_artifacts"] = foodArtifacts(b)
	id := fmt.Sprintf("bench-py-%d", n)
	h.mustRegister(b, id, doc)
	reasons := []string{"Delivery delay", "Order by mistake"}
	ctx := context.Background()
	run := func(i int, callID string) error {
		r, err := h.c.ExecuteTool(ctx, &runnerpb.ExecuteToolRequest{
			TrialId: id, ToolName: "cancel_order", CallId: callID,
			ArgumentsJson: fmt.Sprintf(`{"order_id":"order_%d","reason":%q}`, (i*7919)%n, reasons[i%2]),
		})
		if err == nil && (r.GetStatus() != stSuccess || r.GetMetrics().GetStateMutations() != 1) {
			err = fmt.Errorf("%s (mutations %d): %s", r.GetStatus(), r.GetMetrics().GetStateMutations(), r.GetErrorMessage())
		}
		return err
	}
	if err := run(1, "warm"); err != nil {
		b.Fatal(err)
	}

	// The floor of any writing tool: the builtin db_update, a Go tool making
	// the same one-record PATCH through the same runner.
	floor := func(i int) error {
		r, err := h.c.ExecuteTool(ctx, &runnerpb.ExecuteToolRequest{
			TrialId: id, ToolName: "db_update", CallId: fmt.Sprintf("f%d", i),
			ArgumentsJson: fmt.Sprintf(`{"table":"orders","filter":{"order_id":"order_%d"},"set":{"reason_for_cancellation":%q}}`, (i*7919)%n, reasons[i%2]),
		})
		if err == nil && r.GetStatus() != stSuccess {
			err = fmt.Errorf("%s: %s", r.GetStatus(), r.GetErrorMessage())
		}
		return err
	}

	b.ResetTimer()
	lat, _ := measure(b, 1, calls*b.N, func(_, i int) error { return run(i+2, fmt.Sprintf("c%d", i)) })
	floorLat, _ := measure(b, 1, calls*b.N, func(_, i int) error { return floor(i) })
	b.StopTimer()

	abs, err := filepath.Abs(foodDir)
	if err != nil {
		b.Fatal(err)
	}
	out, err := exec.Command(debianPython, "-B", "-c", benchPython, abs, strconv.Itoa(n), strconv.Itoa(calls)).Output()
	if err != nil {
		b.Fatalf("plain Python: %v", err)
	}
	pyUS, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	if err != nil {
		b.Fatal(err)
	}
	p50, f50 := us(percentile(lat, 50)), us(percentile(floorLat, 50))
	b.ReportMetric(p50, "p50-us")
	b.ReportMetric(pyUS, "python-p50-us")
	b.ReportMetric(p50/pyUS, "p50/python")
	b.ReportMetric(f50, "builtin-p50-us")
	b.ReportMetric(p50/f50, "p50/builtin")
	fmt.Fprintf(os.Stderr, "python tool, %d records: runner p50 %.0f us, plain Python in-process p50 %.1f us (ratio %.1fx), builtin db_update p50 %.0f us (ratio %.2fx)\n",
		n, p50, pyUS, p50/pyUS, f50, p50/f50)
}
