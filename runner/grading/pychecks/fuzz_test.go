package pychecks

import (
	"encoding/json"
	"testing"
)

// FuzzReport feeds arbitrary bytes as the check runner's report: reading it never
// panics, and whatever it yields is a result the Grade can carry.
func FuzzReport(f *testing.F) {
	for _, s := range []string{
		`{"event":"loaded","checks":["a","b"],"interface_version":"1.0"}` + "\n" +
			`{"event":"result","check_name":"a","status":"passed","score":1,"message":"ok","details_json":"{}"}` + "\n" + `{"event":"done"}` + "\n",
		`{"event":"result","check_name":"a","status":"passed","score":1}` + "\n",
		`{"event":"loaded","checks":["a"]}` + "\n" + `{"event":"result","check_name":"a","status":"failed","score":2}` + "\n",
		`{"event":"loaded","checks":["a"]}` + "\n" + `{"event":"result","check_name":"a","status":"error","details_json":"not json"}`,
		`{"event":"suite_error","kind":"module","module":"x","message":"ModuleNotFoundError"}` + "\n",
		"garbage\n", "{\"event\":\"unknown\"}\n", "\n\n",
	} {
		f.Add([]byte(s), 7)
	}
	f.Fuzz(func(t *testing.T, data []byte, chunk int) {
		w := &reportWriter{}
		if chunk <= 0 {
			chunk = 1
		}
		for len(data) > 0 { // in pieces, as a pipe delivers it
			n := min(chunk, len(data))
			if m, err := w.Write(data[:n]); err != nil || m != n {
				t.Fatalf("Write = %d, %v", m, err)
			}
			data = data[n:]
		}
		rep, _ := w.finish("checks.py", nil, DefaultTimeout, false, nil, nil, &tailBuffer{cap: 64})
		for _, r := range rep.Results {
			switch r.Status {
			case StatusPassed, StatusFailed, StatusSkipped, StatusError:
			default:
				t.Fatalf("result %q has status %q", r.CheckName, r.Status)
			}
			if !(r.Score >= 0 && r.Score <= 1) {
				t.Fatalf("result %q has score %v", r.CheckName, r.Score)
			}
			if !json.Valid([]byte(r.DetailsJson)) {
				t.Fatalf("result %q has details_json %q", r.CheckName, r.DetailsJson)
			}
		}
	})
}

// FuzzTables: whatever the tables hold, the state a suite reads is one JSON object
// with every table in it.
func FuzzTables(f *testing.F) {
	f.Add(`[{"id":"a"},{"id":"b"}]`, "id", `[]`)
	f.Add(`[{"id":1},{"id":1}]`, "id", `5`)
	f.Add(`[{"x":1}]`, "", `{"a":1}`)
	f.Add(`not json`, "id", ``)
	f.Fuzz(func(t *testing.T, a, key, b string) {
		if !json.Valid([]byte(a)) || (b != "" && !json.Valid([]byte(b))) {
			return // the DB service hands over JSON
		}
		in := map[string]json.RawMessage{"a": json.RawMessage(a)}
		if b != "" {
			in["b"] = json.RawMessage(b)
		}
		out := Tables(in, map[string]string{"a": key, "b": key})
		var got map[string]json.RawMessage
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("Tables yielded %s: %v", out, err)
		}
		if len(got) != len(in) {
			t.Fatalf("Tables yielded %d tables from %d: %s", len(got), len(in), out)
		}
	})
}
