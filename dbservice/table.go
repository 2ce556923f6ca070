package dbservice

import (
	"slices"
	"sync/atomic"

	"tolokaforge.io/operator/api/canonical"
)

// chunkSize bounds the records per chunk: a one-record change copies one chunk of this
// many pointers plus the chunk list, instead of the whole table.
const chunkSize = 256

// chunk is a run of consecutive records. A chunk is immutable once the transaction
// that created it (owner) has finished; only that transaction may modify it.
type chunk struct {
	recs []*record
	// id is unique for the process lifetime; hash checkpoints name chunks by id so they
	// never keep old chunks alive.
	id    uint64
	owner uint64
	// index is built lazily, only on frozen chunks, for one key field.
	index atomic.Pointer[chunkIndex]
	// full and stable cache the records' canonical bytes joined by commas, built lazily
	// once the chunk is frozen, so hashing a state is a few large sha256 writes per
	// chunk instead of two small ones per record.
	full, stable atomic.Pointer[[]byte]
}

// joined returns the chunk's records in canonical form separated by commas.
func (c *chunk) joined(stable bool) []byte {
	p := &c.full
	if stable {
		p = &c.stable
	}
	if b := p.Load(); b != nil {
		return *b
	}
	if stable && c.stableIsFull() {
		b := c.joined(false)
		c.stable.Store(&b)
		return b
	}
	n := len(c.recs)
	for _, r := range c.recs {
		n += len(r.bytes(stable))
	}
	buf := make([]byte, 0, n)
	for i, r := range c.recs {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, r.bytes(stable)...)
	}
	p.Store(&buf)
	return buf
}

// stableIsFull reports whether no record of the chunk lost a field to stable filtering.
func (c *chunk) stableIsFull() bool {
	for _, r := range c.recs {
		if !r.stableIsFull() {
			return false
		}
	}
	return true
}

// chunkIndex maps canonical.EqualityKey of a field's value to the record's position in
// the chunk; -1 marks a value held by several records, which are then found by scanning.
type chunkIndex struct {
	field string
	pos   map[string]int32
}

func (c *chunk) indexFor(field string) *chunkIndex {
	if ix := c.index.Load(); ix != nil && ix.field == field {
		return ix
	}
	ix := &chunkIndex{field: field, pos: make(map[string]int32, len(c.recs))}
	for i, r := range c.recs {
		key, ok := r.equalityKey(field)
		if !ok {
			continue
		}
		if _, dup := ix.pos[key]; dup {
			ix.pos[key] = -1
		} else {
			ix.pos[key] = int32(i)
		}
	}
	c.index.Store(ix)
	return ix
}

// table is an immutable, ordered list of records.
type table struct {
	chunks []*chunk
	n      int
	bytes  int64 // canonical bytes of the records, for the trial's limits
	// byKey caches a dict table's records in hash order, full and stable (dicttable.go).
	byKey [2]atomic.Pointer[chunk]
}

var emptyTable = &table{}

var chunkSeq atomic.Uint64

func newChunk(recs []*record, owner uint64) *chunk {
	return &chunk{recs: recs, owner: owner, id: chunkSeq.Add(1)}
}

func newTable(recs []*record) *table {
	t := &table{n: len(recs)}
	for _, r := range recs {
		t.bytes += int64(len(r.full))
	}
	for start := 0; start < len(recs); start += chunkSize {
		end := min(start+chunkSize, len(recs))
		t.chunks = append(t.chunks, newChunk(recs[start:end:end], 0))
	}
	return t
}

func (t *table) each(fn func(*record)) {
	for _, c := range t.chunks {
		for _, r := range c.recs {
			fn(r)
		}
	}
}

// loc addresses a record inside a transaction's chunk list. Locations stay valid for the
// whole transaction: removal leaves a tombstone and chunks are compacted at commit.
type loc struct{ ci, ri int }

func (a loc) less(b loc) bool { return a.ci < b.ci || a.ci == b.ci && a.ri < b.ri }

var txnSeq atomic.Uint64

