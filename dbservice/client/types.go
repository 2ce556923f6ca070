package client

import (
	"encoding/json"

	"tolokaforge.io/operator/api/task"
)

// The init payload is declared once, in api/task, where the runner builds it
// from a trial's InitialState; these names keep the client's vocabulary.
type (
	// InitRequest is the body of POST /trials/{id}/init.
	InitRequest = task.DBInit
	// TableSchema declares a table's fields and primary key.
	TableSchema = task.TableSchema
	// UnstableField names a field that stable hashing ignores in every record of a table.
	UnstableField = task.UnstableField
)

// InitResponse answers Init.
type InitResponse struct {
	Status                   string   `json:"status"`
	TrialID                  string   `json:"trial_id"`
	Version                  int64    `json:"version"`
	StableHash               string   `json:"stable_hash"`
	FullHash                 string   `json:"full_hash"`
	InitialHash              string   `json:"initial_hash"`
	TablesInitialized        []string `json:"tables_initialized"`
	SchemasRegistered        int      `json:"schemas_registered"`
	UnstableFieldsRegistered int      `json:"unstable_fields_registered"`
}

// stateResponse answers State. Data maps a table to its JSON array of records.
type stateResponse struct {
	Data       map[string]json.RawMessage `json:"data"`
	Version    int64                      `json:"version"`
	FullHash   string                     `json:"full_hash"`
	StableHash string                     `json:"stable_hash"`
}

// FilteredField is one unstable field removed from a stable view.
type FilteredField struct {
	Table string `json:"table"`
	Field string `json:"field"`
}

// stableStateResponse answers StableState.
type stableStateResponse struct {
	Data           map[string]json.RawMessage `json:"data"`
	Version        int64                      `json:"version"`
	StableHash     string                     `json:"stable_hash"`
	FilteredFields []FilteredField            `json:"filtered_fields"`
}

// HashResponse answers Hash.
type HashResponse struct {
	StableHash string `json:"stable_hash"`
	FullHash   string `json:"full_hash"`
	Version    int64  `json:"version"`
}

// Operation is one PATCH operation: insert {Record}, update {Filter, Set},
// delete {Filter} or upsert {Record, Key}. Use the Insert, Update, Delete and Upsert
// helpers to build them.
type Operation struct {
	Op     string          `json:"op"`
	Record json.RawMessage `json:"record,omitempty"`
	Filter json.RawMessage `json:"filter,omitempty"`
	Set    json.RawMessage `json:"set,omitempty"`
	Key    string          `json:"key,omitempty"`
}

// Insert appends record.
func Insert(record json.RawMessage) Operation { return Operation{Op: "insert", Record: record} }

// Update merges set into every record matching filter.
func Update(filter, set json.RawMessage) Operation {
	return Operation{Op: "update", Filter: filter, Set: set}
}

// Delete removes every record matching filter ({} removes all).
func Delete(filter json.RawMessage) Operation { return Operation{Op: "delete", Filter: filter} }

// PatchRequest is the body of PATCH /trials/{id}/state/{table}. The operations apply
// atomically; IfVersion and ETag (the current full hash) are optional guards.
type PatchRequest struct {
	Operations []Operation `json:"operations"`
	IfVersion  *int64      `json:"if_version,omitempty"`
	ETag       string      `json:"etag,omitempty"`
}

// patchResponse answers Patch.
type patchResponse struct {
	Status       string `json:"status"`
	Version      int64  `json:"version"`
	AffectedRows int    `json:"affected_rows"`
}

// SnapshotResponse answers Snapshot; Replaced is true when the name already existed.
type SnapshotResponse struct {
	Status       string `json:"status"`
	SnapshotName string `json:"snapshot_name"`
	Version      int64  `json:"version"`
	StableHash   string `json:"stable_hash"`
	Replaced     bool   `json:"replaced"`
}

// RestoreResponse answers Restore.
type RestoreResponse struct {
	Status          string `json:"status"`
	RestoredFrom    string `json:"restored_from"`
	Version         int64  `json:"version"`
	SnapshotVersion int64  `json:"snapshot_version"`
	StableHash      string `json:"stable_hash"`
}

// ResetResponse answers Reset.
type ResetResponse struct {
	Status     string `json:"status"`
	Version    int64  `json:"version"`
	StableHash string `json:"stable_hash"`
}

// queryResponse answers Query.
type queryResponse struct {
	Results []json.RawMessage `json:"results"`
	Count   int               `json:"count"`
}

// tableSchemaInfo is one table's schema as the service reports it.
type tableSchemaInfo struct {
	Fields     json.RawMessage `json:"fields"`
	PrimaryKey string          `json:"primary_key"`
}

// schemaResponse answers Schema.
type schemaResponse struct {
	Schemas        map[string]tableSchemaInfo `json:"schemas"`
	UnstableFields []UnstableField            `json:"unstable_fields"`
}

// HealthResponse answers Health.
type HealthResponse struct {
	Status       string `json:"status"`
	Version      string `json:"version"`
	ActiveTrials int    `json:"active_trials"`
}
