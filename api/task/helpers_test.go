package task

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// baseSpec is the smallest valid TrialSpec the table tests mutate: one change
// per case, so each case's error can only come from that change.
const baseSpec = `{
  "trial_id": "t1:0", "run_id": "r1", "attempt_id": "a1",
  "task": {
    "task_id": "t1", "name": "n", "category": "c", "description": "d",
    "adapter_type": "native", "system_prompt": "p",
    "agent_tools": [
      {"name": "get", "description": "g", "parameters": {"type": "object"}},
      {"name": "put", "description": "p", "source": {"toolset": "x", "module_path": "m", "class_name": "C"}}
    ],
    "grading": {"weights": {"state_checks": 1}, "state_checks": {"hash_enabled": true, "expected_hash": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}}
  },
  "agent": {"provider": "oracle"}
}`

// mutation sets (or, with a nil value and del, deletes) one path of baseSpec.
type mutation struct {
	path  string
	value any
	del   bool
}

func set(path string, v any) mutation { return mutation{path: path, value: v} }
func del(path string) mutation        { return mutation{path: path, del: true} }

// raw embeds literal JSON in a mutation value.
func raw(s string) json.RawMessage { return json.RawMessage(s) }

var segRE = regexp.MustCompile(`^([^\[]*)((?:\[\d+\])*)$`)

// specWith returns baseSpec with the mutations applied. Paths use the same
// syntax as DecodeError ("task.agent_tools[1].source"); intermediate objects
// are created as needed.
func specWith(t *testing.T, muts ...mutation) []byte {
	t.Helper()
	var root any
	if err := json.Unmarshal([]byte(baseSpec), &root); err != nil {
		t.Fatal(err)
	}
	for _, m := range muts {
		root = apply(t, root, strings.Split(m.path, "."), m)
	}
	out, err := json.Marshal(root)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func apply(t *testing.T, node any, segs []string, m mutation) any {
	t.Helper()
	sm := segRE.FindStringSubmatch(segs[0])
	if sm == nil {
		t.Fatalf("bad path segment %q", segs[0])
	}
	key := sm[1]
	var idx []int
	for _, s := range regexp.MustCompile(`\d+`).FindAllString(sm[2], -1) {
		n, _ := strconv.Atoi(s)
		idx = append(idx, n)
	}
	obj, ok := node.(map[string]any)
	if !ok || obj == nil {
		obj = map[string]any{}
	}
	last := len(segs) == 1
	if len(idx) == 0 {
		if last {
			if m.del {
				delete(obj, key)
			} else {
				obj[key] = m.value
			}
			return obj
		}
		obj[key] = apply(t, obj[key], segs[1:], m)
		return obj
	}
	// key[i][j]...: walk into lists, growing them with empty objects.
	var setIn func(list any, idx []int) any
	setIn = func(list any, idx []int) any {
		l, _ := list.([]any)
		for len(l) <= idx[0] {
			l = append(l, map[string]any{})
		}
		switch {
		case len(idx) > 1:
			l[idx[0]] = setIn(l[idx[0]], idx[1:])
		case last:
			l[idx[0]] = m.value
		default:
			l[idx[0]] = apply(t, l[idx[0]], segs[1:], m)
		}
		return l
	}
	obj[key] = setIn(obj[key], idx)
	return obj
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// wantErr asserts err is a *DecodeError with exactly the text want.
func wantErr(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want error %q, got none", want)
	}
	if _, ok := err.(*DecodeError); !ok {
		t.Fatalf("error %T (%v) is not *DecodeError", err, err)
	}
	if err.Error() != want {
		t.Fatalf("error\n got %s\nwant %s", err.Error(), want)
	}
}

// readTestdataSpec wraps the Tau example task in a minimal TrialSpec.
func readTestdataSpec(t *testing.T) []byte {
	t.Helper()
	spec, err := json.Marshal(map[string]any{
		"trial_id": "airline_task_001:0", "run_id": "r", "attempt_id": "a",
		"task":  json.RawMessage(readTestdata(t, "tau_example.json")),
		"agent": map[string]any{"provider": "oracle"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return spec
}
