package task

import (
	"bytes"
	"encoding/json"
)

// DictKeyField is the synthetic key column of a table the pack wrote as a dict of
// records keyed by id, whether or not the records carry the key themselves
// (tau-bench's users, keyed by user id, hold no user-id field; its orders repeat
// order_id). The pack importer adds it to every record, holding the record's dict
// key, and names it as the table's key field (extra.dict_tables) and primary key,
// so the DB service keeps the table as a list of records it can address by key,
// and knows it for a dict: its hash covers the records in key order. It is never
// author-facing: the Python tool host, JSONPath, db_probes, custom checks and the
// state diff see the author's dict, keyed by it and without it (StripDictKey).
const DictKeyField = "__tolokaforge_key__"

// WithDictKey returns the record raw (a JSON object) with DictKeyField set to key,
// first; ok is false when raw is not a JSON object.
func WithDictKey(raw json.RawMessage, key string) (json.RawMessage, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) < 2 || raw[0] != '{' {
		return nil, false
	}
	q, err := json.Marshal(key)
	if err != nil {
		return nil, false
	}
	var b bytes.Buffer
	b.Grow(len(raw) + len(DictKeyField) + len(q) + 4)
	b.WriteString(`{"` + DictKeyField + `":`)
	b.Write(q)
	rest := bytes.TrimSpace(raw[1:])
	if len(rest) > 0 && rest[0] != '}' {
		b.WriteByte(',')
	}
	b.Write(rest)
	return b.Bytes(), true
}

// StripDictKey returns the record raw without DictKeyField, as the author wrote it;
// raw comes back unchanged when it is not a JSON object or does not hold the field.
func StripDictKey(raw json.RawMessage) json.RawMessage {
	if !bytes.Contains(raw, []byte(DictKeyField)) {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return raw
	}
	var b bytes.Buffer
	b.WriteByte('{')
	n := 0
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return raw
		}
		name, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return raw
		}
		if name == DictKeyField {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		q, _ := json.Marshal(name)
		b.Write(q)
		b.WriteByte(':')
		b.Write(v)
		n++
	}
	b.WriteByte('}')
	return b.Bytes()
}
