package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"tolokaforge.io/operator/results/local"
	"tolokaforge.io/operator/test/fakellm"
)

// upstreamPacks is the project's copy of the upstream Tolokaforge packs.
const upstreamPacks = "api/task/pack/testdata/tolokaforge"

// debianPython skips unless Debian's python3 with the packages upstream packs import
// is installed (make test installs it), and points the local stack at it.
func debianPython(t *testing.T) {
	t.Helper()
	if err := exec.Command("/usr/bin/python3", "-c", "import pydantic, email_validator, pytest").Run(); err != nil {
		t.Skipf("Debian's python3 with pydantic, email_validator and pytest is not installed (make python-deps): %v", err)
	}
	t.Setenv(local.PythonEnv, "/usr/bin/python3")
}

// Every upstream pack, unmodified, through `pack validate` with the oracle: each
// passes but the two that cannot be honoured, which are refused by name.
func TestValidateUpstreamPacks(t *testing.T) {
	if testing.Short() {
		t.Skip("runs trials")
	}
	debianPython(t)
	// The custom_grading example has a judge: a fake LLM answers its one criterion.
	const key = "sk-upstream-judge"
	f, err := fakellm.New(fakellm.Config{APIKey: key, Scripts: map[string][]fakellm.Reply{"judge": {
		{Content: `{"criteria": [{"id": "rubric", "met": true, "score": 1, "justification": "answered"}]}`}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	tmp := t.TempDir()
	if err := os.WriteFile(filepath.Join(tmp, "judge-key"), []byte(key), 0o400); err != nil {
		t.Fatal(err)
	}
	models := filepath.Join(tmp, "models.yaml")
	if err := os.WriteFile(models, []byte("judge: {provider: openai, model: judge, base_url: '"+f.URL()+"', api_key_env: judge-key}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		pack string
		// want are prefixes of the verdict lines, one per task, in order.
		want []string
		fail bool
	}{
		{"projects/food_delivery_2", []string{
			"PASS order_modify_with_checks (" + upstreamPacks + "/projects/food_delivery_2/tasks/order_modify_with_checks): state checks 1, score 1, golden path verified; every configured component graded: state_checks=1, custom_checks=1",
			"PASS order_six_items_golden (" + upstreamPacks + "/projects/food_delivery_2/tasks/order_six_items_golden): state checks 1, score 1, golden path verified; every configured component graded: state_checks=1",
		}, false},
		{"shop_orders_02", []string{"PASS shop_orders_02 (" + upstreamPacks + "/shop_orders_02): state checks 1, score 0.8333, golden path verified"}, false},
		{"calc_basic", []string{"PASS calc_basic (" + upstreamPacks + "/calc_basic): state checks 0, score 0.1333, no golden path to verify (the task declares no golden_actions): the oracle's run registered, ran and was graded by every configured component (state_checks=0, transcript_rules=0.3333)"}, false},
		{"examples/package_api/minimal_dataset", []string{"PASS package_public_example_01 ("}, false},
		{"examples/custom_grading/dataset", []string{"PASS knowledge_public_example_02 ("}, false},
		{"terminal_bench/echo-hello", []string{"SKIP echo-hello (" + upstreamPacks + "/terminal_bench/echo-hello): state checks n/a, score 0, not run here: task echo-hello runs in its own container (built from environment/Dockerfile), which this machine's local stack does not start, and its commands never run on this host: run it on a cluster: `tolokaforge pack build DIR"}, false},
		{"browser_basic", []string{"FAIL ? (" + upstreamPacks + "/browser_basic): state checks n/a, score 0, browser_basic/task.yaml: tools.agent.enabled[0]: tool \"browser\" cannot be honoured: the runner has no browser"}, true},
		{"calc_custom_checks", []string{"FAIL ? (" + upstreamPacks + "/calc_custom_checks): state checks n/a, score 0, calc_custom_checks/task.yaml: initial_state.json_db: counter: want a list of records or a dict of records, got 0"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.pack, func(t *testing.T) {
			var out, errb bytes.Buffer
			err := runPack(context.Background(), []string{"validate", upstreamPacks + "/" + tc.pack, "--model-config", models, "--secrets-dir", tmp}, &out, &errb, os.Args[0])
			var ee *exitError
			if tc.fail != errors.As(err, &ee) {
				t.Fatalf("err %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if len(lines) != len(tc.want) {
				t.Fatalf("%d verdict lines, want %d:\n%s", len(lines), len(tc.want), out.String())
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(lines[i], w) {
					t.Fatalf("line %d:\n%s\nwant prefix\n%s", i, lines[i], w)
				}
			}
		})
	}
}

// --python names the interpreter of a pack's Python tools: a missing one fails the
// pack's trial, naming it, instead of falling back to another Python.
func TestValidatePythonFlag(t *testing.T) {
	if testing.Short() {
		t.Skip("runs trials")
	}
	debianPython(t)
	var out, errb bytes.Buffer
	err := runPack(context.Background(), []string{"validate", upstreamPacks + "/projects/food_delivery_2/tasks/order_six_items_golden", "--python", "/nonexistent/python3"}, &out, &errb, os.Args[0])
	var ee *exitError
	if !errors.As(err, &ee) {
		t.Fatalf("err %v, want a failed validation\n%s", err, out.String())
	}
	if line := out.String(); !strings.HasPrefix(line, "FAIL order_six_items_golden (") || !strings.Contains(line, "/nonexistent/python3") {
		t.Fatalf("output:\n%s", line)
	}
}
