package local

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const minimalTask = `{"task_id": "t", "name": "n", "category": "c", "description": "d", "adapter_type": "native",
	"system_prompt": "p", "agent_tools": [], "user_tools": [],
	"initial_state": {"tables": {"accounts": [{"id": "A", "balance": 300.0}]}}}`

func TestParseTask(t *testing.T) {
	cases := []struct {
		name, doc string
		err       string
		check     func(*testing.T, *LoadedTask)
	}{
		{"json task keeps float literals", minimalTask, "", func(t *testing.T, lt *LoadedTask) {
			if got := string(lt.Task.InitialState.Tables["accounts"]); !strings.Contains(got, "300.0") {
				t.Fatalf("tables = %s", got)
			}
		}},
		{"manifest", "apiVersion: eval.tolokaforge.io/v1alpha1\nkind: Task\nmetadata: {name: m}\nspec:\n  initialUserMessage: hi\n  maxTurns: 7\n  description: " + minimalTask,
			"", func(t *testing.T, lt *LoadedTask) {
				if lt.Task.TaskID != "t" || lt.InitialUserMessage != "hi" || lt.MaxTurns != 7 {
					t.Fatalf("loaded %+v", lt)
				}
			}},
		{"yaml task without kind", "task_id: t\nname: shop\ncategory: c\ndescription: d\nadapter_type: native\nsystem_prompt: p\n", "", nil},
		{"empty", "  \n", "empty file", nil},
		{"not an object", "[1, 2]", "not a JSON object: json: cannot unmarshal array into Go value of type struct { APIVersion string \"json:\\\"apiVersion\\\"\"; Kind string \"json:\\\"kind\\\"\" }", nil},
		{"other kind", "apiVersion: eval.tolokaforge.io/v1alpha1\nkind: Trial\n", `kind "Trial" apiVersion "eval.tolokaforge.io/v1alpha1": want kind Task, apiVersion eval.tolokaforge.io/v1alpha1 (or a bare TaskDescription)`, nil},
		{"unknown manifest field", "apiVersion: eval.tolokaforge.io/v1alpha1\nkind: Task\nspec:\n  descripton: {}\n", `task manifest: json: unknown field "descripton"`, nil},
		{"config map state", "apiVersion: eval.tolokaforge.io/v1alpha1\nkind: Task\nmetadata: {name: big}\nspec:\n  initialStateFrom: {configMapKeyRef: {name: s, key: k}}\n  description: " + minimalTask,
			`task "big": spec.initialStateFrom reads a ConfigMap, which needs a cluster; inline initial_state in spec.description for trial run`, nil},
		{"no description", "apiVersion: eval.tolokaforge.io/v1alpha1\nkind: Task\nmetadata: {name: e}\nspec: {}\n", `task "e": spec.description is missing`, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lt, err := parseTask([]byte(tc.doc))
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.check != nil {
				tc.check(t, lt)
			}
		})
	}
}

func TestParseTaskNamesTheBadKey(t *testing.T) {
	bad := strings.Replace(minimalTask, `"system_prompt"`, `"sytem_prompt": "x", "system_prompt"`, 1)
	_, err := parseTask([]byte(bad))
	if err == nil || !strings.HasPrefix(err.Error(), "TaskDescription: ") || !strings.Contains(err.Error(), "sytem_prompt") {
		t.Fatalf("err = %v", err)
	}
	p := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(p, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadTask(p); err == nil || !strings.HasPrefix(err.Error(), "task "+p+": TaskDescription: ") {
		t.Fatalf("LoadTask err = %v", err)
	}
}

func FuzzParseTask(f *testing.F) {
	f.Add(minimalTask)
	f.Add("apiVersion: eval.tolokaforge.io/v1alpha1\nkind: Task\nspec:\n  description: " + minimalTask)
	f.Add("kind: Task")
	f.Add("{")
	f.Add("- a\n- b")
	f.Fuzz(func(t *testing.T, doc string) {
		lt, err := parseTask([]byte(doc))
		if err == nil && (lt == nil || lt.Task == nil) {
			t.Fatalf("no error and no task for %q", doc)
		}
	})
}
