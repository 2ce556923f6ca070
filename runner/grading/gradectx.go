package grading

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"tolokaforge.io/operator/api/canonical"
	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner/grading/judge"
	"tolokaforge.io/operator/runner/grading/timeline"
)

// gradeCtx is one Grade call's working set, shared by the evaluators.
type gradeCtx struct {
	opts *options
	env  Env
	id   string
	task *task.TaskDescription
	cfg  *task.GradingConfig

	timeline        *timeline.Timeline
	transcriptEmpty bool
	scope           map[string]bool // requested components; nil = all
	populated       []scoredKey
	golden          []string // resolved golden-action tool names
	plan            *plan    // what preflight compiled
	ledger          *ledger

	synced    bool
	trialHash string // the trial's stable hash as the hash evaluator read it
	trial     *stableState
	stateDiff string
	notes     []string // reason lines beside the segments (hash_weight not consulted)

	// What trace_checks and custom_checks report beside their verdicts.
	traceResults    []*runnerpb.TraceConstraintResult
	traceSummary    *runnerpb.TraceChecksSummary
	traceGateFailed bool
	customResults   []*runnerpb.CustomCheckResult
	judge           *judge.Outcome // set when the judge ran (eval_judge.go)
}

func (g *gradeCtx) wants(component string) bool {
	return g.scope == nil || g.scope[component]
}

func (g *gradeCtx) initialState() *task.InitialState { return g.task.InitialState }

// pairingFields names the record fields that pair a table's records in the state
// diff. state_checks.id_fields is the author's statement of record identity, so it
// comes first, for every table whose records carry all of its fields (a table that
// lacks them, e.g. a log with no such key, keeps its own identity); then the table's
// declared primary key; then "id" when its records carry one. Without it a record
// whose storage key the trial assigned differently (an auto id) shows as one record
// removed and one added instead of one modified record.
func (g *gradeCtx) pairingFields(table string, records []canonical.Value) []string {
	if sc := g.cfg.StateChecks; sc != nil && len(sc.IDFields) > 0 && anyCarries(records, sc.IDFields) {
		return sc.IDFields
	}
	if st := g.task.InitialState; st != nil {
		for _, s := range st.Schemas {
			if s.TableName == table {
				if s.PrimaryKey == "" {
					return []string{task.DefaultPrimaryKey}
				}
				return []string{s.PrimaryKey}
			}
		}
	}
	if anyCarries(records, []string{"id"}) {
		return []string{"id"}
	}
	return nil
}

