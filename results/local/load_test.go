package local

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/api/task/pack"
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
		{"not an object", "[1, 2]", "not a task (" + wantTask + "): the document is a list, not an object", nil},
		{"text", "hello, this is not a task\n", "not a task (" + wantTask + "): the document is a string, not an object", nil},
		{"number", "42", "not a task (" + wantTask + "): the document is a number, not an object", nil},
		{"yaml null", "~", "not a task (" + wantTask + "): the document is null, not an object", nil},
		{"not yaml", "a: [", "not a task (" + wantTask + "): neither JSON nor YAML: yaml: line 1: did not find expected node content", nil},
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
	f.Add("hello, not a task")
	f.Add("42")
	f.Add("~")
	f.Fuzz(func(t *testing.T, doc string) {
		lt, err := parseTask([]byte(doc))
		if err == nil && (lt == nil || lt.Task == nil) {
			t.Fatalf("no error and no task for %q", doc)
		}
	})
}

func TestFindPacks(t *testing.T) {
	root := t.TempDir()
	mk := func(t *testing.T, files ...string) string {
		t.Helper()
		dir := filepath.Join(root, strings.ReplaceAll(t.Name(), "/", "_"))
		for _, f := range files {
			p := filepath.Join(dir, filepath.FromSlash(f))
			if strings.HasSuffix(f, "/") {
				if err := os.MkdirAll(p, 0o755); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	cases := []struct {
		name  string
		files []string
		want  []string // relative to the directory; "." is itself
		err   string   // after "task directory <dir>"
	}{
		{"pack", []string{"task.yaml", "grading.yaml", "fixtures/task.yaml"}, []string{"."}, ""},
		{"upstream project", []string{"README.md", "tasks/b/task.yaml", "tasks/a/task.yaml", "tasks/a/fixtures/tools.json", "data/x.json"},
			[]string{"tasks/a", "tasks/b"}, ""},
		{"project with categories", []string{"tasks/reasoning/t1/task.yaml", "tasks/tools/t2/task.yaml"},
			[]string{"tasks/reasoning/t1", "tasks/tools/t2"}, ""},
		{"folder of packs, nested pack dirs and hidden dirs skipped", []string{"p1/task.yaml", "p1/sub/task.yaml", "p2/task.yaml", ".git/x/task.yaml", "notes.txt"},
			[]string{"p1", "p2"}, ""},
		{"empty", []string{"./"}, nil, " is empty: want a task pack (a directory with task.yaml) or a project of packs (tasks/<id>/task.yaml)"},
		{"no task", []string{"README.md", "tasks/a/grading.yaml", "tasks/b/"}, nil,
			" holds no task: no task.yaml (or Harbor's task.toml with instruction.md) in it or in any directory below it (a task pack holds task.yaml; a project holds tasks/<id>/task.yaml; a Harbor task holds task.toml and instruction.md)"},
		{"task.yaml that is a directory", []string{"task.yaml/"}, nil,
			" holds no task: no task.yaml (or Harbor's task.toml with instruction.md) in it or in any directory below it (a task pack holds task.yaml; a project holds tasks/<id>/task.yaml; a Harbor task holds task.toml and instruction.md)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := mk(t, tc.files...)
			got, err := FindPacks(dir)
			if tc.err != "" {
				if err == nil || err.Error() != "task directory "+dir+tc.err {
					t.Fatalf("err = %v, want %q", err, "task directory "+dir+tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var rel []string
			for _, p := range got {
				r, _ := filepath.Rel(dir, p)
				rel = append(rel, filepath.ToSlash(r))
			}
			if strings.Join(rel, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("packs = %q, want %q", rel, tc.want)
			}
		})
	}
	if _, err := FindPacks(filepath.Join(root, "missing")); err == nil || !strings.HasPrefix(err.Error(), "task directory "+filepath.Join(root, "missing")+": open ") {
		t.Fatalf("missing directory: err = %v", err)
	}
}

// calculatorOnly is a builtin catalog of one tool, for packs that enable it.
type calculatorOnly struct{}

func (calculatorOnly) Lookup(name string) (task.ToolSchema, bool) {
	return task.ToolSchema{Name: name, Description: "evaluate"}, name == "calculator"
}
func (calculatorOnly) Names() []string { return []string{"calculator"} }

func TestLoadPack(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mini")
	write := func(name, content string) {
		t.Helper()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("task.yaml", "task_id: mini\nname: Mini\ncategory: test\ndescription: d\nmax_turns: 6\ninitial_user_message: hello\n"+
		"unknown_key: 1\ntools:\n  agent:\n    enabled: [calculator]\n")
	lt, diags, err := LoadPack(dir, pack.Options{Builtins: calculatorOnly{}})
	if err != nil {
		t.Fatal(err)
	}
	if lt.Task.TaskID != "mini" || lt.MaxTurns != 6 || lt.InitialUserMessage != "hello" || len(lt.Task.AgentTools) != 1 {
		t.Fatalf("loaded %+v, task %+v", lt, lt.Task)
	}
	var found bool
	for _, d := range diags {
		found = found || d.Path == "unknown_key"
	}
	if !found {
		t.Fatalf("diagnostics %v do not name unknown_key", diags)
	}

	write("task.yaml", "task_id: mini\nname: Mini\ncategory: test\n")
	if _, _, err := LoadPack(dir, pack.Options{Builtins: calculatorOnly{}}); err == nil ||
		err.Error() != "task pack "+dir+": mini/task.yaml: description: required" {
		t.Fatalf("err = %v", err)
	}
}
