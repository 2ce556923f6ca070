package pack

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"tolokaforge.io/operator/runner/tools/builtin"

	"tolokaforge.io/operator/api/task"

	yaml "go.yaml.in/yaml/v3"
)

// FuzzNodeJSON: whatever YAML comes in, the converter either refuses it or
// writes valid JSON.
func FuzzNodeJSON(f *testing.F) {
	for _, s := range []string{
		"a: 300.00\nb: [1, 2.5, x]\n", "- {a: ~}\n", "a: &x 1\nb: *x\n", "? [a]\n: 1\n",
		"a: .inf\n", "a: 99999999999999999999\n", "x: &x [1, *x]\n", "a: 0x10\n", "'k': \"\\u2028\"\n", "a: 1_000.5\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := parseYAML(context.Background(), data)
		if err != nil || n == nil {
			return
		}
		out, err := nodeJSON(n)
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("invalid JSON %q from %q", out, data)
		}
		if _, err := jsonNode(out); err != nil {
			t.Fatalf("its own output does not render: %v", err)
		}
	})
}

// FuzzConvertTaskYAML: a task.yaml either fails with an error or converts
// into a description the strict decoder accepts.
func FuzzConvertTaskYAML(f *testing.F) {
	shop, err := os.ReadFile(filepath.Join(fixture("shop_orders_02"), "task.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(shop)
	f.Add([]byte(minimalTask))
	f.Add([]byte(minimalTask + "user_simulator: {mode: scripted, scripted_flow: [{content: hi}]}\n"))
	f.Add([]byte(minimalTask + "initial_state: {initialization_actions: [{tool_name: calculator}]}\n"))
	f.Add([]byte("task_id: 1\nname: 2\ncategory: 3\ndescription: 4\n"))
	// Upstream's shapes: an inline json_db of dict tables, {user: ...} lines
	// and a default, policies' prompt, a Terminal-Bench instruction.
	f.Add([]byte(minimalTask + "initial_state: {json_db: {o: {a: {id: a}}, c: {k: 1}, e: {}}}\n"))
	f.Add([]byte(minimalTask + "user_simulator: {mode: scripted, scripted_flow: [{user: hi}, {if_assistant_contains: x, user: y}, {default: z}]}\n"))
	f.Add([]byte(minimalTask + "policies: {agent_system_prompt: p}\ninitial_state: {workspace: {files: [{path: a.txt, content: x}]}}\n"))
	f.Add([]byte("instruction: do it\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		for _, name := range []string{"grading.yaml", "initial_state.json", "system_prompt.md"} {
			b, err := os.ReadFile(filepath.Join(fixture("shop_orders_02"), name))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "task.yaml"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := Convert(dir, Options{Builtins: builtin.Catalog{}})
		if err != nil {
			return
		}
		if _, err := task.DecodeTaskDescription(c.Wire); err != nil {
			t.Fatalf("converted output does not decode: %v", err)
		}
		if _, err := Build(c, Options{Builtins: builtin.Catalog{}}); err != nil {
			t.Fatalf("converted output does not render: %v", err)
		}
	})
}

// FuzzAliasBudget: whatever YAML comes in, parseYAML either refuses it or
// hands back a tree whose expansion stays within the budget (counted here
// by expanding it, up to a cap), so no later walk can blow up. Seeds: the
// bombs, cycles and shared anchors under testdata/fuzz/FuzzAliasBudget.
func FuzzAliasBudget(f *testing.F) {
	f.Add([]byte("a: &a [x, y]\nb: [*a, *a]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := parseYAML(context.Background(), data)
		if err != nil || n == nil {
			return
		}
		// The file's own nodes, then the nodes an expanding walk visits.
		own := map[*yaml.Node]bool{}
		var mark func(n *yaml.Node)
		mark = func(n *yaml.Node) {
			if n == nil || own[n] {
				return
			}
			own[n] = true
			if n.Kind != yaml.AliasNode {
				for _, c := range n.Content {
					mark(c)
				}
			}
		}
		mark(n)
		limit := len(own) + maxAliasNodes
		visited := 0
		var expand func(n *yaml.Node, depth int)
		expand = func(n *yaml.Node, depth int) {
			if n == nil {
				return
			}
			if depth > 20000 {
				t.Fatalf("accepted a document nesting past 20000 levels (a cycle?): %q", data)
			}
			if n.Kind == yaml.AliasNode {
				expand(n.Alias, depth+1)
				return
			}
			if visited++; visited > limit {
				t.Fatalf("accepted a document expanding past %d nodes (%d of its own + the budget): %q", limit, len(own), data)
			}
			for _, c := range n.Content {
				expand(c, depth+1)
			}
		}
		expand(n, 0)
	})
}

// FuzzConvertGradingYAML: a grading.yaml (trace_checks and CEL custom_checks
// included) either fails with an error or converts into a description the strict
// decoder accepts, so nothing the import keeps can fail later at RegisterTrial.
func FuzzConvertGradingYAML(f *testing.F) {
	f.Add([]byte("trace_checks: {constraints: [{id: a, kind: absent, match: {tool: bash}}]}\n"))
	f.Add([]byte("trace_checks: {constraints: [{id: a, kind: absent, select: {tool: bash}}]}\n"))
	f.Add([]byte("custom_checks: {enabled: true, checks: [{name: c, expr: 'size(db) == 0'}]}\n"))
	f.Add([]byte("custom_checks: {enabled: true, checks: [{name: c, expr: 'db.x =='}]}\n"))
	f.Add([]byte("custom_checks: {enabled: true, file: checks.py}\n"))
	f.Add([]byte("combine: {method: all, weights: {trace_checks: 1}}\ntrace_checks: {constraints: [{id: a, kind: occurs, match: {event: message}, min: 2}]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "task.yaml"), []byte(minimalTask+"grading: grading.yaml\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "grading.yaml"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := Convert(dir, Options{Builtins: builtin.Catalog{}})
		if err != nil {
			return
		}
		if _, err := task.DecodeTaskDescription(c.Wire); err != nil {
			t.Fatalf("converted output does not decode: %v", err)
		}
	})
}

// FuzzJSONDB: a json_db file either is refused or becomes tables of records,
// and every dict table's key field is carried by each of its records.
func FuzzJSONDB(f *testing.F) {
	for _, s := range []string{
		`{"orders": {"o1": {"order_id": "o1", "n": 1.50}}, "logs": [{"at": 1}]}`,
		`{"empty": {}, "single": {"mode": "x"}}`, `{"t": {"a": {"id": "b"}}}`, `{"t": 0}`, `[]`,
		`{"u": {"1": {"id": 1}}}`, `{"t": {"a": {"x": "a", "id": "a"}, "b": {"x": "b", "id": "c"}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c := &converter{ctx: context.Background(), name: "fz"}
		tables, schemas, err := c.tables("db.json", data)
		if err != nil {
			return
		}
		var byName map[string][]map[string]json.RawMessage
		if err := json.Unmarshal(tables, &byName); err != nil {
			t.Fatalf("tables %s are not tables of records: %v", tables, err)
		}
		for _, s := range schemas {
			for i, rec := range byName[s.TableName] {
				if _, ok := rec[s.PrimaryKey]; !ok {
					t.Fatalf("%s[%d] has no primary key %s", s.TableName, i, s.PrimaryKey)
				}
			}
		}
		for name, key := range c.dictTables {
			if _, ok := byName[name]; !ok {
				t.Fatalf("dict table %s is not a table", name)
			}
			if key == "" && len(byName[name]) > 0 {
				t.Fatalf("dict table %s has records but no key field", name)
			}
		}
	})
}
