package dbservice

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"tolokaforge.io/operator/api/canonical"
)

// refModel is the obvious implementation of PATCH semantics over plain slices, used to
// check the chunked copy-on-write tables.
type refModel struct {
	tables map[string][]canonical.Object
	pk     map[string]string
}

func (m *refModel) keyField(table string) string {
	if pk := m.pk[table]; pk != "" {
		return pk
	}
	return "id"
}

func refMatches(rec, filter canonical.Object) bool {
	for k, want := range filter.All() {
		got, ok := rec.Get(k)
		if !ok {
			got = canonical.Null{}
		}
		if !canonical.Equal(got, want) {
			return false
		}
	}
	return true
}

func (m *refModel) hasKey(recs []canonical.Object, pk string, rec canonical.Object) bool {
	kv, ok := rec.Get(pk)
	if !ok {
		return false
	}
	return slices.ContainsFunc(recs, func(r canonical.Object) bool {
		return refMatches(r, canonical.NewObject(canonical.Member{Key: pk, Value: kv}))
	})
}

// apply returns the affected count and the error type, changing m only on success.
func (m *refModel) apply(table string, ops []operation) (int, string) {
	recs, exists := m.tables[table]
	if !exists && ops[0].op != "insert" && ops[0].op != "upsert" {
		return 0, errTypeTableNotFound
	}
	recs = slices.Clone(recs)
	pk := m.pk[table]
	affected := 0
	for _, op := range ops {
		switch op.op {
		case "insert":
			if pk != "" && m.hasKey(recs, pk, op.record) {
				return 0, errTypeDuplicateKey
			}
			recs = append(recs, op.record)
			affected++
		case "update":
			for i, r := range recs {
				if refMatches(r, op.filter) {
					recs[i] = r.Merge(op.set)
					affected++
				}
			}
		case "delete":
			kept := recs[:0:0]
			for _, r := range recs {
				if refMatches(r, op.filter) {
					affected++
				} else {
					kept = append(kept, r)
				}
			}
			recs = kept
		case "upsert":
			key := op.key
			if key == "" {
				key = m.keyField(table)
			}
			kv, ok := op.record.Get(key)
			if !ok {
				return 0, errTypeInvalidOperation
			}
			idx := slices.IndexFunc(recs, func(r canonical.Object) bool {
				return refMatches(r, canonical.NewObject(canonical.Member{Key: key, Value: kv}))
			})
			if idx >= 0 {
				recs[idx] = recs[idx].Merge(op.record)
			} else {
				if pk != "" && pk != key && m.hasKey(recs, pk, op.record) {
					return 0, errTypeDuplicateKey
				}
				recs = append(recs, op.record)
			}
			affected++
		}
	}
	m.tables[table] = recs
	return affected, ""
}

func (m *refModel) canonical(unstable map[string][]string) string {
	ms := []canonical.Member{}
	for name, recs := range m.tables {
		arr := canonical.Array{}
		for _, r := range recs {
			arr = append(arr, r.Without(unstable[name]...))
		}
		ms = append(ms, canonical.Member{Key: name, Value: arr})
	}
	return string(canonical.Marshal(canonical.NewObject(ms...)))
}

