package dbservice

import (
	"bytes"
	"slices"
	"strings"

	"tolokaforge.io/operator/api/canonical"
)

// dictKeyField is the pack importer's synthetic key column (api/task.DictKeyField; this
// package does not import api/task, which would bring CEL into the service). A table
// whose primary key it is was authored as a dict keyed by id: its records travel and
// are stored as a list in the dict's own order, which Python tools get back, but the
// order is no part of what the author wrote (tau-bench hashes a dict with sorted keys),
// so the canonical hash covers such a table's records ordered by that key. Deleting a
// record and inserting it again, or inserting two records in the other order, then
// hashes as the same dict. Every other table keeps its list order in the hash.
const dictKeyField = "__tolokaforge_key__"

// keyOrdered returns the table's records ordered for the hash as one chunk (its
// records only; digest.go streams them), built on first use and cached on the
// (immutable) table per mode: by the string value of
// dictKeyField when useKey, then by the records' canonical bytes in that mode, so
// records without a string key, or sharing one, still hash independently of their list
// order. useKey is false when the key is an unstable field hidden from the stable form.
func (t *table) keyOrdered(stable, useKey bool) *chunk {
	slot := &t.byKey[0]
	if stable {
		slot = &t.byKey[1]
	}
	if c := slot.Load(); c != nil {
		return c
	}
	type keyed struct {
		key    string
		hasKey bool
		r      *record
	}
	ks := make([]keyed, 0, t.n)
	t.each(func(r *record) {
		k := keyed{r: r}
		if useKey {
			if v, ok := r.val.Get(dictKeyField); ok {
				if s, ok := v.(canonical.String); ok {
					k.key, k.hasKey = string(s), true
				}
			}
		}
		ks = append(ks, k)
	})
	slices.SortFunc(ks, func(a, b keyed) int {
		switch {
		case a.hasKey && !b.hasKey:
			return -1
		case !a.hasKey && b.hasKey:
			return 1
		}
		// Go strings compare by UTF-8 bytes, which is code-point order.
		if c := strings.Compare(a.key, b.key); c != 0 {
			return c
		}
		return bytes.Compare(a.r.bytes(stable), b.r.bytes(stable))
	})
	recs := make([]*record, len(ks))
	for i, k := range ks {
		recs[i] = k.r
	}
	c := newChunk(recs, 0)
	slot.Store(c)
	return c
}
