package dbservice

import (
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"hash"

	"tolokaforge.io/operator/api/canonical"
)

// A state's canonical form is a sequence of entries, one per chunk (or one empty entry
// for a table without records, or one for a dict table's records in key order, see
// dicttable.go), each preceded by fixed separator bytes:
//
//	{"a":[<chunk a0>,<chunk a1>],"b":[<chunk b0>]}
//
// While hashing, the sha256 state is saved just before each entry's chunk bytes. A later
// state whose entries up to k are the same chunks, with entry k at the same table and
// position, produces the same bytes up to that point, so its hash resumes from the
// saved state and only the rest is fed through sha256: a PATCH near the end of a big
// state re-hashes a little, one at the start still costs no more than one pass.
type hashCheckpoint struct {
	table string
	pos   int    // chunk position in the table; -1 for a table without records
	chunk uint64 // chunk id; 0 for a table without records
	state []byte // marshaled sha256 state before the entry's chunk bytes
}

type digestEntry struct {
	table string
	pos   int
	c     *chunk // nil for a table without records
	// byKey marks a dict table's key-ordered records, streamed to sha256 rather than
	// joined: a joined copy would keep a second copy of the table's bytes cached for
	// as long as the table version lives (the initial state's, the whole trial).
	byKey bool
}

func (e digestEntry) id() uint64 {
	if e.c == nil {
		return 0
	}
	return e.c.id
}

// entries lists the state's hash entries in canonical order. A dict table (s.dict) with
// records is one entry, its records in key order (keyOrdered): a change anywhere in it
// re-hashes it whole, since a record's place in the order depends on every other key.
func (s *dbState) entries(stable bool) []digestEntry {
	var out []digestEntry
	for _, name := range s.names {
		t := s.tables[name]
		chunks := t.chunks
		if len(chunks) == 0 {
			out = append(out, digestEntry{table: name, pos: -1})
			continue
		}
		if useKey, ok := s.dict[name]; ok {
			out = append(out, digestEntry{table: name, pos: 0, c: t.keyOrdered(stable, useKey || !stable), byKey: true})
			continue
		}
		for i, c := range chunks {
			out = append(out, digestEntry{table: name, pos: i, c: c})
		}
	}
	return out
}

// resumePoint returns the index of the last checkpoint in base that is valid for
// entries, or -1.
func resumePoint(entries []digestEntry, base []hashCheckpoint) int {
	r := -1
	for i := 0; i < len(entries) && i < len(base); i++ {
		e, b := entries[i], base[i]
		if e.table != b.table || e.pos != b.pos {
			break
		}
		// The bytes before entry i match; entry i's own chunk may differ.
		r = i
		if e.id() != b.chunk {
			break
		}
	}
	return r
}

// digestFrom hashes the whole state in canonical form, resuming from base when it can,
// and returns the hex digest with this state's checkpoints.
func (s *dbState) digestFrom(stable bool, base []hashCheckpoint) (string, []hashCheckpoint) {
	entries := s.entries(stable)
	h := sha256.New()
	if len(entries) == 0 {
		h.Write([]byte("{}"))
		return hex.EncodeToString(h.Sum(nil)), nil
	}
	cps := make([]hashCheckpoint, 0, len(entries))
	start := 0
	if r := resumePoint(entries, base); r >= 0 {
		if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(base[r].state); err == nil {
			cps = append(cps, base[:r+1]...)
			writeEntryData(h, entries[r], stable)
			start = r + 1
		} else {
			h.Reset()
		}
	}
	var pre []byte
	for i := start; i < len(entries); i++ {
		e := entries[i]
		pre = pre[:0]
		switch {
		case i == 0:
			pre = append(pre, '{')
			pre = canonical.AppendString(pre, e.table)
			pre = append(pre, ':', '[')
		case e.table != entries[i-1].table:
			pre = append(pre, ']', ',')
			pre = canonical.AppendString(pre, e.table)
			pre = append(pre, ':', '[')
		default:
			pre = append(pre, ',')
		}
		h.Write(pre)
		state, err := h.(encoding.BinaryMarshaler).MarshalBinary()
		if err == nil {
			cps = append(cps, hashCheckpoint{table: e.table, pos: e.pos, chunk: e.id(), state: state})
		}
		writeEntryData(h, e, stable)
	}
	h.Write([]byte("]}"))
	if len(cps) != len(entries) {
		// A checkpoint could not be saved; keep none rather than a misaligned list.
		cps = nil
	}
	return hex.EncodeToString(h.Sum(nil)), cps
}

func writeEntryData(h hash.Hash, e digestEntry, stable bool) {
	switch {
	case e.c == nil:
	case e.byKey:
		for i, r := range e.c.recs {
			if i > 0 {
				h.Write(comma)
			}
			h.Write(r.bytes(stable))
		}
	default:
		h.Write(e.c.joined(stable))
	}
}