// tableTxn is a private, copy-on-write working copy of a table. Nothing it does is
// visible until commit returns the new table; dropping it aborts.
//
// Finding a record by its key field first uses the frozen chunks' indexes, one map
// lookup per chunk, and scans the chunks this transaction owns. That is cheap for a
// PATCH of a few operations, but N operations over N rows would cost N*N/chunkSize, and
// more as the operations make chunks owned. So once the finds have cost as much as the
// table's size, the transaction builds one index over the whole table and keeps it up to
// date: a PATCH costs O(rows + operations) at worst.
type tableTxn struct {
	id     uint64
	chunks []*chunk
	copied bool
	n      int
	bytes  int64
	dirty  bool
	// holes lists the chunks that hold tombstones (nil records), compacted at commit.
	holes map[int]bool

	// work counts chunk lookups and records scanned by finds before ix exists.
	work int
	// ix maps canonical.EqualityKey of ixField to the records holding it, in table
	// order; nil until built.
	ix      map[string][]loc
	ixField string
}

func beginTable(t *table) *tableTxn {
	return &tableTxn{id: txnSeq.Add(1), chunks: t.chunks, n: t.n, bytes: t.bytes}
}

func (tx *tableTxn) ownList() {
	if !tx.copied {
		tx.chunks = slices.Clone(tx.chunks)
		tx.copied = true
	}
}

// own returns chunk ci, copying it first unless this transaction created it.
func (tx *tableTxn) own(ci int) *chunk {
	c := tx.chunks[ci]
	if c.owner == tx.id {
		return c
	}
	tx.ownList()
	recs := make([]*record, len(c.recs), max(len(c.recs), chunkSize))
	copy(recs, c.recs)
	nc := newChunk(recs, tx.id)
	tx.chunks[ci] = nc
	return nc
}

// ixBuilds counts buildIndex calls, so tests can see the index path was taken.
var ixBuilds atomic.Int64

// buildIndex indexes every live record by field.
func (tx *tableTxn) buildIndex(field string) {
	ixBuilds.Add(1)
	tx.ix, tx.ixField = make(map[string][]loc, tx.n), field
	for ci, c := range tx.chunks {
		for ri, r := range c.recs {
			if r == nil {
				continue
			}
			if key, ok := r.equalityKey(field); ok {
				tx.ix[key] = append(tx.ix[key], loc{ci, ri})
			}
		}
	}
}

func (tx *tableTxn) ixAdd(r *record, l loc) {
	key, ok := r.equalityKey(tx.ixField)
	if !ok {
		return
	}
	ls := tx.ix[key]
	i, _ := slices.BinarySearchFunc(ls, l, func(a, b loc) int {
		switch {
		case a.less(b):
			return -1
		case b.less(a):
			return 1
		}
		return 0
	})
	tx.ix[key] = slices.Insert(ls, i, l)
}

func (tx *tableTxn) ixDel(r *record, l loc) {
	key, ok := r.equalityKey(tx.ixField)
	if !ok {
		return
	}
	ls := tx.ix[key]
	if i := slices.Index(ls, l); i >= 0 {
		ls = slices.Delete(ls, i, i+1)
	}
	if len(ls) == 0 {
		delete(tx.ix, key)
	} else {
		tx.ix[key] = ls
	}
}

// find returns the records matching filter, in table order, stopping after limit
// matches when limit > 0. keyField names the field the chunk indexes cover.
func (tx *tableTxn) find(filter canonical.Object, keyField string, limit int) []loc {
	var out []loc
	lookupKey, useIndex := "", false
	if v, ok := filter.Get(keyField); ok && canonical.KindOf(v) != canonical.KindNull {
		lookupKey, useIndex = canonical.EqualityKey(v)
	}
	if useIndex && tx.ix == nil && tx.work >= tx.n+chunkSize {
		tx.buildIndex(keyField)
	}
	if useIndex && tx.ix != nil && tx.ixField == keyField {
		for _, l := range tx.ix[lookupKey] {
			if tx.get(l).matches(filter) {
				out = append(out, l)
				if limit > 0 && len(out) == limit {
					break
				}
			}
		}
		return out
	}
	for ci, c := range tx.chunks {
		if useIndex && c.owner != tx.id {
			tx.work++
			p, ok := c.indexFor(keyField).pos[lookupKey]
			if !ok {
				continue
			}
			if p >= 0 {
				if c.recs[p].matches(filter) {
					out = append(out, loc{ci, int(p)})
					if limit > 0 && len(out) == limit {
						return out
					}
				}
				continue
			}
		}
		tx.work += len(c.recs)
		for ri, r := range c.recs {
			if r != nil && r.matches(filter) {
				out = append(out, loc{ci, ri})
				if limit > 0 && len(out) == limit {
					return out
				}
			}
		}
	}
	return out
}

