package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestImportCommand(t *testing.T) {
	var out, errb bytes.Buffer
	// A pack whose grading.yaml has a key the runner cannot grade: without
	// --allow-lossy nothing is written and the exit status says so.
	lossy := writePack(t, "lossy", map[string]string{"task.yaml": minimalTask + "grading: grading.yaml\n",
		"grading.yaml": "transcript_rules: {must_contain: [x], tool_expectations: {disallowed_tools: [bash]}}\n"})
	args := []string{"import", fixture("shop_orders_02"), "--namespace", "evals", "--label", "suite=shop", fixture("calc_basic"), lossy}
	err := runPack(context.Background(), args, &out, &errb, "")
	var ee *exitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 ||
		ee.Error() != "pack import: 1 grading key(s) would be dropped (listed above); nothing written; --allow-lossy imports without them" || out.Len() != 0 {
		t.Fatalf("lossy import without --allow-lossy: %v, %d bytes written", err, out.Len())
	}
	lossReport := errb.String()
	out.Reset()
	errb.Reset()
	if err := runPack(context.Background(), append(args, "--allow-lossy"), &out, &errb, ""); err != nil {
		t.Fatal(err)
	}
	if errb.String() != lossReport {
		t.Fatalf("the loss report differs with --allow-lossy:\n%s\nvs\n%s", errb.String(), lossReport)
	}
	tasks, cms := readStream(t, out.Bytes())
	if len(tasks) != 3 || len(cms) != 1 || tasks[0].Name != "shop-orders-02" || tasks[1].Name != "calc-basic" || tasks[1].Labels["suite"] != "shop" || cms[0].Namespace != "evals" {
		t.Fatalf("stream: %d tasks %d configmaps", len(tasks), len(cms))
	}
	wantErr := strings.Join([]string{
		"shop_orders_02/task.yaml: policies: kept as metadata.policies only: the runner does not show policies to the agent; put them in the system prompt to enforce them",
		"calc_basic/task.yaml: system_prompt: absent and no system_prompt.md: the description is used as the system prompt",
		`calc_basic/grading.yaml: transcript_rules.must_contain_phrases: graded as must_contain (Tolokaforge's TranscriptRulesConfig has no such key and ignores it)`,
		"lossy/task.yaml: system_prompt: absent and no system_prompt.md: the description is used as the system prompt",
		`lossy/grading.yaml: transcript_rules.tool_expectations.disallowed_tools: not mapped (disallowed tools have no transcript rule; express them as trace_checks (kind absent, match {tool: NAME}), which the import keeps): ["bash"]`,
	}, "\n") + "\n"
	if !strings.HasPrefix(errb.String(), wantErr) {
		t.Fatalf("stderr\n%s\nwant it to start with\n%s", errb.String(), wantErr)
	}

	// --mcp-command overrides the known server.
	out.Reset()
	errb.Reset()
	if err := runPack(context.Background(), []string{"import", "--mcp-command", "mcp_server.py=/opt/shop serve", fixture("shop_orders_02")}, &out, &errb, ""); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "- /opt/shop\n") || strings.Contains(out.String(), "- tolokaforge\n") {
		t.Fatalf("command not overridden:\n%s", out.String())
	}
}

