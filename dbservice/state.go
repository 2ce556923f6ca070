package dbservice

import (
	"io"
	"maps"
	"slices"

	"tolokaforge.io/operator/api/canonical"
)

// dbState is one immutable version of a trial's tables. Snapshots, the initial state and
// the current state are pointers to dbStates, so taking or restoring one copies nothing.
type dbState struct {
	tables map[string]*table
	names  []string // sorted, the canonical key order
	// dict is the trial's dict tables (dictKeyField is their primary key), shared by
	// all its states and never modified; the value reports whether the key survives
	// stable filtering. Their hash covers their records in key order (digest.go).
	dict map[string]bool
	// records and bytes total the tables' records and canonical record bytes.
	records int
	bytes   int64

	// Memoized hashes, guarded by the owning trial's mutex.
	fullHash, stableHash string
	// Hash checkpoints of this state (cp) or of the nearest ancestor that had them
	// (base), to resume hashing from; see digest.go.
	fullCP, stableCP     []hashCheckpoint
	fullBase, stableBase []hashCheckpoint
}

func newState(tables map[string]*table, dict map[string]bool) *dbState {
	s := &dbState{tables: tables, names: slices.Sorted(maps.Keys(tables)), dict: dict}
	for _, t := range tables {
		s.records += t.n
		s.bytes += t.bytes
	}
	return s
}

// with returns a new state where name maps to t.
func (s *dbState) with(name string, t *table) *dbState {
	tables := maps.Clone(s.tables)
	if tables == nil {
		tables = make(map[string]*table, 1)
	}
	tables[name] = t
	ns := &dbState{tables: tables, names: s.names, dict: s.dict, fullBase: s.fullCP, stableBase: s.stableCP,
		records: s.records + t.n, bytes: s.bytes + t.bytes}
	if old, ok := s.tables[name]; ok {
		ns.records -= old.n
		ns.bytes -= old.bytes
	}
	if ns.fullBase == nil {
		ns.fullBase = s.fullBase
	}
	if ns.stableBase == nil {
		ns.stableBase = s.stableBase
	}
	if _, existed := s.tables[name]; !existed {
		ns.names = slices.Sorted(maps.Keys(tables))
	}
	return ns
}

// hashes returns the full and stable hashes, computing each on first use; computed
// reports whether this call did any work. sameStable says that no table of the state
// has unstable fields, so the stable hash is the full hash and costs nothing more.
func (s *dbState) hashes(sameStable bool) (full, stable string, computed bool) {
	stable, computed = s.stable(sameStable)
	if s.fullHash == "" {
		s.fullHash, s.fullCP = s.digestFrom(false, s.fullBase)
		computed = true
	}
	return s.fullHash, stable, computed
}

// stable returns the stable hash alone: at most one sha256 pass over cached bytes, less
// when an earlier state's checkpoint covers an unchanged prefix.
func (s *dbState) stable(sameStable bool) (string, bool) {
	if s.stableHash != "" {
		return s.stableHash, false
	}
	if sameStable {
		if s.fullHash == "" {
			s.fullHash, s.fullCP = s.digestFrom(false, s.fullBase)
		}
		s.stableHash = s.fullHash
	} else {
		s.stableHash, s.stableCP = s.digestFrom(true, s.stableBase)
	}
	return s.stableHash, true
}

var (
	openBrace  = []byte{'{'}
	closeBrace = []byte{'}'}
	comma      = []byte{','}
	colonOpen  = []byte{':', '['}
	closeBrack = []byte{']'}
)

// writeData writes {"table":[records...],...} for names, which must be sorted, in
// canonical form. It stops at the first write error.
func (s *dbState) writeData(w io.Writer, names []string, stable bool) error {
	if _, err := w.Write(openBrace); err != nil {
		return err
	}
	var keyBuf []byte
	for i, name := range names {
		if i > 0 {
			if _, err := w.Write(comma); err != nil {
				return err
			}
		}
		keyBuf = canonical.AppendString(keyBuf[:0], name)
		if _, err := w.Write(keyBuf); err != nil {
			return err
		}
		if _, err := w.Write(colonOpen); err != nil {
			return err
		}
		for ci, c := range s.tables[name].chunks {
			if ci > 0 {
				if _, err := w.Write(comma); err != nil {
					return err
				}
			}
			if _, err := w.Write(c.joined(stable)); err != nil {
				return err
			}
		}
		if _, err := w.Write(closeBrack); err != nil {
			return err
		}
	}
	_, err := w.Write(closeBrace)
	return err
}

// canonicalBytes returns the canonical form of the whole state.
func (s *dbState) canonicalBytes(stable bool) []byte {
	var b sliceWriter
	_ = s.writeData(&b, s.names, stable)
	return b.buf
}

type sliceWriter struct{ buf []byte }

func (w *sliceWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	return len(p), nil
}

var _ io.Writer = (*sliceWriter)(nil)

// value rebuilds the state as a canonical Object {table: [records]}, for JSONPath.
func (s *dbState) value(stable bool, unstable func(table string) []string) canonical.Object {
	ms := make([]canonical.Member, 0, len(s.names))
	for _, name := range s.names {
		t := s.tables[name]
		arr := make(canonical.Array, 0, t.n)
		var uf []string
		if stable {
			uf = unstable(name)
		}
		t.each(func(r *record) { arr = append(arr, r.stableValue(uf)) })
		ms = append(ms, canonical.Member{Key: name, Value: arr})
	}
	return canonical.NewObject(ms...)
}