func (tx *tableTxn) get(l loc) *record { return tx.chunks[l.ci].recs[l.ri] }

func (tx *tableTxn) replace(l loc, r *record) {
	c := tx.own(l.ci)
	old := c.recs[l.ri]
	tx.bytes += int64(len(r.full)) - int64(len(old.full))
	c.recs[l.ri] = r
	tx.dirty = true
	if tx.ix != nil {
		ok, oldOK := old.equalityKey(tx.ixField)
		nk, newOK := r.equalityKey(tx.ixField)
		if ok != nk || oldOK != newOK {
			tx.ixDel(old, l)
			tx.ixAdd(r, l)
		}
	}
}

func (tx *tableTxn) appendRecord(r *record) {
	var l loc
	if last := len(tx.chunks) - 1; last >= 0 && len(tx.chunks[last].recs) < chunkSize {
		c := tx.own(last)
		c.recs = append(c.recs, r)
		l = loc{last, len(c.recs) - 1}
	} else {
		tx.ownList()
		recs := make([]*record, 1, chunkSize)
		recs[0] = r
		tx.chunks = append(tx.chunks, newChunk(recs, tx.id))
		l = loc{len(tx.chunks) - 1, 0}
	}
	tx.n++
	tx.bytes += int64(len(r.full))
	tx.dirty = true
	if tx.ix != nil {
		tx.ixAdd(r, l)
	}
}

// remove deletes the records at locs, leaving tombstones so that every other location
// stays valid until commit.
func (tx *tableTxn) remove(locs []loc) {
	if len(locs) == 0 {
		return
	}
	if tx.holes == nil {
		tx.holes = map[int]bool{}
	}
	for _, l := range locs {
		c := tx.own(l.ci)
		r := c.recs[l.ri]
		if tx.ix != nil {
			tx.ixDel(r, l)
		}
		c.recs[l.ri] = nil
		tx.holes[l.ci] = true
		tx.n--
		tx.bytes -= int64(len(r.full))
	}
	tx.dirty = true
}

func (tx *tableTxn) repack() {
	recs := make([]*record, 0, tx.n)
	for _, c := range tx.chunks {
		recs = append(recs, c.recs...)
	}
	t := newTable(recs)
	for _, c := range t.chunks {
		c.owner = tx.id
	}
	tx.chunks, tx.copied = t.chunks, true
}

// commit returns the resulting table, or nil when nothing changed. It closes the
// tombstones' gaps, drops emptied chunks, and repacks when deletes left the chunks
// so sparse that they would slow scans noticeably.
func (tx *tableTxn) commit() *table {
	if !tx.dirty {
		return nil
	}
	if len(tx.holes) > 0 {
		kept := tx.chunks[:0]
		for ci, c := range tx.chunks {
			if tx.holes[ci] {
				// Owned: remove made it so.
				c.recs = slices.DeleteFunc(c.recs, func(r *record) bool { return r == nil })
			}
			if len(c.recs) > 0 {
				kept = append(kept, c)
			}
		}
		clear(tx.chunks[len(kept):])
		tx.chunks = kept
		if full := (tx.n + chunkSize - 1) / chunkSize; len(tx.chunks) > 2*full+2 {
			tx.repack()
		}
	}
	tx.ix = nil
	return &table{chunks: tx.chunks, n: tx.n, bytes: tx.bytes}
}
