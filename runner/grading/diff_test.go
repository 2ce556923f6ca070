package grading

import (
	"sort"
	"strconv"
	"strings"
	"testing"

	"tolokaforge.io/operator/api/canonical"
	"tolokaforge.io/operator/api/task"
)

func stateOf(t testing.TB, doc string) *stableState {
	t.Helper()
	v, err := canonical.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	st := &stableState{tables: map[string]canonical.Value{}}
	for k, tv := range v.(canonical.Object).All() {
		st.tables[k] = tv
		st.names = append(st.names, k)
	}
	sort.Strings(st.names)
	return st
}

func TestComputeDiffPairing(t *testing.T) {
	g := &gradeCtx{
		task: &task.TaskDescription{InitialState: &task.InitialState{Schemas: []task.TableSchema{
			{TableName: "items", PrimaryKey: "sku"}, {TableName: "orders", PrimaryKey: "id"}}}},
		cfg: &task.GradingConfig{StateChecks: &task.StateChecks{IDFields: []string{"a", "b"}}},
	}
	for _, c := range []struct {
		name, golden, trial string
		want                string // marshalled tables
		summary             string
		idFields            []string // nil: the table's [a, b]
	}{
		{
			name:    "schema primary key pairs records; id is just a field",
			golden:  `{"items":[{"sku":"A","id":1,"n":1},{"sku":"B","id":2,"n":2}]}`,
			trial:   `{"items":[{"sku":"B","id":9,"n":2},{"sku":"A","id":1,"n":5}]}`,
			want:    `{"items":{"added":[],"modified":[{"fields":[{"actual":9,"expected":2,"field":"id"}],"key":"B"},{"fields":[{"actual":5,"expected":1,"field":"n"}],"key":"A"}],"removed":[]}}`,
			summary: "hash mismatch (items: 0 added, 0 removed, 2 modified)",
		},
		{
			name:    "id pairs records when no schema names a key; added and removed",
			golden:  `{"t":[{"id":1,"v":"x"},{"id":2,"v":"y"}]}`,
			trial:   `{"t":[{"id":2,"v":"y"},{"id":3,"v":"z"}]}`,
			want:    `{"t":{"added":[{"id":3,"v":"z"}],"modified":[],"removed":[{"id":1,"v":"x"}]}}`,
			summary: "hash mismatch (t: 1 added, 1 removed, 0 modified)",
		},
		{
			name:    "int and float keys pair; int and float values differ as the hash sees them",
			golden:  `{"t":[{"id":1,"v":41}]}`,
			trial:   `{"t":[{"id":1.0,"v":41.0}]}`,
			want:    `{"t":{"added":[],"modified":[{"fields":[{"actual":1.0,"expected":1,"field":"id"},{"actual":41.0,"expected":41,"field":"v"}],"key":1}],"removed":[]}}`,
			summary: "hash mismatch (t: 0 added, 0 removed, 1 modified)",
		},
		{
			name:    "id_fields pair records with a composite key",
			golden:  `{"pairs":[{"a":1,"b":"x","v":1},{"a":1,"b":"y","v":2}]}`,
			trial:   `{"pairs":[{"a":1,"b":"y","v":3},{"a":1,"b":"x","v":1}]}`,
			want:    `{"pairs":{"added":[],"modified":[{"fields":[{"actual":3,"expected":2,"field":"v"}],"key":{"a":1,"b":"y"}}],"removed":[]}}`,
			summary: "hash mismatch (pairs: 0 added, 0 removed, 1 modified)",
		},
		{
			name:     "id_fields name the identity over the schema's key: a re-numbered record is modified, not removed and added",
			golden:   `{"orders":[{"id":1,"order_no":"O-7","status":"paid"}]}`,
			trial:    `{"orders":[{"id":2,"order_no":"O-7","status":"pending"}]}`,
			want:     `{"orders":{"added":[],"modified":[{"fields":[{"actual":2,"expected":1,"field":"id"},{"actual":"pending","expected":"paid","field":"status"}],"key":"O-7"}],"removed":[]}}`,
			summary:  "hash mismatch (orders: 0 added, 0 removed, 1 modified)",
			idFields: []string{"order_no"},
		},
		{
			name:     "without id_fields the same records pair by the schema's key",
			golden:   `{"orders":[{"id":1,"order_no":"O-7","status":"paid"}]}`,
			trial:    `{"orders":[{"id":2,"order_no":"O-7","status":"pending"}]}`,
			want:     `{"orders":{"added":[{"id":2,"order_no":"O-7","status":"pending"}],"modified":[],"removed":[{"id":1,"order_no":"O-7","status":"paid"}]}}`,
			summary:  "hash mismatch (orders: 1 added, 1 removed, 0 modified)",
			idFields: []string{},
		},
		{
			name:     "id_fields name the identity over an id field",
			golden:   `{"t":[{"id":1,"code":"A","v":1}]}`,
			trial:    `{"t":[{"id":5,"code":"A","v":1}]}`,
			want:     `{"t":{"added":[],"modified":[{"fields":[{"actual":5,"expected":1,"field":"id"}],"key":"A"}],"removed":[]}}`,
			summary:  "hash mismatch (t: 0 added, 0 removed, 1 modified)",
			idFields: []string{"code"},
		},
		{
			name:    "keyless records compare as a multiset",
			golden:  `{"log":[{"m":"a"},{"m":"a"},{"m":"b"}]}`,
			trial:   `{"log":[{"m":"b"},{"m":"a"},{"m":"c"}]}`,
			want:    `{"log":{"added":[{"m":"c"}],"modified":[],"removed":[{"m":"a"}]}}`,
			summary: "hash mismatch (log: 1 added, 1 removed, 0 modified)",
		},
		{
			name:    "a field present on one side only",
			golden:  `{"t":[{"id":1,"note":null}]}`,
			trial:   `{"t":[{"id":1,"extra":true}]}`,
			want:    `{"t":{"added":[],"modified":[{"fields":[{"absent_in":"expected","actual":true,"expected":null,"field":"extra"},{"absent_in":"actual","actual":null,"expected":null,"field":"note"}],"key":1}],"removed":[]}}`,
			summary: "hash mismatch (t: 0 added, 0 removed, 1 modified)",
		},
		{
			name:    "a table on one side only",
			golden:  `{"a":[],"gone":[{"id":1}]}`,
			trial:   `{"a":[],"new":[]}`,
			want:    `{"gone":{"added":[],"modified":[],"removed":[{"id":1}],"table_absent_in":"actual"},"new":{"added":[],"modified":[],"removed":[],"table_absent_in":"expected"}}`,
			summary: "hash mismatch (gone: table absent from the trial's state, 1 removed; new: table absent from the golden state, 0 added)",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := *g
			if c.idFields != nil {
				g.cfg = &task.GradingConfig{StateChecks: &task.StateChecks{IDFields: c.idFields}}
			}
			d := computeDiff(stateOf(t, c.golden), stateOf(t, c.trial), g.pairingFields)
			full, err := canonical.Parse(d.marshal(100))
			if err != nil {
				t.Fatal(err)
			}
			tables, _ := full.(canonical.Object).Get("tables")
			if got := string(canonical.Marshal(tables)); got != c.want {
				t.Errorf("tables:\n got %s\nwant %s", got, c.want)
			}
			if d.summary != c.summary {
				t.Errorf("summary = %q, want %q", d.summary, c.summary)
			}
		})
	}
}

