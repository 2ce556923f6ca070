package grading

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"tolokaforge.io/operator/api/canonical"
	"tolokaforge.io/operator/api/task"
)

// fieldDiff is one field of a paired record that differs. A field missing on one side
// is reported as null there, with absentIn naming the side.
type fieldDiff struct {
	field            string
	expected, actual canonical.Value
	absentIn         string // "", "expected" or "actual"
}

type modifiedRecord struct {
	key    canonical.Value
	fields []fieldDiff
}

// tableDiff compares one table: added = records only the trial holds, removed = records
// only the golden state holds, modified = paired records whose fields differ.
type tableDiff struct {
	added, removed []canonical.Value
	modified       []modifiedRecord
	missingIn      string // "expected" or "actual" when the table exists on one side only
}

func (t *tableDiff) empty() bool {
	return len(t.added) == 0 && len(t.removed) == 0 && len(t.modified) == 0 && t.missingIn == ""
}

// stateDiff is state_diff_json: the golden (expected) state against the trial's
// (actual), both stable.
type stateDiff struct {
	tables                   map[string]*tableDiff
	names                    []string // tables with a difference, sorted
	added, removed, modified int
	diffLines                []string
	summary                  string
}

// computeDiff pairs records by pairingFields (id_fields, else primary key, else id);
// records with no key, or tables with no key field, are compared as multisets of their
// canonical bytes. "Same" means byte-identical canonical form, the equality the hash
// sees, so 41 and 41.0 differ here as they do in the digest.
func computeDiff(golden, trial *stableState, pairingFields func(table string, records []canonical.Value) []string) *stateDiff {
	d := &stateDiff{tables: map[string]*tableDiff{}}
	names := map[string]bool{}
	for _, n := range golden.names {
		names[n] = true
	}
	for _, n := range trial.names {
		names[n] = true
	}
	all := make([]string, 0, len(names))
	for n := range names {
		all = append(all, n)
	}
	sort.Strings(all)
	for _, name := range all {
		gv, inG := golden.tables[name]
		tv, inT := trial.tables[name]
		gr, tr := recordsOf(gv, inG), recordsOf(tv, inT)
		td := diffTable(gr, tr, pairingFields(name, append(append([]canonical.Value(nil), gr...), tr...)))
		switch {
		case !inG:
			td.missingIn = "expected"
		case !inT:
			td.missingIn = "actual"
		}
		if td.empty() {
			continue
		}
		d.tables[name] = td
		d.names = append(d.names, name)
		d.added += len(td.added)
		d.removed += len(td.removed)
		d.modified += len(td.modified)
	}
	d.diffLines = unifiedDiff(
		strings.Split(string(canonical.Indent(golden.object())), "\n"),
		strings.Split(string(canonical.Indent(trial.object())), "\n"),
		"expected (golden replay)", "actual (trial)", 3)
	d.summary = d.summarize()
	return d
}

func recordsOf(v canonical.Value, present bool) []canonical.Value {
	if !present {
		return nil
	}
	if a, ok := v.(canonical.Array); ok {
		return a
	}
	return []canonical.Value{v} // a table that is not a list is compared whole
}

// recordKey returns the pairing key of rec over fields, or false when rec is not an
// object or lacks one of them. Equal scalars (1 and 1.0) share a key.
func recordKey(rec canonical.Value, fields []string) (string, canonical.Value, bool) {
	o, ok := rec.(canonical.Object)
	if !ok || len(fields) == 0 {
		return "", nil, false
	}
	var b strings.Builder
	ms := make([]canonical.Member, 0, len(fields))
	for _, f := range fields {
		v, ok := o.Get(f)
		if !ok {
			return "", nil, false
		}
		k, scalar := canonical.EqualityKey(v)
		if !scalar {
			k = "j" + string(canonical.Marshal(v))
		}
		fmt.Fprintf(&b, "%d:%s|", len(k), k)
		ms = append(ms, canonical.Member{Key: f, Value: v})
	}
	if len(fields) == 1 {
		return b.String(), ms[0].Value, true
	}
	return b.String(), canonical.NewObject(ms...), true
}

