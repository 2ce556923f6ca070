package dbservice

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"tolokaforge.io/operator/api/canonical"
	"tolokaforge.io/operator/api/task"
)

// The service recognises a dict table by the importer's synthetic key column; the two
// names must never drift apart.
func TestDictKeyFieldIsTheImporters(t *testing.T) {
	if dictKeyField != task.DictKeyField {
		t.Fatalf("dbservice's dictKeyField %q, api/task's DictKeyField %q", dictKeyField, task.DictKeyField)
	}
}

// hashOf initialises a trial over HTTP and returns its GET /state/hash body.
func hashOf(t *testing.T, base, id, body string) string {
	t.Helper()
	if code, resp := rawDo(t, "POST", base+"/trials/"+id+"/init", body); code != 201 {
		t.Fatalf("init %s: %d %s", id, code, resp)
	}
	code, resp := rawDo(t, "GET", base+"/trials/"+id+"/state/hash", "")
	if code != 200 {
		t.Fatalf("hash %s: %d %s", id, code, resp)
	}
	return strings.Replace(resp, `"version":1`, "", 1)
}

// Hash vectors: a table keyed by the synthetic key column is a dict, so its records'
// order is not hashed; any other table is a list, whose order is.
func TestDictTableHashIgnoresRecordOrder(t *testing.T) {
	_, base := startServer(t, Options{})
	const (
		dictSchema = `"schemas":[{"table_name":"users","primary_key":"__tolokaforge_key__"}]`
		noah       = `{"__tolokaforge_key__":"noah_brown_6181","name":"Noah","address":{"city":"Austin"}}`
		mia        = `{"__tolokaforge_key__":"mia_li_3668","name":"Mia","address":{"city":"Boston"}}`
		miaDenver  = `{"__tolokaforge_key__":"mia_li_3668","name":"Mia","address":{"city":"Denver"}}`
	)
	init := func(users, log, extra string) string {
		return `{"tables":{"users":[` + users + `],"log":[` + log + `]}` + extra + `}`
	}
	ref := hashOf(t, base, "ref", init(noah+","+mia, `{"n":1},{"n":2}`, ","+dictSchema))
	for _, c := range []struct {
		name, body string
		equal      bool
	}{
		{"the same dict, records in the other order", init(mia+","+noah, `{"n":1},{"n":2}`, ","+dictSchema), true},
		{"a changed value", init(noah+","+miaDenver, `{"n":1},{"n":2}`, ","+dictSchema), false},
		{"the same records under swapped keys", init(strings.Replace(noah, "noah_brown_6181", "x", 1)+","+strings.Replace(mia, "mia_li_3668", "noah_brown_6181", 1), `{"n":1},{"n":2}`, ","+dictSchema), false},
		{"a list table's records in the other order", init(noah+","+mia, `{"n":2},{"n":1}`, ","+dictSchema), false},
		// The reference hashes users in key order (mia, noah): the same list unordered
		// hashes as written.
		{"users as a list table (no schema), records not in key order", init(noah+","+mia, `{"n":1},{"n":2}`, ""), false},
		{"users as a list table (no schema), records in key order", init(mia+","+noah, `{"n":1},{"n":2}`, ""), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := hashOf(t, base, fmt.Sprintf("c%x", sha256.Sum256([]byte(c.name)))[:20], c.body)
			if (got == ref) != c.equal {
				t.Fatalf("hash %s, reference %s: equal=%v, want %v", got, ref, got == ref, c.equal)
			}
		})
	}

	// Deleting a record and inserting it again moves it to the end of the list: the
	// state still holds it there (Python tools get the dict in that order), and hashes
	// as the dict it was.
	if code, resp := rawDo(t, "POST", base+"/trials/mv/init", init(noah+","+mia, `{"n":1},{"n":2}`, ","+dictSchema)); code != 201 {
		t.Fatalf("init: %d %s", code, resp)
	}
	patch := `{"operations":[{"op":"delete","filter":{"__tolokaforge_key__":"noah_brown_6181"}},{"op":"insert","record":` + noah + `}]}`
	if code, resp := rawDo(t, "PATCH", base+"/trials/mv/state/users", patch); code != 200 {
		t.Fatalf("patch: %d %s", code, resp)
	}
	code, resp := rawDo(t, "GET", base+"/trials/mv/state", "")
	if want := `"users":[{"__tolokaforge_key__":"mia_li_3668","address":{"city":"Boston"},"name":"Mia"},{"__tolokaforge_key__":"noah_brown_6181","address":{"city":"Austin"},"name":"Noah"}]`; code != 200 || !strings.Contains(resp, want) {
		t.Fatalf("the stored order changed: %d %s", code, resp)
	}
	code, resp = rawDo(t, "GET", base+"/trials/mv/state/hash", "")
	if got := strings.Replace(resp, `"version":2`, "", 1); code != 200 || got != ref {
		t.Fatalf("after delete and re-insert: %d %s, want %s", code, got, ref)
	}
}

// A dict table that declares its key unstable: the stable form holds no key, so the
// stable hash orders the records by their stable bytes alone.
func TestDictTableUnstableKey(t *testing.T) {
	mk := func(users string) *trial {
		t.Helper()
		v, err := canonical.Parse([]byte(`{"users":[` + users + `]}`))
		if err != nil {
			t.Fatal(err)
		}
		tr, e := newTrial("u", &initRequest{tables: v.(canonical.Object),
			schemas:  []tableSchema{{Name: "users", PrimaryKey: dictKeyField}},
			unstable: []unstableField{{Table: "users", Field: dictKeyField}}})
		if e != nil {
			t.Fatal(e)
		}
		return tr
	}
	a := mk(`{"__tolokaforge_key__":"a","n":1},{"__tolokaforge_key__":"b","n":2}`)
	b := mk(`{"__tolokaforge_key__":"b","n":1},{"__tolokaforge_key__":"a","n":2}`)
	af, as, _ := a.current.hashes(false)
	bf, bs, _ := b.current.hashes(false)
	if af == bf {
		t.Fatal("the full hashes of different dicts are equal")
	}
	if as != bs {
		t.Fatalf("the stable hashes differ (%s, %s) though the stable forms hold the same records", as, bs)
	}
}