// pack import PROJECT imports every task under the project, the project's
// own files reached from each task through ../..
func TestImportProject(t *testing.T) {
	var out, errb bytes.Buffer
	// Its dict tables, each record with its key in the synthetic column too, are
	// over the default inline limit (they would travel gzipped in a ConfigMap):
	// raised, the records stay readable in the Task.
	if err := runPack(context.Background(), []string{"import", "--inline-limit", "1048576", fixture("projects/food_delivery_2")}, &out, &errb, ""); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	tasks, cms := readStream(t, out.Bytes())
	if len(tasks) != 2 || tasks[0].Name != "order-modify-with-checks" || tasks[1].Name != "order-six-items-golden" || len(cms) != 2 ||
		strings.Count(out.String(), "- __tolokaforge_key__: order_53\n            order_id: order_53\n") != 2 || strings.Count(out.String(), "mcp_server_script: mcp_server.py") != 46 {
		t.Fatalf("stream: %d tasks, %d configmaps", len(tasks), len(cms))
	}
	// Each Task's Python files are a bundle in a ConfigMap it names by
	// digest, not inline.
	for i, tk := range tasks {
		if tk.Spec.Files == nil || cms[i].Name != tk.Spec.Files.ConfigMap ||
			int64(len(cms[i].BinaryData["files.tar"])) != tk.Spec.Files.Size ||
			strings.Contains(string(tk.Spec.Description.Raw), "tool_artifacts") {
			t.Fatalf("task %s: files %+v, configMap %s", tk.Name, tk.Spec.Files, cms[i].Name)
		}
	}
	// A folder of packs with one the runner cannot honour: nothing written,
	// the refusal named.
	out.Reset()
	errb.Reset()
	err := runPack(context.Background(), []string{"import", fixtures}, &out, &errb, "")
	if err == nil || !strings.Contains(err.Error(), `browser_basic/task.yaml: tools.agent.enabled[0]: tool "browser" cannot be honoured`) || out.Len() != 0 {
		t.Fatalf("error %v, %d bytes written", err, out.Len())
	}
}

func TestImportCommandErrors(t *testing.T) {
	dup := writePack(t, "copy", map[string]string{"task.yaml": strings.Replace(minimalTask, "task_id: mini", "task_id: shop_orders_02", 1)})
	cases := []struct {
		args []string
		want string
	}{
		{nil, "pack: a subcommand is required"},
		{[]string{"export"}, `pack: unknown subcommand "export"`},
		{[]string{"import"}, "pack import: name at least one task directory"},
		{[]string{"import", "--label", "nokey", fixture("calc_basic")}, `--label "nokey": want KEY=VALUE`},
		{[]string{"import", "--mcp-command", "x.py", fixture("calc_basic")}, `--mcp-command "x.py": want SCRIPT=ARGV`},
		{[]string{"import", "--label", "suite=a b", fixture("calc_basic")}, `--label "suite=a b": value: a valid label must be`},
		{[]string{"import", "--label", "-bad=x", fixture("calc_basic")}, `--label "-bad=x": key: name part must consist of`},
		{[]string{"import", "--bogus"}, "pack import: unknown flag: --bogus"},
		{[]string{"import", fixture("shop_orders_02"), dup}, `Task name "shop-orders-02" is also`},
		{[]string{"import", fixture("calc_basic"), filepath.Join(t.TempDir(), "missing")}, "missing: no such file or directory"},
		{[]string{"validate"}, "pack validate: name at least one task directory"},
	}
	for _, tc := range cases {
		var out, errb bytes.Buffer
		err := runPack(context.Background(), tc.args, &out, &errb, "")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
		if out.Len() != 0 {
			t.Errorf("%v: wrote to stdout on failure:\n%s", tc.args, out.String())
		}
	}
}

// packWithGrading copies shop_orders_02 into a directory named name with
// its grading.yaml edited.
func packWithGrading(t *testing.T, name string, edit func(string) string) string {
	t.Helper()
	src := fixture("shop_orders_02")
	files := map[string]string{}
	for _, f := range []string{"task.yaml", "grading.yaml", "initial_state.json", "system_prompt.md", "fixtures/tools.json"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		files[f] = string(b)
	}
	g := files["grading.yaml"]
	if files["grading.yaml"] = edit(g); files["grading.yaml"] == g {
		t.Fatal("the edit changed nothing: the fixture changed")
	}
	return writePack(t, name, files)
}

// brokenShop is shop_orders_02 with a golden path that buys the wrong
// quantity: the replay is consistent (the hash matches) but the JSONPath
// expectations of the end state fail.
func brokenShop(t *testing.T) string {
	t.Helper()
	return packWithGrading(t, "broken_shop", func(g string) string { return strings.Replace(g, "quantity: 1\n", "quantity: 2\n", 1) })
}

func TestValidateCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("runs trials")
	}
	ctx := context.Background()
	var out, errb bytes.Buffer
	shop, calc, broken := fixture("shop_orders_02"), fixture("calc_basic"), brokenShop(t)
	err := runPack(ctx, []string{"validate", shop, calc, broken, "--artifacts", t.TempDir()}, &out, &errb, os.Args[0])
	var ee *exitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || ee.Error() != "1 of 3 tasks failed validation" {
		t.Fatalf("error %v", err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("output:\n%s", out.String())
	}
	// The oracle's transcript score depends on what the oracle says besides
	// its golden calls, so only the state verdict is pinned here.
	want := []string{
		"PASS shop_orders_02 (" + shop + "): state checks 1, score ",
		"PASS calc_basic (" + calc + "): state checks 0, score ",
		"FAIL shop_orders_02 (" + broken + "): state checks ",
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d:\n%s\nwant prefix\n%s", i, lines[i], w)
		}
	}
	if !strings.Contains(lines[0], ", golden path verified") {
		t.Errorf("shop: %s", lines[0])
	}
	// calc_basic's state_checks.files are path_glob checks now: the oracle,
	// with no golden path, writes no result.txt, and a task without golden
	// actions passes once every component graded that run.
	if !strings.Contains(lines[1], "no golden path to verify (the task declares no golden_actions)") ||
		!strings.Contains(lines[1], "failed: result.txt exists (result.txt selected nothing, expected a file)") {
		t.Errorf("calc_basic: %s", lines[1])
	}
	if !strings.Contains(lines[2], "the golden path does not reach the expected state: State: hash match | JSONPath: ") {
		t.Errorf("broken pack's reason: %s", lines[2])
	}
}

// pack validate refuses, before any trial runs, the grading shapes that would register
// and fail grading only after the agent spent its budget, naming the key.
func TestValidateCommandRefusesUngradableShapes(t *testing.T) {
	noShare := packWithGrading(t, "no_share", func(g string) string {
		return strings.Replace(g, "    weight: 0.60   # 60 % strict hash, 40 % jsonpath partial credit\n", "", 1)
	})
	noSource := packWithGrading(t, "no_source", func(g string) string {
		return strings.Replace(g, "    golden_actions:\n", "    golden_actions_dropped:\n", 1)
	})
	var out, errb bytes.Buffer
	err := runPack(context.Background(), []string{"validate", noShare, noSource}, &out, &errb, os.Args[0])
	var ee *exitError
	if !errors.As(err, &ee) || ee.Error() != "2 of 2 tasks failed validation" {
		t.Fatalf("error %v\n%s", err, out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{
		"state_checks.hash_weight: required when hash_enabled is true and jsonpaths is not empty: the hash verdict and the JSONPath score " +
			"are both real and nothing says how to fold them, so every trial would fail grading after the agent's budget is spent; " +
			"declare state_checks.hash_weight in [0, 1] (the hash verdict's share)",
		"state_checks.hash_enabled: true, but neither golden_actions nor expected_hash is declared, so the hash has no source to compare " +
			"the trial's state against; declare golden_actions (the reference solution, replayed at grade time) or expected_hash " +
			"(the digest of the golden stable state), or set hash_enabled: false",
	}
	if len(lines) != len(want) {
		t.Fatalf("output:\n%s", out.String())
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], "FAIL ") || !strings.HasSuffix(lines[i], w) {
			t.Errorf("line %d:\n%s\nwant FAIL ... %s", i, lines[i], w)
		}
	}
}

// pack validate PROJECT validates every task under it.
func TestValidateProject(t *testing.T) {
	if testing.Short() {
		t.Skip("runs trials")
	}
	project := t.TempDir()
	copyPack(t, filepath.Join(project, "tasks", "a"), nil)
	var out, errb bytes.Buffer
	if err := runPack(context.Background(), []string{"validate", project}, &out, &errb, os.Args[0]); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	if !strings.HasPrefix(out.String(), "PASS shop_orders_02 ("+filepath.Join(project, "tasks", "a")+"): state checks 1") {
		t.Fatalf("output:\n%s", out.String())
	}
}