func diffTable(golden, trial []canonical.Value, fields []string) *tableDiff {
	td := &tableDiff{}
	byKey := map[string][]int{}
	var keylessG []int
	for i, r := range golden {
		if k, _, ok := recordKey(r, fields); ok {
			byKey[k] = append(byKey[k], i)
		} else {
			keylessG = append(keylessG, i)
		}
	}
	used := make([]bool, len(golden))
	var keylessT []canonical.Value
	for _, r := range trial {
		k, _, ok := recordKey(r, fields)
		if !ok {
			keylessT = append(keylessT, r)
			continue
		}
		q := byKey[k]
		if len(q) == 0 {
			td.added = append(td.added, r)
			continue
		}
		gi := q[0]
		byKey[k] = q[1:]
		used[gi] = true
		if fds := diffFields(golden[gi], r); len(fds) > 0 {
			_, kv, _ := recordKey(golden[gi], fields) // the key as the golden state spells it
			td.modified = append(td.modified, modifiedRecord{key: kv, fields: fds})
		}
	}
	// Keyless records: a multiset of canonical bytes.
	pool := map[string]int{}
	for _, gi := range keylessG {
		pool[string(canonical.Marshal(golden[gi]))]++
		used[gi] = true
	}
	for _, r := range keylessT {
		b := string(canonical.Marshal(r))
		if pool[b] > 0 {
			pool[b]--
			continue
		}
		td.added = append(td.added, r)
	}
	for _, gi := range keylessG {
		b := string(canonical.Marshal(golden[gi]))
		if pool[b] > 0 {
			pool[b]--
			td.removed = append(td.removed, golden[gi])
		}
	}
	for i, r := range golden {
		if !used[i] {
			td.removed = append(td.removed, r)
		}
	}
	return td
}