// randomOps builds operations over a small key space so filters hit often, with ids in
// int, float and string forms.
func randomOps(r *rand.Rand, n int) []operation {
	id := func() canonical.Value {
		k := r.IntN(700)
		switch r.IntN(6) {
		case 0:
			return canonical.Float(float64(k))
		case 1:
			return canonical.String(fmt.Sprint(k))
		default:
			return canonical.NewInt(int64(k))
		}
	}
	rec := func(withID bool) canonical.Object {
		ms := []canonical.Member{{Key: "a", Value: canonical.NewInt(int64(r.IntN(5)))}}
		if withID {
			ms = append(ms, canonical.Member{Key: "id", Value: id()})
		}
		if r.IntN(2) == 0 {
			ms = append(ms, canonical.Member{Key: "c", Value: canonical.String(fmt.Sprint("c", r.IntN(3)))})
		}
		if r.IntN(3) == 0 {
			ms = append(ms, canonical.Member{Key: "b", Value: canonical.Bool(r.IntN(2) == 0)})
		}
		return canonical.NewObject(ms...)
	}
	filter := func() canonical.Object {
		switch r.IntN(8) {
		case 0:
			return canonical.Object{}
		case 1:
			return canonical.NewObject(canonical.Member{Key: "a", Value: canonical.NewInt(int64(r.IntN(5)))})
		case 2:
			return canonical.NewObject(canonical.Member{Key: "id", Value: id()}, canonical.Member{Key: "a", Value: canonical.Float(float64(r.IntN(5)))})
		case 3:
			return canonical.NewObject(canonical.Member{Key: "b", Value: canonical.Null{}})
		default:
			return canonical.NewObject(canonical.Member{Key: "id", Value: id()})
		}
	}
	ops := make([]operation, n)
	for i := range ops {
		switch k := r.IntN(10); {
		case k < 4:
			ops[i] = operation{op: "insert", record: rec(r.IntN(10) > 0)}
		case k < 6:
			ops[i] = operation{op: "update", filter: filter(), set: rec(false)}
		case k < 7:
			f := filter()
			if f.Len() == 0 || (r.IntN(3) == 0 && !f.Has("id")) {
				// Wholesale deletes would empty the table too often.
				f = canonical.NewObject(canonical.Member{Key: "id", Value: id()})
			}
			ops[i] = operation{op: "delete", filter: f}
		default:
			o := operation{op: "upsert", record: rec(r.IntN(10) > 0)}
			if r.IntN(4) == 0 {
				o.key = "c"
			}
			ops[i] = o
		}
	}
	return ops
}

