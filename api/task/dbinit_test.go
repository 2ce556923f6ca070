package task

import (
	"encoding/json"
	"testing"
)

// TestDBInitWire pins the init body the runner sends (db-service-wire.md):
// tables always present, schemas and unstable_fields only when declared,
// and the filesystem, which the runner writes itself, never sent.
func TestDBInitWire(t *testing.T) {
	defaulted := &InitialState{}
	defaulted.applyDefaults()
	tests := []struct {
		name string
		st   *InitialState
		want string
	}{
		{"no initial state", nil, `{"tables":{}}`},
		{"nil tables", &InitialState{}, `{"tables":{}}`},
		{"defaults applied", defaulted, `{"tables":{}}`},
		{"everything", &InitialState{
			Tables:         map[string]json.RawMessage{"orders": json.RawMessage(`[{"id":"O1","n":1.0}]`)},
			Schemas:        []TableSchema{{TableName: "orders", Fields: json.RawMessage(`{"id":"string"}`), PrimaryKey: "id"}, {TableName: "bare"}},
			UnstableFields: []UnstableField{{TableName: "orders", FieldName: "ts", Reason: ReasonTimestamp}, {TableName: "orders", FieldName: "k"}},
			Filesystem:     map[string]string{"a.txt": "x"},
		}, `{"tables":{"orders":[{"id":"O1","n":1.0}]},` +
			`"schemas":[{"table_name":"orders","fields":{"id":"string"},"primary_key":"id"},{"table_name":"bare"}],` +
			`"unstable_fields":[{"table_name":"orders","field_name":"ts","reason":"timestamp"},{"table_name":"orders","field_name":"k"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.st.DBInit())
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("init body\n got %s\nwant %s", b, tt.want)
			}
		})
	}
}