// refDictBytes is the canonical form the hash covers, built the obvious way: the state's
// value with each dict table's records sorted by key, then by their bytes.
func refDictBytes(s *dbState, stable bool, unstable func(string) []string) []byte {
	v := s.value(stable, unstable)
	ms := make([]canonical.Member, 0, v.Len())
	for name, tv := range v.All() {
		arr := tv.(canonical.Array)
		if _, ok := s.dict[name]; ok {
			arr = slices.Clone(arr)
			key := func(r canonical.Value) (string, bool) {
				k, ok := r.(canonical.Object).Get(dictKeyField)
				if s, isStr := k.(canonical.String); ok && isStr {
					return string(s), true
				}
				return "", false
			}
			slices.SortFunc(arr, func(a, b canonical.Value) int {
				ka, oka := key(a)
				kb, okb := key(b)
				if oka != okb {
					if oka {
						return -1
					}
					return 1
				}
				if c := strings.Compare(ka, kb); c != 0 {
					return c
				}
				return bytes.Compare(canonical.Marshal(a), canonical.Marshal(b))
			})
		}
		ms = append(ms, canonical.Member{Key: name, Value: arr})
	}
	return canonical.Marshal(canonical.NewObject(ms...))
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Random PATCHes over a dict table (with a list table sorting before and after it):
// the checkpointed hashes equal a plain sha256 of the key-ordered canonical form after
// every step, and equal the hash of a fresh trial holding the same records in another
// order.
func TestDictTableHashMatchesReference(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, seed*31))
			key := func() canonical.Value { return canonical.String(fmt.Sprintf("k%03d", r.IntN(400))) }
			rec := func(withKey bool) canonical.Object {
				ms := []canonical.Member{{Key: "a", Value: canonical.NewInt(int64(r.IntN(5)))},
					{Key: "c", Value: canonical.String(fmt.Sprint("c", r.IntN(3)))}}
				if withKey {
					ms = append(ms, canonical.Member{Key: dictKeyField, Value: key()})
				}
				return canonical.NewObject(ms...)
			}
			users := canonical.Array{}
			for i := range 600 {
				users = append(users, canonical.NewObject(
					canonical.Member{Key: dictKeyField, Value: canonical.String(fmt.Sprintf("k%03d", i))},
					canonical.Member{Key: "a", Value: canonical.NewInt(int64(i % 5))}))
			}
			tables := canonical.NewObject(
				canonical.Member{Key: "a", Value: canonical.Array{canonical.NewObject(canonical.Member{Key: "n", Value: canonical.NewInt(1)})}},
				canonical.Member{Key: "users", Value: users},
				canonical.Member{Key: "z", Value: canonical.Array{}})
			schemas := []tableSchema{{Name: "users", PrimaryKey: dictKeyField}}
			unstable := []unstableField{{Table: "users", Field: "c"}}
			tr, e := newTrial("d", &initRequest{tables: tables, schemas: schemas, unstable: unstable})
			if e != nil {
				t.Fatal(e)
			}
			for step := range 200 {
				table := "users"
				var ops []operation
				switch r.IntN(10) {
				case 0:
					table = []string{"a", "z"}[r.IntN(2)]
					ops = []operation{{op: "insert", record: canonical.NewObject(canonical.Member{Key: "n", Value: canonical.NewInt(int64(step))})}}
				default:
					for range 1 + r.IntN(3) {
						f := canonical.NewObject(canonical.Member{Key: dictKeyField, Value: key()})
						switch r.IntN(4) {
						case 0:
							ops = append(ops, operation{op: "delete", filter: f})
						case 1:
							ops = append(ops, operation{op: "update", filter: f, set: rec(false)})
						case 2:
							ops = append(ops, operation{op: "upsert", record: rec(true)})
						default:
							// A keyless record: still hashed independently of its place.
							ops = append(ops, operation{op: "insert", record: rec(r.IntN(8) > 0)})
						}
					}
				}
				next, _, e := tr.applyPatch(table, ops)
				if e != nil {
					continue // a duplicate key: nothing changed
				}
				tr.current = next
				full, stable, _ := tr.current.hashes(tr.stableIsFull(tr.current))
				if want := sha(refDictBytes(tr.current, false, tr.unstableFor)); full != want {
					t.Fatalf("step %d: full hash %s, reference %s", step, full, want)
				}
				if want := sha(refDictBytes(tr.current, true, tr.unstableFor)); stable != want {
					t.Fatalf("step %d: stable hash %s, reference %s", step, stable, want)
				}
			}
			// The same records in another order, initialised afresh, hash the same.
			cur := tr.current.value(false, nil)
			held, _ := cur.Get("users")
			shuffled := slices.Clone(held.(canonical.Array))
			r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			fresh, e := newTrial("f", &initRequest{tables: cur.With("users", shuffled), schemas: schemas, unstable: unstable})
			if e != nil {
				t.Fatal(e)
			}
			f1, s1, _ := tr.current.hashes(false)
			f2, s2, _ := fresh.current.hashes(false)
			if f1 != f2 || s1 != s2 {
				t.Fatalf("the same records in another order hash differently: %s/%s, %s/%s", f1, s1, f2, s2)
			}
		})
	}
}
