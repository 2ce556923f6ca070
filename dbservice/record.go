package dbservice

import "tolokaforge.io/operator/api/canonical"

// record is one immutable table row with its canonical bytes computed once, at
// creation, so hashing and serving state never re-serialize unchanged rows.
type record struct {
	val canonical.Object
	// full is the canonical encoding of val.
	full []byte
	// stable is the canonical encoding of val without the table's unstable fields; it
	// aliases full when the record holds none of them.
	stable []byte

	// keyCache memoizes canonical.EqualityKey of one field for chunk indexes, which are
	// rebuilt whenever a PATCH copies the chunk. Only touched under the trial's lock.
	keyCache *recordKey
}

type recordKey struct {
	field string
	key   string
	ok    bool
}

// equalityKey returns canonical.EqualityKey of the record's field, false when the field
// is missing or not indexable.
func (r *record) equalityKey(field string) (string, bool) {
	if kc := r.keyCache; kc != nil && kc.field == field {
		return kc.key, kc.ok
	}
	kc := &recordKey{field: field}
	if v, ok := r.val.Get(field); ok {
		kc.key, kc.ok = canonical.EqualityKey(v)
	}
	r.keyCache = kc
	return kc.key, kc.ok
}

func newRecord(val canonical.Object, unstable []string) *record {
	r := &record{val: val, full: canonical.Marshal(val)}
	r.stable = r.full
	if len(unstable) > 0 {
		if filtered := val.Without(unstable...); filtered.Len() != val.Len() {
			r.stable = canonical.Marshal(filtered)
		}
	}
	return r
}

func (r *record) bytes(stable bool) []byte {
	if stable {
		return r.stable
	}
	return r.full
}

// stableIsFull reports whether stable filtering left the record unchanged; newRecord
// then aliases the two encodings.
func (r *record) stableIsFull() bool {
	return len(r.stable) == len(r.full) && (len(r.full) == 0 || &r.stable[0] == &r.full[0])
}

// stableValue returns the record as stable filtering shows it.
func (r *record) stableValue(unstable []string) canonical.Object {
	if len(unstable) == 0 {
		return r.val
	}
	return r.val.Without(unstable...)
}

// matches reports whether every filter field equals the record's field; a missing field
// reads as null, as Python's rec.get(k) does.
func (r *record) matches(filter canonical.Object) bool {
	for k, want := range filter.All() {
		got, ok := r.val.Get(k)
		if !ok {
			got = canonical.Null{}
		}
		if !canonical.Equal(got, want) {
			return false
		}
	}
	return true
}