// diffFields lists the fields of two paired records whose canonical bytes differ.
func diffFields(expected, actual canonical.Value) []fieldDiff {
	eo, eok := expected.(canonical.Object)
	ao, aok := actual.(canonical.Object)
	if !eok || !aok {
		if !bytes.Equal(canonical.Marshal(expected), canonical.Marshal(actual)) {
			return []fieldDiff{{field: "", expected: expected, actual: actual}}
		}
		return nil
	}
	keys := map[string]bool{}
	for _, k := range eo.Keys() {
		keys[k] = true
	}
	for _, k := range ao.Keys() {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	var out []fieldDiff
	for _, k := range sorted {
		ev, inE := eo.Get(k)
		av, inA := ao.Get(k)
		switch {
		case !inE:
			out = append(out, fieldDiff{field: k, expected: canonical.Null{}, actual: av, absentIn: "expected"})
		case !inA:
			out = append(out, fieldDiff{field: k, expected: ev, actual: canonical.Null{}, absentIn: "actual"})
		case !bytes.Equal(canonical.Marshal(ev), canonical.Marshal(av)):
			out = append(out, fieldDiff{field: k, expected: ev, actual: av})
		}
	}
	return out
}

func (d *stateDiff) summarize() string {
	var parts []string
	for _, n := range d.names {
		t := d.tables[n]
		switch t.missingIn {
		case "expected":
			parts = append(parts, fmt.Sprintf("%s: table absent from the golden state, %d added", n, len(t.added)))
		case "actual":
			parts = append(parts, fmt.Sprintf("%s: table absent from the trial's state, %d removed", n, len(t.removed)))
		default:
			parts = append(parts, fmt.Sprintf("%s: %d added, %d removed, %d modified", n, len(t.added), len(t.removed), len(t.modified)))
		}
	}
	if len(parts) == 0 {
		return "hash mismatch"
	}
	return "hash mismatch (" + strings.Join(parts, "; ") + ")"
}

// marshal renders state_diff_json canonically (sorted keys, Python-compatible
// scalars), with diff_lines capped at maxLines.
func (d *stateDiff) marshal(maxLines int) []byte {
	tables := make([]canonical.Member, 0, len(d.names))
	for _, n := range d.names {
		t := d.tables[n]
		mods := make(canonical.Array, 0, len(t.modified))
		for _, m := range t.modified {
			fields := make(canonical.Array, 0, len(m.fields))
			for _, f := range m.fields {
				ms := []canonical.Member{
					{Key: "field", Value: canonical.String(f.field)},
					{Key: "expected", Value: orNull(f.expected)},
					{Key: "actual", Value: orNull(f.actual)},
				}
				if f.absentIn != "" {
					ms = append(ms, canonical.Member{Key: "absent_in", Value: canonical.String(f.absentIn)})
				}
				fields = append(fields, canonical.NewObject(ms...))
			}
			mods = append(mods, canonical.NewObject(
				canonical.Member{Key: "key", Value: orNull(m.key)},
				canonical.Member{Key: "fields", Value: fields},
			))
		}
		tms := []canonical.Member{
			{Key: "added", Value: canonical.Array(nonNil(t.added))},
			{Key: "removed", Value: canonical.Array(nonNil(t.removed))},
			{Key: "modified", Value: mods},
		}
		if t.missingIn != "" {
			tms = append(tms, canonical.Member{Key: "table_absent_in", Value: canonical.String(t.missingIn)})
		}
		tables = append(tables, canonical.Member{Key: n, Value: canonical.NewObject(tms...)})
	}
	lines := d.diffLines
	if maxLines > 0 && len(lines) > maxLines {
		lines = append(append([]string(nil), lines[:maxLines]...), fmt.Sprintf("... %d more diff lines not shown", len(d.diffLines)-maxLines))
	}
	dl := make(canonical.Array, len(lines))
	for i, l := range lines {
		dl[i] = canonical.String(l)
	}
	return canonical.Marshal(canonical.NewObject(
		canonical.Member{Key: "tables", Value: canonical.NewObject(tables...)},
		canonical.Member{Key: "added", Value: canonical.NewInt(int64(d.added))},
		canonical.Member{Key: "removed", Value: canonical.NewInt(int64(d.removed))},
		canonical.Member{Key: "modified", Value: canonical.NewInt(int64(d.modified))},
		canonical.Member{Key: "diff_lines", Value: dl},
		canonical.Member{Key: "summary", Value: canonical.String(d.summary)},
	))
}

func orNull(v canonical.Value) canonical.Value {
	if v == nil {
		return canonical.Null{}
	}
	return v
}

func nonNil(vs []canonical.Value) []canonical.Value {
	if vs == nil {
		return []canonical.Value{}
	}
	return vs
}

// authorShape rewrites d for the tables the pack wrote as dicts whose records do not
// carry their key (keys[table] == task.DictKeyField): records are paired by that
// synthetic key column (a modified record is named by its dict key), but the column
// is the DB service's, never the author's, so added and removed records are shown
// without it and diff_lines render such a table as the author's dict, keyed.
func (d *stateDiff) authorShape(golden, trial *stableState, keys map[string]string) {
	synthetic := false
	for _, k := range keys {
		if k == task.DictKeyField {
			synthetic = true
			break
		}
	}
	if !synthetic {
		return
	}
	strip := func(recs []canonical.Value) {
		for i, r := range recs {
			if o, ok := r.(canonical.Object); ok {
				recs[i] = o.Without(task.DictKeyField)
			}
		}
	}
	for _, n := range d.names {
		if keys[n] == task.DictKeyField {
			strip(d.tables[n].added)
			strip(d.tables[n].removed)
		}
	}
	d.diffLines = unifiedDiff(
		strings.Split(string(canonical.Indent(authorObject(golden, keys))), "\n"),
		strings.Split(string(canonical.Indent(authorObject(trial, keys))), "\n"),
		"expected (golden replay)", "actual (trial)", 3)
}

// authorObject is s as one canonical object, a table keyed by the synthetic key
// column rendered as the author's dict (authorTable).
func authorObject(s *stableState, keys map[string]string) canonical.Object {
	ms := make([]canonical.Member, 0, len(s.names))
	for _, n := range s.names {
		v := s.tables[n]
		if keys[n] == task.DictKeyField {
			v = authorTable(v, task.DictKeyField)
		}
		ms = append(ms, canonical.Member{Key: n, Value: v})
	}
	return canonical.NewObject(ms...)
}

// authorTable is a dict table held as a list as the author's dict {key: record},
// keyed by each record's key field (a string, or a number's text, as dictView and
// the Python checks key it); the synthetic key column (key == task.DictKeyField) is
// the DB service's, so the records are shown without it. v comes back unchanged
// when a record lacks a key or repeats one.
func authorTable(v canonical.Value, key string) canonical.Value {
	recs, ok := v.(canonical.Array)
	if !ok {
		return v
	}
	byKey := make([]canonical.Member, 0, len(recs))
	seen := map[string]bool{}
	for _, r := range recs {
		o, ok := r.(canonical.Object)
		if !ok {
			return v
		}
		kv, _ := o.Get(key)
		var ks string
		switch k := kv.(type) {
		case canonical.String:
			ks = string(k)
		case canonical.Int, canonical.Float:
			ks = string(canonical.Marshal(k))
		default:
			return v
		}
		if seen[ks] {
			return v
		}
		seen[ks] = true
		if key == task.DictKeyField {
			o = o.Without(task.DictKeyField)
		}
		byKey = append(byKey, canonical.Member{Key: ks, Value: o})
	}
	return canonical.NewObject(byKey...)
}
