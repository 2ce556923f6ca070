package pack

import (
	"strings"
	"testing"

	"tolokaforge.io/operator/api/canonical"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner/tools/builtin"
)

// TestImportKeylessDictTable: a dict table whose records do not carry their key
// (tau-bench's users) imports unchanged: each record gets the synthetic key column
// holding its dict key, which is the table's primary key; a table whose records carry
// their key (orders' order_id) gets the column too, its own field kept as written, so
// the DB service knows every dict table by its primary key. The canonical hash of two
// imports is equal exactly when the author's dicts are equal: the same records under
// other keys hash differently.
func TestImportKeylessDictTable(t *testing.T) {
	users := `{"noah_brown_6181": {"name": "Noah", "address": {"city": "Austin"}}, "mia_li_3668": {"name": "Mia", "address": {"city": "Boston"}}}`
	orders := `{"#W1": {"order_id": "#W1", "status": "pending"}}`
	imp := func(t *testing.T, users string) (string, *task.InitialState) {
		t.Helper()
		dir := writePack(t, "tau", map[string]string{
			"task.yaml": minimalTask + "initial_state: {json_db: db.json}\n",
			"db.json":   `{"users": ` + users + `, "orders": ` + orders + `}`,
		})
		conv, err := Convert(dir, Options{Builtins: builtin.Catalog{}})
		if err != nil {
			t.Fatal(err)
		}
		h, err := canonical.HashJSON(conv.Tables)
		if err != nil {
			t.Fatal(err)
		}
		return h, conv.Description.InitialState
	}
	h1, st := imp(t, users)
	if got, want := string(st.Tables["users"]), `[{"__tolokaforge_key__":"noah_brown_6181","name":"Noah","address":{"city":"Austin"}},{"__tolokaforge_key__":"mia_li_3668","name":"Mia","address":{"city":"Boston"}}]`; got != want {
		t.Fatalf("users\n got %s\nwant %s", got, want)
	}
	if got := string(st.Tables["orders"]); got != `[{"__tolokaforge_key__":"#W1","order_id":"#W1","status":"pending"}]` {
		t.Fatalf("orders: %s", got)
	}
	pks := map[string]string{}
	for _, s := range st.Schemas {
		pks[s.TableName] = s.PrimaryKey
	}
	if pks["users"] != task.DictKeyField || pks["orders"] != task.DictKeyField {
		t.Fatalf("primary keys %v", pks)
	}
	if h2, _ := imp(t, users); h2 != h1 {
		t.Fatalf("the same dicts hash differently: %s %s", h1, h2)
	}
	swapped := strings.NewReplacer("noah_brown_6181", "mia_li_3668", "mia_li_3668", "noah_brown_6181").Replace(users)
	if h3, _ := imp(t, swapped); h3 == h1 {
		t.Fatalf("the same records under other keys hash equal (%s): the keys were lost", h1)
	}
}
