package pack

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"tolokaforge.io/operator/runner/tools/builtin"

	"tolokaforge.io/operator/api/task"
)

// FuzzNodeJSON: whatever YAML comes in, the converter either refuses it or
// writes valid JSON.
func FuzzNodeJSON(f *testing.F) {
	for _, s := range []string{
		"a: 300.00\nb: [1, 2.5, x]\n", "- {a: ~}\n", "a: &x 1\nb: *x\n", "? [a]\n: 1\n",
		"a: .inf\n", "a: 99999999999999999999\n", "a: 0x10\n", "'k': \"\\u2028\"\n", "a: 1_000.5\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := parseYAML(data)
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