func TestDiffLinesAreCapped(t *testing.T) {
	var g, tr strings.Builder
	g.WriteString(`{"t":[`)
	tr.WriteString(`{"t":[`)
	for i := range 50 {
		if i > 0 {
			g.WriteString(",")
			tr.WriteString(",")
		}
		g.WriteString(`{"id":` + strconv.Itoa(i) + `,"v":0}`)
		tr.WriteString(`{"id":` + strconv.Itoa(i) + `,"v":1}`)
	}
	g.WriteString("]}")
	tr.WriteString("]}")
	d := computeDiff(stateOf(t, g.String()), stateOf(t, tr.String()), func(string, []canonical.Value) []string { return []string{"id"} })
	v, _ := canonical.Parse(d.marshal(10))
	lines, _ := v.(canonical.Object).Get("diff_lines")
	arr := lines.(canonical.Array)
	if len(arr) != 11 || !strings.HasSuffix(string(arr[10].(canonical.String)), "more diff lines not shown") {
		t.Errorf("diff_lines = %s", canonical.Marshal(lines))
	}
	if d.modified != 50 {
		t.Errorf("modified = %d", d.modified)
	}
}

func TestUnifiedDiff(t *testing.T) {
	split := func(s string) []string {
		if s == "" {
			return nil
		}
		return strings.Split(s, "\n")
	}
	for _, c := range []struct{ name, a, b, want string }{
		{"equal", "a\nb", "a\nb", ""},
		{"one change in the middle", "1\n2\n3\n4\n5\n6\n7\n8\n9", "1\n2\n3\n4\nX\n6\n7\n8\n9",
			"--- a\n+++ b\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+X\n 6\n 7\n 8"},
		{"two far changes make two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11", "X\n2\n3\n4\n5\n6\n7\n8\n9\n10\nY",
			"--- a\n+++ b\n@@ -1,4 +1,4 @@\n-1\n+X\n 2\n 3\n 4\n@@ -8,4 +8,4 @@\n 8\n 9\n 10\n-11\n+Y"},
		{"insert into empty", "", "a\nb", "--- a\n+++ b\n@@ -0,0 +1,2 @@\n+a\n+b"},
		{"delete everything", "a", "", "--- a\n+++ b\n@@ -1 +0,0 @@\n-a"},
		{"pure insertion keeps context", "a\nb\nc", "a\nb\nX\nc", "--- a\n+++ b\n@@ -1,3 +1,4 @@\n a\n b\n+X\n c"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := strings.Join(unifiedDiff(split(c.a), split(c.b), "a", "b", 3), "\n")
			if got != c.want {
				t.Errorf("diff:\n%s\nwant:\n%s", got, c.want)
			}
		})
	}
}

