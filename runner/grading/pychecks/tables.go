package pychecks

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"

	"tolokaforge.io/operator/api/task"
)

// Tables is a state as a suite reads it: a JSON object of the trial's tables. The
// DB service holds every table as a list of records; a table that was a dict in
// the pack (tau style, {"order_1": {"order_id": "order_1", ...}}) is rebuilt as
// that dict from keys, its key field per table, because the suite indexes it so
// (state["orders"][order_id]). A dict table whose key field is unknown ("") is {}
// while empty; a table that cannot be rebuilt (a record without the key field,
// a key that is not a string or a number, two records with one key) stays the
// list it is, rather than losing a record.
func Tables(tables map[string]json.RawMessage, keys map[string]string) json.RawMessage {
	names := make([]string, 0, len(tables))
	for n := range tables {
		names = append(names, n)
	}
	sort.Strings(names)
	var b bytes.Buffer
	b.WriteByte('{')
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		q, _ := json.Marshal(n)
		b.Write(q)
		b.WriteByte(':')
		raw := bytes.TrimSpace(tables[n])
		if len(raw) == 0 {
			raw = []byte("null")
		}
		key, isDict := keys[n]
		if !isDict || !asDict(&b, raw, key) {
			b.Write(raw)
		}
	}
	b.WriteByte('}')
	return b.Bytes()
}

// asDict writes the list raw as a dict keyed by each record's key field, and
// reports whether it could.
func asDict(b *bytes.Buffer, raw []byte, key string) bool {
	var records []json.RawMessage
	if json.Unmarshal(raw, &records) != nil {
		return false
	}
	if len(records) == 0 {
		b.WriteString("{}")
		return true
	}
	if key == "" {
		return false
	}
	keys := make([]string, len(records))
	seen := make(map[string]bool, len(records))
	for i, r := range records {
		var fields map[string]json.RawMessage
		if json.Unmarshal(r, &fields) != nil {
			return false
		}
		k, ok := keyText(fields[key])
		if !ok || seen[k] {
			return false
		}
		seen[k], keys[i] = true, k
	}
	b.WriteByte('{')
	for i, r := range records {
		if i > 0 {
			b.WriteByte(',')
		}
		q, _ := json.Marshal(keys[i])
		b.Write(q)
		b.WriteByte(':')
		r = bytes.TrimSpace(r)
		if key == task.DictKeyField {
			// The synthetic key column is the DB service's, never the author's.
			r = task.StripDictKey(r)
		}
		b.Write(r)
	}
	b.WriteByte('}')
	return true
}

// keyText is a key field's value as a dict key: a string, or a number's text.
func keyText(v json.RawMessage) (string, bool) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "", false
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s, true
	}
	var n json.Number
	if json.Unmarshal(v, &n) == nil {
		if _, err := strconv.ParseFloat(n.String(), 64); err == nil {
			return n.String(), true
		}
	}
	return "", false
}
