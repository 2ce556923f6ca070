package grading

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/theory/jsonpath"

	"tolokaforge.io/operator/api/canonical"
	"tolokaforge.io/operator/api/task"
)

// retailState is a tau-bench retail-shaped stable state as the DB service holds it
// after import: users, keyed by user id, whose records do not carry it, and orders,
// which carry order_id; both hold their dict key in the synthetic key column.
const retailState = `{
 "users": [
  {"__tolokaforge_key__": "noah_brown_6181", "name": "Noah Brown", "address": {"city": "Austin"}, "orders": ["#W2378156"]},
  {"__tolokaforge_key__": "mia_li_3668", "name": "Mia Li", "address": {"city": "Boston"}, "orders": []}
 ],
 "orders": [{"__tolokaforge_key__": "#W2378156", "order_id": "#W2378156", "user_id": "noah_brown_6181", "status": "pending"}],
 "log": [{"n": 1}]
}`

var retailKeys = map[string]string{"users": task.DictKeyField, "orders": task.DictKeyField}

// TestJSONPathAddressesDictTablesByKey: a JSONPath written against the author's
// dicts reads them by key, the synthetic key column invisible; a list table stays a list.
func TestJSONPathAddressesDictTablesByKey(t *testing.T) {
	st := stateOf(t, retailState)
	root := st.jsonPathRoot(retailKeys)
	for _, c := range []struct {
		path, op, operand string
		pass              bool
		msg               string
	}{
		{path: "$.db.users['noah_brown_6181'].address.city", op: "equals", operand: `"Austin"`, pass: true},
		{path: "$.db.orders['#W2378156'].status", op: "equals", operand: `"pending"`, pass: true},
		{path: "$.db.users['mia_li_3668'].name", op: "equals", operand: `"Mia Li"`, pass: true},
		{path: "$.db.users['noah_brown_6181']." + task.DictKeyField, op: "absent", operand: `true`, pass: true},
		{path: "$.db.orders['#W2378156']." + task.DictKeyField, op: "absent", operand: `true`, pass: true},
		{path: "$.db.orders['#W2378156'].order_id", op: "equals", operand: `"#W2378156"`, pass: true},
		{path: "$.db.users[*]", op: "count", operand: `2`, pass: true},
		{path: "$.db.log[0].n", op: "equals", operand: `1`, pass: true},
		{path: "$.db.users[0].name", op: "exists", operand: `true`, pass: false},
	} {
		t.Run(c.path, func(t *testing.T) {
			var check task.JSONPathCheck
			doc := `{"path":` + mustQuote(c.path) + `,"` + c.op + `":` + c.operand + `}`
			if err := json.Unmarshal([]byte(doc), &check); err != nil {
				t.Fatal(err)
			}
			p, err := jsonpath.Parse(c.path)
			if err != nil {
				t.Fatal(err)
			}
			ok, msg := checkPath(&check, p, root, nil, nil)
			if ok != c.pass {
				t.Fatalf("%s %s %s: passed=%v (%s), want %v", c.path, c.op, c.operand, ok, msg, c.pass)
			}
		})
	}
	// A table whose records cannot be keyed (a duplicate key) stays a list, not a
	// dict silently missing a record.
	dup := stateOf(t, `{"orders":[{"__tolokaforge_key__":"a","n":1},{"__tolokaforge_key__":"a","n":2}]}`)
	if _, ok := dup.jsonPathRoot(retailKeys).(map[string]any)["db"].(map[string]any)["orders"].([]any); !ok {
		t.Fatalf("a table with a duplicate key was not kept as a list: %v", dup.jsonPathRoot(retailKeys))
	}
}

func mustQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestStateDiffNamesDictRecordsByKey: a modified record of a keyless dict table is
// named by its dict key, added and removed records show without the synthetic key
// column, and diff_lines render the table as the author's dict.
func TestStateDiffNamesDictRecordsByKey(t *testing.T) {
	golden := stateOf(t, retailState)
	trial := stateOf(t, strings.NewReplacer(`"city": "Austin"`, `"city": "Denver"`, `"status": "pending"`, `"status": "cancelled"`,
		`{"__tolokaforge_key__": "mia_li_3668", "name": "Mia Li", "address": {"city": "Boston"}, "orders": []}`,
		`{"__tolokaforge_key__": "zoe_9", "name": "Zoe"}`).Replace(retailState))
	pairing := func(table string, _ []canonical.Value) []string {
		if k := retailKeys[table]; k != "" {
			return []string{k}
		}
		return nil
	}
	d := computeDiff(golden, trial, pairing)
	d.authorShape(golden, trial, retailKeys)
	out := string(d.marshal(1000))
	for _, want := range []string{
		`"modified":[{"fields":[{"actual":{"city":"Denver"},"expected":{"city":"Austin"},"field":"address"}],"key":"noah_brown_6181"}]`,
		`"modified":[{"fields":[{"actual":"cancelled","expected":"pending","field":"status"}],"key":"#W2378156"}]`,
		`"   \"orders\": {"`,
		`"     \"#W2378156\": {"`,
		`"added":[{"name":"Zoe"}]`,
		`"removed":[{"address":{"city":"Boston"},"name":"Mia Li","orders":[]}]`,
		`"summary":"hash mismatch (orders: 0 added, 0 removed, 1 modified; users: 1 added, 1 removed, 1 modified)"`,
		`"   \"users\": {"`,
		`"     \"noah_brown_6181\": {"`,
		`"+    \"zoe_9\": {"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("state diff lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, task.DictKeyField) {
		t.Errorf("the synthetic key column reached the state diff:\n%s", out)
	}
}

// TestKeylessDictTableForCEL: a table keyed by the synthetic key column is a dict
// table even with no Python tool naming it, and CEL's db (authorTable) holds it as
// the author's dict; a table with a repeated key stays as held.
func TestKeylessDictTableForCEL(t *testing.T) {
	td := &task.TaskDescription{InitialState: &task.InitialState{Schemas: []task.TableSchema{
		{TableName: "users", PrimaryKey: task.DictKeyField}, {TableName: "orders", PrimaryKey: "order_id"}}}}
	if got := dictTableKeys(td); len(got) != 1 || got["users"] != task.DictKeyField {
		t.Fatalf("dictTableKeys = %v, want only users keyed by the synthetic column", got)
	}
	st := stateOf(t, retailState)
	got := string(canonical.Marshal(authorTable(st.tables["users"], task.DictKeyField)))
	want := `{"mia_li_3668":{"address":{"city":"Boston"},"name":"Mia Li","orders":[]},"noah_brown_6181":{"address":{"city":"Austin"},"name":"Noah Brown","orders":["#W2378156"]}}`
	if got != want {
		t.Fatalf("authorTable\n got %s\nwant %s", got, want)
	}
	dup := stateOf(t, `{"users":[{"__tolokaforge_key__":"a"},{"__tolokaforge_key__":"a"}]}`)
	if got := string(canonical.Marshal(authorTable(dup.tables["users"], task.DictKeyField))); got != `[{"__tolokaforge_key__":"a"},{"__tolokaforge_key__":"a"}]` {
		t.Fatalf("a repeated key: %s", got)
	}
}
