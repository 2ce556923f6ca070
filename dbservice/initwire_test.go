package dbservice

import (
	"context"
	"encoding/json"
	"testing"

	"tolokaforge.io/operator/api/task"
)

// TestInitAcceptsTheSharedDeclaration holds the server's strict decoder to
// the one declaration of the init body (task.DBInit): a body with every key
// it declares is accepted, and what it declares is what the service reports
// back. A key added to the declaration without the server learning it fails
// here as an unknown key.
func TestInitAcceptsTheSharedDeclaration(t *testing.T) {
	tests := []struct {
		name                   string
		st                     *task.InitialState
		tables                 []string
		schemas, unstable, pks int
	}{
		{"no initial state", nil, nil, 0, 0, 0},
		{"every key", &task.InitialState{
			Tables:         map[string]json.RawMessage{"orders": json.RawMessage(`[{"id":"O1","ts":"now"}]`), "empty": json.RawMessage(`[]`)},
			Schemas:        []task.TableSchema{{TableName: "orders", Fields: json.RawMessage(`{"id":{"type":"string"}}`), PrimaryKey: "id"}},
			UnstableFields: []task.UnstableField{{TableName: "orders", FieldName: "ts", Reason: task.ReasonTimestamp}},
			Filesystem:     map[string]string{"notes.txt": "not the DB service's"},
		}, []string{"empty", "orders"}, 1, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, Options{})
			ctx := context.Background()
			resp, err := c.Init(ctx, "t1", tt.st.DBInit())
			if err != nil {
				t.Fatalf("init: %v", err)
			}
			if len(resp.TablesInitialized) != len(tt.tables) || resp.SchemasRegistered != tt.schemas || resp.UnstableFieldsRegistered != tt.unstable {
				t.Fatalf("init response %+v, want tables %v, %d schemas, %d unstable fields", resp, tt.tables, tt.schemas, tt.unstable)
			}
			for i, n := range tt.tables {
				if resp.TablesInitialized[i] != n {
					t.Errorf("tables_initialized = %v, want %v", resp.TablesInitialized, tt.tables)
				}
			}
			sc, err := c.Schema(ctx, "t1")
			if err != nil {
				t.Fatalf("schema: %v", err)
			}
			pks := 0
			for _, s := range sc.Schemas {
				if s.PrimaryKey == "id" {
					pks++
				}
			}
			if pks != tt.pks || len(sc.UnstableFields) != tt.unstable {
				t.Fatalf("schema %+v, want %d primary keys and %d unstable fields", sc, tt.pks, tt.unstable)
			}
			if tt.st != nil && sc.UnstableFields[0] != tt.st.UnstableFields[0] {
				t.Errorf("unstable field reported %+v, declared %+v", sc.UnstableFields[0], tt.st.UnstableFields[0])
			}
		})
	}
}
