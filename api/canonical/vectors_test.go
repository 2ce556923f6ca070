package canonical

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

// loadTestdata reads a testdata file with Parse itself: encoding/json would replace the
// lone surrogates some vectors carry with U+FFFD.
func loadTestdata(t testing.TB, name string) Object {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	v, err := Parse(data)
	if err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	return v.(Object)
}

func field(t testing.TB, o Value, key string) Value {
	t.Helper()
	v, ok := o.(Object).Get(key)
	if !ok {
		t.Fatalf("vector lacks %q", key)
	}
	return v
}

func str(t testing.TB, o Value, key string) string {
	t.Helper()
	s, ok := field(t, o, key).(String)
	if !ok {
		t.Fatalf("vector field %q is not a string", key)
	}
	return string(s)
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func TestSharedCanonicalVectors(t *testing.T) {
	vecs := loadTestdata(t, "stable_hash.json")
	cases := field(t, vecs, "canonical").(Array)
	if len(cases) == 0 {
		t.Fatal("no canonical vectors")
	}
	for i, c := range cases {
		in, want, wantSum := str(t, c, "json"), str(t, c, "canonical"), str(t, c, "sha256")
		v, err := Parse([]byte(in))
		if err != nil {
			t.Errorf("case %d: parse %q: %v", i, in, err)
			continue
		}
		if got := string(Marshal(v)); got != want {
			t.Errorf("case %d: canonical\n got %s\nwant %s", i, got, want)
		}
		if got := Hash(v); got != wantSum {
			t.Errorf("case %d: hash %s, want %s", i, got, wantSum)
		}
		if got, err := HashJSON([]byte(in)); err != nil || got != wantSum {
			t.Errorf("case %d: HashJSON = %s, %v; want %s", i, got, err, wantSum)
		}
	}
}

// The stable half of these vectors is checked end to end by the dbservice tests; here
// the full hash and the plain field removal pin the encoder.
func TestSharedTableVectors(t *testing.T) {
	vecs := loadTestdata(t, "stable_hash.json")
	cases := field(t, field(t, vecs, "tables"), "cases").(Array)
	for i, c := range cases {
		tables, err := Parse([]byte(str(t, c, "tables_json")))
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if got, want := Hash(tables), str(t, c, "full_sha256"); got != want {
			t.Errorf("case %d: full hash %s, want %s", i, got, want)
		}
		stable := tables.(Object)
		for _, uf := range field(t, c, "unstable_fields").(Array) {
			tbl, fld := str(t, uf, "table_name"), str(t, uf, "field_name")
			recs, ok := stable.Get(tbl)
			if !ok {
				continue
			}
			out := make(Array, len(recs.(Array)))
			for j, r := range recs.(Array) {
				out[j] = r.(Object).Without(fld)
			}
			stable = stable.With(tbl, out)
		}
		if got, want := string(Marshal(stable)), str(t, c, "stable_canonical"); got != want {
			t.Errorf("case %d: stable canonical\n got %s\nwant %s", i, got, want)
		}
		if got, want := Hash(stable), str(t, c, "stable_sha256"); got != want {
			t.Errorf("case %d: stable hash %s, want %s", i, got, want)
		}
	}
}

const shopInitialDigest = "fb5cce61f84a018b3860412ad354f6efc0e8c1887b869918f6f03de158cc0977"

func TestShopInitialStateDigest(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "shop_orders_02_initial_state.json"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := HashJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	if got != shopInitialDigest {
		t.Fatalf("shop initial hash %s, want %s", got, shopInitialDigest)
	}
}

// python_vectors.json is written by testdata/gen_python_vectors.py with CPython.
func TestPythonScalarVectors(t *testing.T) {
	vecs := loadTestdata(t, "python_vectors.json")
	for _, group := range []string{"floats", "ints", "strings"} {
		for i, c := range field(t, vecs, group).(Array) {
			in, want := str(t, c, "json"), str(t, c, "canonical")
			got, err := Canonicalize([]byte(in))
			if err != nil {
				t.Errorf("%s[%d] %q: %v", group, i, in, err)
				continue
			}
			if string(got) != want {
				t.Errorf("%s[%d] %q: got %s, want %s", group, i, in, got, want)
			}
		}
	}
}

func TestPythonIndentVectors(t *testing.T) {
	vecs := loadTestdata(t, "python_vectors.json")
	for i, c := range field(t, vecs, "indent").(Array) {
		v, err := Parse([]byte(str(t, c, "json")))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := string(Indent(v)), str(t, c, "indent"); got != want {
			t.Errorf("indent[%d]:\n got %q\nwant %q", i, got, want)
		}
	}
}
