package dbservice

import (
	"fmt"
	"net/http"
	"slices"
	"sync"

	"tolokaforge.io/operator/api/canonical"
)

// trial is one trial's database. mu serializes every request on it.
type trial struct {
	mu   sync.Mutex
	id   string
	gone bool // deleted while a request waited for mu

	schemas    []tableSchema
	unstable   []unstableField
	unstableBy map[string][]string
	pkBy       map[string]string

	initial   *dbState
	current   *dbState
	version   int64
	snapshots map[string]*snapshot

	// pins counts the references to each state held by initial and the snapshots, and
	// pinnedBytes totals the bytes of the distinct pinned states, so the trial's memory
	// footprint is known in O(1) after any change.
	pins        map[*dbState]int
	pinnedBytes int64
	// accounted is the footprint charged to the store.
	accounted int64
}

func (t *trial) pin(s *dbState) {
	if t.pins[s] == 0 {
		t.pinnedBytes += s.bytes
	}
	t.pins[s]++
}

func (t *trial) unpin(s *dbState) {
	if t.pins[s]--; t.pins[s] <= 0 {
		delete(t.pins, s)
		t.pinnedBytes -= s.bytes
	}
}

// footprint is the canonical bytes the trial would hold with cur as its current state:
// states are immutable and share records, so this over-counts shared records and never
// under-counts.
func (t *trial) footprint(cur *dbState) int64 {
	if t.pins[cur] > 0 {
		return t.pinnedBytes
	}
	return t.pinnedBytes + cur.bytes
}

// checkTrialLimits refuses a current state over the per-trial limits.
func checkTrialLimits(s *dbState, l *Limits) *Error {
	switch {
	case len(s.tables) > l.MaxTablesPerTrial:
		return errTrialLimit("max_tables_per_trial", int64(l.MaxTablesPerTrial), int64(len(s.tables)), "tables")
	case s.records > l.MaxRecordsPerTrial:
		return errTrialLimit("max_records_per_trial", int64(l.MaxRecordsPerTrial), int64(s.records), "records")
	case s.bytes > l.MaxTrialBytes:
		return errTrialLimit("max_trial_bytes", l.MaxTrialBytes, s.bytes, "bytes of records")
	}
	return nil
}

type snapshot struct {
	state   *dbState
	version int64
}

// newTrial builds a trial from a checked init request. It runs before the trial is
// published, so a failure leaves nothing behind.
func newTrial(id string, req *initRequest) (*trial, *Error) {
	t := &trial{
		id:         id,
		schemas:    req.schemas,
		unstable:   req.unstable,
		unstableBy: map[string][]string{},
		pkBy:       map[string]string{},
		version:    1,
		snapshots:  map[string]*snapshot{},
		pins:       map[*dbState]int{},
	}
	for _, uf := range req.unstable {
		t.unstableBy[uf.Table] = append(t.unstableBy[uf.Table], uf.Field)
	}
	for _, s := range req.schemas {
		if s.PrimaryKey != "" {
			t.pkBy[s.Name] = s.PrimaryKey
		}
	}
	tables := make(map[string]*table, req.tables.Len())
	for name, v := range req.tables.All() {
		arr := v.(canonical.Array)
		recs := make([]*record, len(arr))
		uf := t.unstableBy[name]
		pk := t.pkBy[name]
		var seen map[string]int
		if pk != "" {
			seen = make(map[string]int, len(arr))
		}
		for i, r := range arr {
			obj := r.(canonical.Object)
			if pk != "" {
				if kv, ok := obj.Get(pk); ok {
					if key, ok := canonical.EqualityKey(kv); ok {
						if j, dup := seen[key]; dup {
							return nil, errValidation(fmt.Sprintf("$.tables[%s][%d]", quote(name), i),
								"duplicate primary key %s=%s (also at index %d)", pk, canonical.Marshal(kv), j)
						}
						seen[key] = i
					}
				}
			}
			recs[i] = newRecord(obj, uf)
		}
		tables[name] = newTable(recs)
	}
	t.initial = newState(tables, dictTables(req.schemas, t.unstableBy))
	t.current = t.initial
	t.pin(t.initial)
	t.accounted = t.footprint(t.current)
	return t, nil
}

// dictTables names the tables whose primary key is dictKeyField: the pack wrote them
// as dicts keyed by id, so their records' order carries nothing the author wrote. The
// value is false when the table declares the key itself unstable: the stable form
// then holds no key to order by.
func dictTables(schemas []tableSchema, unstableBy map[string][]string) map[string]bool {
	var out map[string]bool
	for _, s := range schemas {
		if s.PrimaryKey != dictKeyField {
			continue
		}
		if out == nil {
			out = map[string]bool{}
		}
		out[s.Name] = !slices.Contains(unstableBy[s.Name], dictKeyField)
	}
	return out
}

// keyField is the field upsert matches on by default and the chunk indexes cover.
func (t *trial) keyField(table string) string {
	if pk := t.pkBy[table]; pk != "" {
		return pk
	}
	return "id"
}

func (t *trial) unstableFor(table string) []string { return t.unstableBy[table] }

// filteredFields lists the declared unstable fields whose table exists in s.
func (t *trial) filteredFields(s *dbState) []unstableField {
	var out []unstableField
	for _, uf := range t.unstable {
		if _, ok := s.tables[uf.Table]; ok {
			out = append(out, uf)
		}
	}
	return out
}

func errDuplicateKey(trialID, table, pk string, v canonical.Value, index int) *Error {
	return newError(http.StatusConflict, errTypeDuplicateKey,
		map[string]any{"trial_id": trialID, "table": table, "primary_key": pk, "value": string(canonical.Marshal(v)), "index": index},
		"operations[%d]: table %q already holds a record with %s=%s", index, table, pk, canonical.Marshal(v))
}

