package pychecks

import (
	"encoding/json"
	"testing"
)

// TestTablesKeylessDict: a custom check sees a keyless dict table as the author's
// dict, keyed by the synthetic key column and without it; other tables as before.
func TestTablesKeylessDict(t *testing.T) {
	got := Tables(map[string]json.RawMessage{
		"users":  json.RawMessage(`[{"__tolokaforge_key__":"noah_1","name":"Noah","address":{"city":"Austin"}},{"__tolokaforge_key__":"mia_2","name":"Mia"}]`),
		"orders": json.RawMessage(`[{"order_id":"#W1","status":"pending"}]`),
		"log":    json.RawMessage(`[{"n":1}]`),
	}, map[string]string{"users": "__tolokaforge_key__", "orders": "order_id"})
	want := `{"log":[{"n":1}],"orders":{"#W1":{"order_id":"#W1","status":"pending"}},"users":{"noah_1":{"name":"Noah","address":{"city":"Austin"}},"mia_2":{"name":"Mia"}}}`
	if string(got) != want {
		t.Fatalf("Tables\n got %s\nwant %s", got, want)
	}
}

// TestTablesImportedDict: as the importer now holds every dict table (the synthetic
// key column beside a field of the record's own that carries the key), a custom check
// sees the dict keyed by the column, the record's own order_id kept as written.
func TestTablesImportedDict(t *testing.T) {
	got := Tables(map[string]json.RawMessage{
		"orders": json.RawMessage(`[{"__tolokaforge_key__":"#W2","order_id":"#W2","status":"cancelled"},{"__tolokaforge_key__":"#W1","order_id":"#W1","status":"pending"}]`),
	}, map[string]string{"orders": "__tolokaforge_key__"})
	want := `{"orders":{"#W2":{"order_id":"#W2","status":"cancelled"},"#W1":{"order_id":"#W1","status":"pending"}}}`
	if string(got) != want {
		t.Fatalf("Tables\n got %s\nwant %s", got, want)
	}
}
