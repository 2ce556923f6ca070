package dbservice

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"tolokaforge.io/operator/api/canonical"
)

// The shared vectors are read with canonical.Parse: encoding/json would replace lone
// surrogates. The copy in api/canonical/testdata keeps the tests self-contained.
func loadVectors(t testing.TB) canonical.Object {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "api", "canonical", "testdata", "stable_hash.json"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := canonical.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return v.(canonical.Object)
}

func get(t testing.TB, v canonical.Value, key string) canonical.Value {
	t.Helper()
	o, ok := v.(canonical.Object)
	if !ok {
		t.Fatalf("%s of a non-object", key)
	}
	x, ok := o.Get(key)
	if !ok {
		t.Fatalf("missing %q", key)
	}
	return x
}

func getStr(t testing.TB, v canonical.Value, key string) string {
	t.Helper()
	return string(get(t, v, key).(canonical.String))
}

// vectorNamesOK reports whether every table name of a table vector is one the DB service
// accepts: the vectors were generated with arbitrary names (tabs, newlines, "/", "."),
// which the service refuses (names.go).
func vectorNamesOK(t testing.TB, c canonical.Value) bool {
	t.Helper()
	tables, err := canonical.Parse([]byte(getStr(t, c, "tables_json")))
	if err != nil {
		t.Fatal(err)
	}
	for name := range tables.(canonical.Object).All() {
		if _, _, ok := nameProblem(name); !ok {
			return false
		}
	}
	for _, u := range get(t, c, "unstable_fields").(canonical.Array) {
		if _, _, ok := nameProblem(getStr(t, u, "table_name")); !ok {
			return false
		}
	}
	return true
}

// End to end: init each table vector with its unstable fields, then GET .../state/hash
// and .../state/stable must give the reference digests and canonical text. A vector
// whose names the service refuses must get that refusal, and its digests are checked on
// a trial built in process, so no vector goes unchecked.
func TestTableVectorsOverHTTP(t *testing.T) {
	_, base := startServer(t, Options{})
	cases := get(t, get(t, loadVectors(t), "tables"), "cases").(canonical.Array)
	if len(cases) < 40 {
		t.Fatalf("only %d table vectors", len(cases))
	}
	served := 0
	for i, c := range cases {
		id := fmt.Sprintf("vec-%d", i)
		body := `{"tables":` + getStr(t, c, "tables_json") + `,"unstable_fields":` + string(canonical.Marshal(get(t, c, "unstable_fields"))) + `}`
		if !vectorNamesOK(t, c) {
			if code, resp := rawDo(t, "POST", base+"/trials/"+id+"/init", body); code != 400 || !strings.Contains(resp, `"error":"ValidationError"`) {
				t.Errorf("case %d init with refused names: %d %s", i, code, resp)
			}
			checkVectorInProcess(t, i, c)
			continue
		}
		served++
		if code, resp := rawDo(t, "POST", base+"/trials/"+id+"/init", body); code != 201 {
			t.Fatalf("case %d init: %d %s", i, code, resp)
		}
		code, resp := rawDo(t, "GET", base+"/trials/"+id+"/state/hash", "")
		if code != 200 {
			t.Fatalf("case %d hash: %d %s", i, code, resp)
		}
		want := fmt.Sprintf(`{"stable_hash":%q,"full_hash":%q,"version":1}`, getStr(t, c, "stable_sha256"), getStr(t, c, "full_sha256"))
		if resp != want {
			t.Errorf("case %d: hash response\n got %s\nwant %s", i, resp, want)
		}
		code, resp = rawDo(t, "GET", base+"/trials/"+id+"/state/stable", "")
		if code != 200 {
			t.Fatalf("case %d stable: %d %s", i, code, resp)
		}
		doc, err := canonical.Parse([]byte(resp))
		if err != nil {
			t.Fatalf("case %d: stable response is not JSON: %v", i, err)
		}
		if got := string(canonical.Marshal(get(t, doc, "data"))); got != getStr(t, c, "stable_canonical") {
			t.Errorf("case %d: stable data\n got %s\nwant %s", i, got, getStr(t, c, "stable_canonical"))
		}
	}
	if served < 10 {
		t.Fatalf("only %d table vectors went over HTTP", served)
	}
}

// checkVectorInProcess builds vector c's trial without the name checks of the request
// decoder and compares its digests and stable text with the reference.
func checkVectorInProcess(t *testing.T, i int, c canonical.Value) {
	t.Helper()
	tables, err := canonical.Parse([]byte(getStr(t, c, "tables_json")))
	if err != nil {
		t.Fatal(err)
	}
	req := &initRequest{tables: tables.(canonical.Object)}
	for _, u := range get(t, c, "unstable_fields").(canonical.Array) {
		uf := unstableField{Table: getStr(t, u, "table_name"), Field: getStr(t, u, "field_name")}
		if !slices.Contains(req.unstable, uf) {
			req.unstable = append(req.unstable, uf)
		}
	}
	tr, e := newTrial(fmt.Sprintf("vec-%d", i), req)
	if e != nil {
		t.Fatalf("case %d in process: %v", i, e)
	}
	full, stable, _ := tr.current.hashes(tr.stableIsFull(tr.current))
	if full != getStr(t, c, "full_sha256") || stable != getStr(t, c, "stable_sha256") {
		t.Errorf("case %d in process: hashes %s %s, want %s %s", i, full, stable, getStr(t, c, "full_sha256"), getStr(t, c, "stable_sha256"))
	}
	if got := string(tr.current.canonicalBytes(true)); got != getStr(t, c, "stable_canonical") {
		t.Errorf("case %d in process: stable data\n got %s\nwant %s", i, got, getStr(t, c, "stable_canonical"))
	}
}

// Each canonical vector is stored as a field value and read back through a query: the
// value survives request decoding, storage and response encoding byte for byte.
func TestCanonicalVectorsOverHTTP(t *testing.T) {
	_, base := startServer(t, Options{})
	for i, c := range get(t, loadVectors(t), "canonical").(canonical.Array) {
		id := fmt.Sprintf("cv-%d", i)
		body := `{"tables":{"t":[{"v":` + getStr(t, c, "json") + `}]}}`
		if code, resp := rawDo(t, "POST", base+"/trials/"+id+"/init", body); code != 201 {
			t.Fatalf("case %d init: %d %s", i, code, resp)
		}
		code, resp := rawDo(t, "POST", base+"/trials/"+id+"/query", `{"jsonpath":"$.db.t[0].v"}`)
		if code != 200 {
			t.Fatalf("case %d query: %d %s", i, code, resp)
		}
		want := `{"results":[` + getStr(t, c, "canonical") + `],"count":1}`
		if resp != want {
			t.Errorf("case %d: query\n got %s\nwant %s", i, resp, want)
		}
		code, resp = rawDo(t, "GET", base+"/trials/"+id+"/state", "")
		if code != 200 {
			t.Fatalf("case %d state: %d", i, code)
		}
		doc, err := canonical.Parse([]byte(resp))
		if err != nil {
			t.Fatalf("case %d: state response is not JSON: %v", i, err)
		}
		if got, want := string(canonical.Marshal(get(t, doc, "data"))), `{"t":[{"v":`+getStr(t, c, "canonical")+`}]}`; got != want {
			t.Errorf("case %d: state data\n got %s\nwant %s", i, got, want)
		}
	}
}