// checkDuplicate fails when rec's primary-key value is already present in the table.
func (t *trial) checkDuplicate(tx *tableTxn, table, pk string, rec canonical.Object, index int) *Error {
	kv, ok := rec.Get(pk)
	if !ok {
		return nil
	}
	if len(tx.find(canonical.NewObject(canonical.Member{Key: pk, Value: kv}), pk, 1)) > 0 {
		return errDuplicateKey(t.id, table, pk, kv, index)
	}
	return nil
}

// applyPatch runs ops against a private copy of the table and returns the state that
// would result; t is not modified. Missing tables are created only when the first
// operation inserts or upserts.
func (t *trial) applyPatch(tableName string, ops []operation) (*dbState, int, *Error) {
	cur := t.current
	tbl, exists := cur.tables[tableName]
	if !exists {
		if first := ops[0].op; first != "insert" && first != "upsert" {
			return nil, 0, errTableNotFound(t.id, tableName)
		}
		tbl = emptyTable
	}
	tx := beginTable(tbl)
	keyField := t.keyField(tableName)
	pk := t.pkBy[tableName]
	uf := t.unstableFor(tableName)
	affected := 0
	for i, op := range ops {
		switch op.op {
		case "insert":
			if pk != "" {
				if e := t.checkDuplicate(tx, tableName, pk, op.record, i); e != nil {
					return nil, 0, e
				}
			}
			tx.appendRecord(newRecord(op.record, uf))
			affected++
		case "update":
			locs := tx.find(op.filter, keyField, 0)
			for _, l := range locs {
				tx.replace(l, newRecord(tx.get(l).val.Merge(op.set), uf))
			}
			affected += len(locs)
		case "delete":
			locs := tx.find(op.filter, keyField, 0)
			tx.remove(locs)
			affected += len(locs)
		case "upsert":
			key := op.key
			if key == "" {
				key = keyField
			}
			kv, ok := op.record.Get(key)
			if !ok {
				return nil, 0, errInvalidOp(i, "upsert record lacks its key field %q", key)
			}
			locs := tx.find(canonical.NewObject(canonical.Member{Key: key, Value: kv}), keyField, 1)
			if len(locs) > 0 {
				tx.replace(locs[0], newRecord(tx.get(locs[0]).val.Merge(op.record), uf))
			} else {
				if pk != "" && pk != key {
					if e := t.checkDuplicate(tx, tableName, pk, op.record, i); e != nil {
						return nil, 0, e
					}
				}
				tx.appendRecord(newRecord(op.record, uf))
			}
			affected++
		default:
			// decodeOp admits only the four ops above.
			return nil, 0, errInvalidOp(i, "unknown op %q", op.op)
		}
	}
	next := tx.commit()
	switch {
	case next != nil:
		return cur.with(tableName, next), affected, nil
	case !exists:
		return cur.with(tableName, &table{}), affected, nil
	default:
		return cur, affected, nil
	}
}

// stableIsFull reports whether stable filtering leaves s unchanged because none of its
// tables declares unstable fields.
func (t *trial) stableIsFull(s *dbState) bool {
	for name := range t.unstableBy {
		if _, ok := s.tables[name]; ok {
			return false
		}
	}
	return true
}

// takeSnapshot saves the current state under name and reports whether it replaced one.
// It copies nothing: states are immutable.
func (t *trial) takeSnapshot(name string) (replaced bool) {
	old, replaced := t.snapshots[name]
	t.pin(t.current)
	if replaced {
		t.unpin(old.state)
	}
	t.snapshots[name] = &snapshot{state: t.current, version: t.version}
	return replaced
}

func (t *trial) deleteSnapshot(name string) bool {
	old, ok := t.snapshots[name]
	if ok {
		delete(t.snapshots, name)
		t.unpin(old.state)
	}
	return ok
}

// restore makes snapshot name current (version +1).
func (t *trial) restore(name string) (*snapshot, *Error) {
	snap, ok := t.snapshots[name]
	if !ok {
		return nil, errSnapshotNotFound(t.id, name)
	}
	t.current = snap.state
	t.version++
	return snap, nil
}

// reset makes the initial state current (version +1); snapshots stay.
func (t *trial) reset() {
	t.current = t.initial
	t.version++
}

// patch applies ops to table atomically and bumps the version on success. A result over
// the trial's limits, or one the store has no room for, is refused with nothing changed.
func (t *trial) patch(table string, ops []operation, l *Limits, st *store) (int, *Error) {
	next, n, e := t.applyPatch(table, ops)
	if e != nil {
		return 0, e
	}
	if next != t.current {
		if e := checkTrialLimits(next, l); e != nil {
			return 0, e
		}
		// The footprint over-counts records shared with pinned states, so a change that
		// does not grow the current state is never refused for the process total.
		if next.bytes <= t.current.bytes {
			t.forceCharge(st, t.footprint(next))
		} else if e := t.recharge(st, t.footprint(next)); e != nil {
			return 0, e
		}
	}
	t.current = next
	t.version++
	return n, nil
}

// recharge moves the trial's charge in st to foot, failing when st has no room.
func (t *trial) recharge(st *store, foot int64) *Error {
	if e := st.charge(foot - t.accounted); e != nil {
		return e
	}
	t.accounted = foot
	return nil
}

// settle updates the trial's charge after a change that cannot grow its footprint.
func (t *trial) settle(st *store) { t.forceCharge(st, t.footprint(t.current)) }

func (t *trial) forceCharge(st *store, foot int64) {
	st.bytes.Add(foot - t.accounted)
	t.accounted = foot
}
