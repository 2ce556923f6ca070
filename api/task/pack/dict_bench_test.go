package pack

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"tolokaforge.io/operator/runner/tools/builtin"
)

// retailDB is a tau-bench retail-shaped json_db of users and orders: as dicts
// keyed by id (users' records without their key, orders' with it) or as lists of
// the same records (each user carrying a user_id).
func retailDB(users, orders int, dict bool) []byte {
	us := map[string]any{}
	ul := []any{}
	for i := range users {
		id := fmt.Sprintf("user_%04d", i)
		rec := map[string]any{"name": map[string]any{"first_name": "F", "last_name": fmt.Sprint(i)},
			"address": map[string]any{"address1": fmt.Sprintf("%d Main St", i), "city": "Austin", "zip": "73301"},
			"email":   id + "@example.com", "payment_methods": map[string]any{"pm_" + id: map[string]any{"source": "paypal"}},
			"orders": []string{fmt.Sprintf("#W%07d", 2*i), fmt.Sprintf("#W%07d", 2*i+1)}}
		if dict {
			us[id] = rec
		} else {
			rec["user_id"] = id
			ul = append(ul, rec)
		}
	}
	om := map[string]any{}
	ol := []any{}
	for i := range orders {
		id := fmt.Sprintf("#W%07d", i)
		rec := map[string]any{"order_id": id, "user_id": fmt.Sprintf("user_%04d", i/2), "status": "pending",
			"items": []any{map[string]any{"item_id": fmt.Sprint(i), "price": 19.99}}}
		if dict {
			om[id] = rec
		} else {
			ol = append(ol, rec)
		}
	}
	var db map[string]any
	if dict {
		db = map[string]any{"users": us, "orders": om}
	} else {
		db = map[string]any{"users": ul, "orders": ol}
	}
	b, _ := json.Marshal(db)
	return b
}

// BenchmarkImportDictTables: `pack import` of a 500-user / 1,000-order project
// whose tables are dicts (users without their key: the synthetic key column)
// against the same records as list tables, measured in the same run.
//
// Metrics: dict-ms, list-ms, dict/list.
func BenchmarkImportDictTables(b *testing.B) {
	dirs := map[bool]string{}
	for _, dict := range []bool{true, false} {
		dirs[dict] = writePack(b, fmt.Sprintf("retail-%v", dict), map[string]string{
			"task.yaml": minimalTask + "initial_state: {json_db: db.json}\n",
			"db.json":   string(retailDB(500, 1000, dict)),
		})
	}
	run := func(dict bool) time.Duration {
		start := time.Now()
		if _, err := Convert(dirs[dict], Options{Builtins: builtin.Catalog{}}); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	run(true)
	run(false)
	var dictT, listT time.Duration
	b.ResetTimer()
	for range b.N {
		// Interleaved, so drift on a loaded machine hits both alike.
		for range 5 {
			dictT += run(true)
			listT += run(false)
		}
	}
	b.StopTimer()
	n := float64(5 * b.N)
	dms, lms := float64(dictT.Microseconds())/1000/n, float64(listT.Microseconds())/1000/n
	b.ReportMetric(dms, "dict-ms")
	b.ReportMetric(lms, "list-ms")
	b.ReportMetric(dms/lms, "dict/list")
	fmt.Fprintf(os.Stderr, "import of 500 users / 1,000 orders: dict tables %.1f ms, list tables %.1f ms (ratio %.2fx)\n", dms, lms, dms/lms)
}