// anyCarries reports whether some record is an object holding every one of fields.
func anyCarries(records []canonical.Value, fields []string) bool {
	for _, r := range records {
		o, ok := r.(canonical.Object)
		if !ok {
			continue
		}
		all := true
		for _, f := range fields {
			if !o.Has(f) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

func (g *gradeCtx) stateChecks() *task.StateChecks {
	if g.cfg.StateChecks == nil || !g.wants(task.ComponentStateChecks) {
		return nil
	}
	return g.cfg.StateChecks
}

// keysFor returns the populated keys an evaluator accounts for.
func (g *gradeCtx) keysFor(evaluator string) []string {
	var out []string
	for _, k := range g.populated {
		if k.evaluator == evaluator {
			out = append(out, k.key)
		}
	}
	return out
}

// syncState writes stateful tool servers' tables into the DB service once, before the
// first read of state, so hashes and assertions see the truth.
func (g *gradeCtx) syncState(ctx context.Context) error {
	if g.synced {
		return nil
	}
	if err := g.env.SyncFromTools(ctx); err != nil {
		return hashFailed("StateSyncError: writing the tool servers' tables into the DB service", err)
	}
	g.synced = true
	return nil
}

// trialState returns the trial's stable state, read once. It must only be called while
// the DB holds the agent's state (never during golden replay).
func (g *gradeCtx) trialState(ctx context.Context) (*stableState, error) {
	if g.trial != nil {
		return g.trial, nil
	}
	if err := g.syncState(ctx); err != nil {
		return nil, err
	}
	st, err := readStableState(ctx, g.env, "trial's")
	if err != nil {
		return nil, err
	}
	if g.trialHash != "" && st.hash != g.trialHash {
		// Golden replay ran in between: the restore did not give the agent's state back.
		return nil, hashFailed(fmt.Sprintf("RestoreMismatch: after restoring %s the trial's stable state hashes to %s, not the %s it held before golden replay",
			snapshotName, st.hash, g.trialHash), nil)
	}
	g.trial = st
	return st, nil
}

// stableState is a stable (unstable fields removed) state as canonical values.
type stableState struct {
	hash   string
	names  []string // sorted
	tables map[string]canonical.Value
	root   any // {"db": tables} as plain Go values, built on first JSONPath use
}

func readStableState(ctx context.Context, env Env, which string) (*stableState, error) {
	resp, err := env.DB().StableState(ctx, env.TrialID())
	if err != nil {
		return nil, hashFailed(fmt.Sprintf("StableStateError: reading the %s stable state", which), err)
	}
	st := &stableState{hash: resp.StableHash, tables: make(map[string]canonical.Value, len(resp.Data))}
	for name, raw := range resp.Data {
		v, err := canonical.Parse(bytes.TrimSpace(raw))
		if err != nil {
			return nil, hashFailed(fmt.Sprintf("StableStateError: the %s stable table %q does not parse", which, name), err)
		}
		st.tables[name] = v
		st.names = append(st.names, name)
	}
	sort.Strings(st.names)
	return st, nil
}

// object returns the state as one canonical object {table: records}.
func (s *stableState) object() canonical.Object {
	ms := make([]canonical.Member, 0, len(s.names))
	for _, n := range s.names {
		ms = append(ms, canonical.Member{Key: n, Value: s.tables[n]})
	}
	return canonical.NewObject(ms...)
}

// jsonPathRoot is the document JSONPath checks query: {db: <stable tables>}. A table
// the pack wrote as a dict of records (keys: table -> key field, dictTableKeys) is
// the author's dict again, keyed by each record's key and without the synthetic key
// column (task.DictKeyField), so $.db.orders['#W2378156'].status reads as written.
func (s *stableState) jsonPathRoot(keys map[string]string) any {
	if s.root == nil {
		s.root = authorRoot(s.tables, keys)
	}
	return s.root
}

// authorRoot is {db: tables} as plain Go values (canonical.ToAny), each dict table
// (keys, dictTableKeys) rebuilt as the author's dict by dictView.
func authorRoot(tables map[string]canonical.Value, keys map[string]string) map[string]any {
	db := make(map[string]any, len(tables))
	for n, v := range tables {
		plain := canonical.ToAny(v)
		if key := keys[n]; key != "" {
			if d, ok := dictView(plain, key); ok {
				plain = d
			}
		}
		db[n] = plain
	}
	return map[string]any{"db": db}
}

// dictView is a list table's records as the dict they were authored as: keyed by
// the key field's text, which every record must carry once; ok is false otherwise.
func dictView(table any, key string) (map[string]any, bool) {
	recs, ok := table.([]any)
	if !ok {
		return nil, false
	}
	out := make(map[string]any, len(recs))
	for _, r := range recs {
		rec, ok := r.(map[string]any)
		if !ok {
			return nil, false
		}
		var k string
		switch kv := rec[key].(type) {
		case string:
			k = kv
		case json.Number:
			k = kv.String()
		default:
			return nil, false
		}
		if _, dup := out[k]; dup {
			return nil, false
		}
		if key == task.DictKeyField {
			trimmed := make(map[string]any, len(rec)-1)
			for f, v := range rec {
				if f != task.DictKeyField {
					trimmed[f] = v
				}
			}
			rec = trimmed
		}
		out[k] = rec
	}
	return out, true
}
