package grading

import (
	"encoding/json"
	"strings"
	"testing"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
)

// Two shapes of a tau-bench retail task's tables, after the agent cancelled the order
// and moved the user to Denver. imported is what the pack importer makes: every dict
// table keyed by the synthetic key column. named is an earlier import's: orders keyed
// by its own order_id, known as a dict only from a Python tool's extra.dict_tables.
const (
	tauUsers = `[{"__tolokaforge_key__":"noah_brown_6181","name":"Noah Brown","address":{"city":"Denver"}},` +
		`{"__tolokaforge_key__":"mia_li_3668","name":"Mia Li","address":{"city":"Boston"}}]`
	tauOrdersImported = `[{"__tolokaforge_key__":"#W2378156","order_id":"#W2378156","user_id":"noah_brown_6181","status":"cancelled"},` +
		`{"__tolokaforge_key__":"#W1","order_id":"#W1","user_id":"mia_li_3668","status":"pending"}]`
	tauOrdersNamed = `[{"order_id":"#W2378156","user_id":"noah_brown_6181","status":"cancelled"},` +
		`{"order_id":"#W1","user_id":"mia_li_3668","status":"pending"}]`
)

type tauShape struct {
	name       string
	orders     string
	ordersPK   string
	dictTables string // extra.dict_tables of the agent's first tool, "" for none
}

var tauShapes = []tauShape{
	{name: "imported", orders: tauOrdersImported, ordersPK: task.DictKeyField},
	{name: "named by a Python tool", orders: tauOrdersNamed, ordersPK: "order_id", dictTables: `{"orders":"order_id","users":"` + task.DictKeyField + `"}`},
}

// tauTask is the shop task with s's tables and grading (a JSON grading config).
func tauTask(t *testing.T, s tauShape, grading string) func(td *task.TaskDescription) {
	return func(td *task.TaskDescription) {
		cfg, err := task.DecodeGradingConfig([]byte(grading))
		if err != nil {
			t.Fatalf("decode grading: %v", err)
		}
		td.Grading = cfg
		td.InitialState = &task.InitialState{
			Tables: map[string]json.RawMessage{"users": json.RawMessage(tauUsers), "orders": json.RawMessage(s.orders)},
			Schemas: []task.TableSchema{{TableName: "users", PrimaryKey: task.DictKeyField},
				{TableName: "orders", PrimaryKey: s.ordersPK}},
		}
		if s.dictTables != "" {
			td.AgentTools[0].Source = &task.ToolSource{Toolset: "retail", ModulePath: "retail_tools.cancel", ClassName: "Cancel",
				InvocationStyle: "tau_sync", Extra: map[string]json.RawMessage{"dict_tables": json.RawMessage(s.dictTables)}}
		}
	}
}

// TestCELSeesEveryDictTable: CEL's db holds every table the pack wrote as a dict as
// the author's dict, keyed, without the synthetic key column, whichever field keys it.
func TestCELSeesEveryDictTable(t *testing.T) {
	for _, s := range tauShapes {
		t.Run(s.name, func(t *testing.T) {
			db := newTestDB(t)
			env := newTrial(t, db, loadShopTask(t, tauTask(t, s, `{"weights":{"custom_checks":1},"custom_checks":{"enabled":true,"checks":[
				{"name":"cancelled","expr":"db.orders['#W2378156'].status == 'cancelled'"},
				{"name":"moved","expr":"db.users['noah_brown_6181'].address.city == 'Denver'"},
				{"name":"own-key","expr":"db.orders['#W1'].order_id == '#W1' && db.orders.size() == 2"},
				{"name":"no-column","expr":"!('__tolokaforge_key__' in db.users['mia_li_3668']) && !('__tolokaforge_key__' in db.orders['#W1'])"},
				{"name":"wrong","expr":"db.users['mia_li_3668'].address.city == 'Denver'"}]}}`)))
			g := mustGrade(t, env, nil)
			assertCustom(t, g.CustomChecks, []*runnerpb.CustomCheckResult{
				{CheckName: "cancelled", Status: "passed", Score: 1},
				{CheckName: "moved", Status: "passed", Score: 1},
				{CheckName: "own-key", Status: "passed", Score: 1},
				{CheckName: "no-column", Status: "passed", Score: 1},
				{CheckName: "wrong", Status: "failed", Message: "the expression evaluated to false"},
			})
		})
	}
}

// TestDBProbesReadDictTablesByKey: on a task with dict tables the probes read the
// author's dicts, evaluated in the runner over the full state (never the service's
// query, which sees lists); TestDBProbes shows a task without them still queries the
// service.
func TestDBProbesReadDictTablesByKey(t *testing.T) {
	for _, s := range tauShapes {
		t.Run(s.name, func(t *testing.T) {
			db := newTestDB(t)
			env := newTrial(t, db, loadShopTask(t, tauTask(t, s, `{"weights":{"state_checks":1},"state_checks":{"db_probes":[
				{"id":"in-denver","query":"$.db.users[?@.address.city == 'Denver']","expect":{"count":1}},
				{"id":"cancelled","query":"$.db.orders['#W2378156'].status","expect":{"equals":["cancelled"]}},
				{"id":"pending","query":"$.db.orders['#W1']","expect":{"equals":[{"order_id":"#W1","user_id":"mia_li_3668","status":"pending"}]}},
				{"id":"no-column","query":"$.db.users['noah_brown_6181'].__tolokaforge_key__","expect":{"absent":true}},
				{"id":"gone","query":"$.db.users['nobody']","expect":{"exists":true}}]}}`)))
			g := mustGrade(t, env, nil)
			want := "DB probes: 4 of 5 probes passed; failed: gone (expected a result, got none)"
			if g.Components.StateChecks != 0.8 || g.Reasons != want {
				t.Fatalf("grade = %v\nwant reasons %s", g, want)
			}
			db.faults.mu.Lock()
			seen := strings.Join(db.faults.seen, "\n")
			db.faults.mu.Unlock()
			if strings.Contains(seen, "/query") || !strings.Contains(seen, "GET /trials/"+env.id+"/state\n") && !strings.HasSuffix(seen, "GET /trials/"+env.id+"/state") {
				t.Fatalf("the probes did not read the state in the runner:\n%s", seen)
			}
		})
	}
}