// FuzzLineEdits checks the edit script: it walks both inputs in order, equal steps pair
// equal lines, and a script with no change means the inputs are equal.
func FuzzLineEdits(f *testing.F) {
	f.Add("a\nb\nc", "a\nc\nd")
	f.Add("", "x")
	f.Add("x\nx\nx", "x")
	f.Add("1\n2\n3\n4\n5", "5\n4\n3\n2\n1")
	f.Fuzz(func(t *testing.T, sa, sb string) {
		a, b := strings.Split(sa, "\n"), strings.Split(sb, "\n")
		if len(a)+len(b) > 400 {
			return
		}
		ia, ib := 0, 0
		for _, e := range lineEdits(a, b) {
			switch e.op {
			case opEqual:
				if e.a != ia || e.b != ib || a[e.a] != b[e.b] {
					t.Fatalf("bad equal step %+v at %d,%d", e, ia, ib)
				}
				ia++
				ib++
			case opDelete:
				if e.a != ia {
					t.Fatalf("delete at %d, expected %d", e.a, ia)
				}
				ia++
			case opInsert:
				if e.b != ib {
					t.Fatalf("insert at %d, expected %d", e.b, ib)
				}
				ib++
			}
		}
		if ia != len(a) || ib != len(b) {
			t.Fatalf("script covers %d/%d and %d/%d lines", ia, len(a), ib, len(b))
		}
		if (unifiedDiff(a, b, "a", "b", 3) == nil) != (sa == sb) {
			t.Fatalf("diff presence disagrees with equality")
		}
	})
}

func TestLineEditsPastTheSearchBound(t *testing.T) {
	var a, b []string
	for i := range maxEditDistance + 200 {
		a = append(a, "a"+strconv.Itoa(i))
		b = append(b, "b"+strconv.Itoa(i))
	}
	a = append([]string{"same"}, append(a, "tail")...)
	b = append([]string{"same"}, append(b, "tail")...)
	edits := lineEdits(a, b)
	counts := map[editOp]int{}
	for _, e := range edits {
		counts[e.op]++
	}
	if counts[opEqual] != 2 || counts[opDelete] != len(a)-2 || counts[opInsert] != len(b)-2 {
		t.Errorf("coarse script counts = %v", counts)
	}
}