// The chunked, copy-on-write tables agree with the slice model over random operation
// sequences, and no older state (snapshot) ever changes afterwards. Seeds 5 to 8 send
// PATCHes of hundreds of operations, which switch to the transaction-wide index.
func TestTablesMatchReferenceModel(t *testing.T) {
	builds := ixBuilds.Load()
	defer func() {
		if ixBuilds.Load() == builds {
			t.Error("no PATCH used the transaction-wide index")
		}
	}()
	for seed := uint64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, seed*7))
			pk := map[string]string{}
			var schemas []tableSchema
			if seed%2 == 0 {
				pk["t"] = "id"
				schemas = []tableSchema{{Name: "t", PrimaryKey: "id", Fields: canonical.Object{}}}
			}
			initial := canonical.Array{}
			for i := range 600 {
				initial = append(initial, canonical.NewObject(
					canonical.Member{Key: "id", Value: canonical.NewInt(int64(i))},
					canonical.Member{Key: "a", Value: canonical.NewInt(int64(i % 5))},
					canonical.Member{Key: "c", Value: canonical.String("x")}))
			}
			req := &initRequest{
				tables:   canonical.NewObject(canonical.Member{Key: "t", Value: initial}),
				schemas:  schemas,
				unstable: []unstableField{{Table: "t", Field: "c"}, {Table: "u", Field: "c"}, {Table: "a", Field: "b"}},
			}
			tr, e := newTrial("m", req)
			if e != nil {
				t.Fatal(e)
			}
			model := &refModel{tables: map[string][]canonical.Object{}, pk: pk}
			for _, v := range initial {
				model.tables["t"] = append(model.tables["t"], v.(canonical.Object))
			}
			unstable := map[string][]string{"t": {"c"}, "u": {"c"}, "a": {"b"}}
			type saved struct {
				st           *dbState
				full, stable string
			}
			var history []saved
			steps, big := 250, seed > 4
			if big {
				steps = 40
			}
			for step := range steps {
				table := "t"
				switch r.IntN(8) {
				case 0:
					table = "u"
				case 1:
					// Sorts first, so its creation shifts every later byte of the state.
					table = "a"
				}
				nOps := 1 + r.IntN(4)
				if big {
					nOps = 100 + r.IntN(900)
				}
				ops := randomOps(r, nOps)
				wantN, wantErr := model.apply(table, ops)
				next, gotN, e := tr.applyPatch(table, ops)
				gotErr := ""
				if e != nil {
					gotErr = e.Type
				}
				if gotErr != wantErr || (e == nil && gotN != wantN) {
					t.Fatalf("step %d: got (%d, %q), model (%d, %q)", step, gotN, gotErr, wantN, wantErr)
				}
				if e == nil {
					tr.current = next
				}
				if step%10 == 0 {
					history = append(history, saved{tr.current, string(tr.current.canonicalBytes(false)), string(tr.current.canonicalBytes(true))})
				}
				if got, want := string(tr.current.canonicalBytes(false)), model.canonical(nil); got != want {
					t.Fatalf("step %d: state diverged\n got %.300s\nwant %.300s", step, got, want)
				}
				// Hashes resume from checkpoints of earlier states; they must equal a
				// plain sha256 of the canonical bytes.
				full, stable, _ := tr.current.hashes(tr.stableIsFull(tr.current))
				if full != shaHex(tr.current.canonicalBytes(false)) || stable != shaHex(tr.current.canonicalBytes(true)) {
					t.Fatalf("step %d: checkpointed hashes disagree with the canonical bytes", step)
				}
				if step%37 == 0 && len(history) > 0 && !big {
					// Jump back to an older state, as restore does, and continue from it.
					h := history[r.IntN(len(history))]
					tr.current = h.st
					model = modelFromCanonical(t, h.full, pk)
				}
			}
			if got, want := string(tr.current.canonicalBytes(true)), model.canonical(unstable); got != want {
				t.Fatalf("stable bytes diverged\n got %.300s\nwant %.300s", got, want)
			}
			full, stable, _ := tr.current.hashes(tr.stableIsFull(tr.current))
			if full != canonical.Hash(mustParseValue(t, model.canonical(nil))) || stable != canonical.Hash(mustParseValue(t, model.canonical(unstable))) {
				t.Fatal("hashes disagree with the model's canonical form")
			}
			for i, h := range history {
				if string(h.st.canonicalBytes(false)) != h.full || string(h.st.canonicalBytes(true)) != h.stable {
					t.Fatalf("saved state %d changed after later patches", i)
				}
			}
		})
	}
}

func shaHex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func modelFromCanonical(t testing.TB, doc string, pk map[string]string) *refModel {
	t.Helper()
	m := &refModel{tables: map[string][]canonical.Object{}, pk: pk}
	for name, v := range mustParseValue(t, doc).(canonical.Object).All() {
		m.tables[name] = []canonical.Object{}
		for _, r := range v.(canonical.Array) {
			m.tables[name] = append(m.tables[name], r.(canonical.Object))
		}
	}
	return m
}

func mustParseValue(t testing.TB, s string) canonical.Value {
	t.Helper()
	v, err := canonical.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Repacking after heavy deletes keeps order and content.
func TestDeleteRepack(t *testing.T) {
	recs := make([]*record, 2000)
	for i := range recs {
		recs[i] = newRecord(canonical.NewObject(canonical.Member{Key: "id", Value: canonical.NewInt(int64(i))}), nil)
	}
	tx := beginTable(newTable(recs))
	var locs []loc
	for ci, c := range tx.chunks {
		for ri := range c.recs {
			if (ci*chunkSize+ri)%10 != 0 {
				locs = append(locs, loc{ci, ri})
			}
		}
	}
	tx.remove(locs)
	tbl := tx.commit()
	if tbl.n != 200 || len(tbl.chunks) != 1 {
		t.Fatalf("after deleting 90%%: n=%d chunks=%d", tbl.n, len(tbl.chunks))
	}
	i := 0
	tbl.each(func(r *record) {
		if v, _ := r.val.Get("id"); !canonical.Equal(v, canonical.NewInt(int64(i*10))) {
			t.Fatalf("record %d = %s", i, r.full)
		}
		i++
	})
}
