package pack

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"tolokaforge.io/operator/runner/tools/builtin"

	"tolokaforge.io/operator/api/task"
)

// writeProject writes files (paths relative to the project root) into a
// fresh project "proj" and returns the root.
func writeProject(t *testing.T, files map[string]string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "proj")
	for f, content := range files {
		p := filepath.Join(root, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// Each key that cannot be honoured is refused, naming its file and key path.
func TestConvertRefusesWhatCannotBeHonoured(t *testing.T) {
	g := func(body string) map[string]string {
		return map[string]string{"tasks/t/task.yaml": minimalTask + "grading: g.yaml\n", "tasks/t/g.yaml": body}
	}
	tk := func(extra string) map[string]string {
		return map[string]string{"tasks/t/task.yaml": minimalTask + extra}
	}
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"a file beyond the project root", tk("system_prompt: ../../../secret.md\n"),
			`t/task.yaml: system_prompt: t: "../../../secret.md" leaves the project root`},
		{"an absolute file", tk("system_prompt: /etc/passwd\n"),
			`t/task.yaml: system_prompt: t: "/etc/passwd" is an absolute path`},
		{"mock_web", tk("initial_state: {mock_web: {site: x}}\n"),
			`proj/tasks/t/task.yaml: initial_state.mock_web: cannot be honoured: the runner has no mock_web service`},
		{"rag", tk("initial_state: {rag: {corpus: x}}\n"),
			`proj/tasks/t/task.yaml: initial_state.rag: cannot be honoured`},
		{"a file copied outside the agent's files", map[string]string{"tasks/t/task.yaml": minimalTask + "initial_state: {filesystem: {copy: [{from: p.txt, to: /etc/p.txt}]}}\n", "tasks/t/p.txt": "x"},
			`proj/tasks/t/task.yaml: initial_state.filesystem.copy[0].to: "/etc/p.txt" is outside the agent's file system`},
		{"a keyless dict table's record carrying the synthetic key column", map[string]string{"tasks/t/task.yaml": minimalTask + "initial_state: {json_db: ../../db.json}\n", "db.json": `{"users": {"u1": {"name": "x", "__tolokaforge_key__": "u1"}}}`},
			`proj/db.json: users["u1"]: a record carries __tolokaforge_key__, the name of the synthetic key column the import keeps a dict table's keys in; rename that field`},
		{"a scalar table", tk("initial_state: {json_db: {counter: 0}}\n"),
			`initial_state.json_db: counter: want a list of records or a dict of records, got 0: the DB service holds tables of records`},
		{"env_assertions", g("state_checks: {env_assertions: [{env_type: assistant, func_name: f}]}\n"),
			`proj/tasks/t/g.yaml: state_checks.env_assertions: cannot be honoured: an env assertion calls a function of upstream's Python environment`},
		{"agentic judge", g("llm_judge: {model_ref: j, rubric: r, output_schema: {}, agentic: true}\n"),
			`proj/tasks/t/g.yaml: llm_judge.agentic: cannot be honoured: the runner's judge reads the transcript and calls no tools of its own`},
		{"judge tool packs", g("llm_judge: {model_ref: j, rubric: r, output_schema: {}, tool_packs: [grep]}\n"),
			`proj/tasks/t/g.yaml: llm_judge.tool_packs: cannot be honoured: the runner's judge has no tool packs (grep)`},
		{"relative import beyond the root", map[string]string{"tasks/t/task.yaml": minimalTask + "grading: g.yaml\n", "tasks/t/g.yaml": "custom_checks: {enabled: true, file: checks.py, relative_imports: ['../../..']}\n", "tasks/t/checks.py": ""},
			`proj/tasks/t/g.yaml: custom_checks.relative_imports[0]: "../../.." leaves the project root`},
		{"a Python suite that is not there", g("custom_checks: {enabled: true, file: nope.py}\n"),
			`proj/tasks/t/g.yaml: custom_checks.file: t: stat tasks/t/nope.py: no such file or directory`},
		{"a browser", map[string]string{"tasks/t/task.yaml": strings.Replace(minimalTask, "calculator", "browser", 1)},
			`proj/tasks/t/task.yaml: tools.agent.enabled[0]: tool "browser" cannot be honoured: the runner has no browser`},
		{"an unknown invocation style", map[string]string{"tasks/t/task.yaml": strings.Replace(minimalTask, "calculator", "x", 1),
			"tasks/t/fixtures/tools.json": `[{"name": "x", "description": "d", "source": {"module_path": "m", "class_name": "X", "invocation_style": "docker_compose_exec"}}]`},
			`fixtures/tools.json: [0].source.invocation_style: "docker_compose_exec" cannot be honoured: the runner runs tau_sync, mcp_async and mcp_server tools`},
		{"a tau_sync module not in the pack", map[string]string{"tasks/t/task.yaml": strings.Replace(minimalTask, "calculator", "x", 1),
			"tasks/t/fixtures/tools.json": `[{"name": "x", "description": "d", "source": {"module_path": "tools.x", "class_name": "X"}}]`},
			`[0].source.module_path: module tools.x: neither tools/x.py nor its package is in the pack`},
		{"two texts for one scripted line", tk("user_simulator: {mode: scripted, scripted_flow: [{user: a, content: b}]}\n"),
			`user_simulator.scripted_flow[0].user: a second text for one line`},
		{"a file check with nothing to check", g("state_checks: {files: [{path: a.txt}]}\n"),
			`proj/tasks/t/g.yaml: state_checks.files[0]: a file check needs must_exist or must_contain`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := writeProject(t, tc.files)
			_, err := Convert(filepath.Join(root, "tasks/t"), Options{Builtins: builtin.Catalog{}})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v\nwant it to contain %s", err, tc.want)
			}
		})
	}
}

// A link inside the project that points out of it is refused, as one out of
// a lone pack is.
func TestConvertRefusesLinksOutOfTheProject(t *testing.T) {
	root := writeProject(t, map[string]string{"tasks/t/task.yaml": minimalTask + "system_prompt: ../../wiki.md\n"})
	outside := filepath.Join(filepath.Dir(root), "secret.md")
	if err := os.WriteFile(outside, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "wiki.md")); err != nil {
		t.Fatal(err)
	}
	c, err := Convert(filepath.Join(root, "tasks/t"), Options{Builtins: builtin.Catalog{}})
	if err == nil || !strings.Contains(err.Error(), "wiki.md") {
		t.Fatalf("converted (%v), want the link refused", c)
	}
}

// The keys upstream writes in more than one shape import in each.
func TestConvertUpstreamShapes(t *testing.T) {
	root := writeProject(t, map[string]string{
		"tasks/t/task.yaml": `task_id: t
name: T
category: c
description: d
policies: {agent_system_prompt: "You are the agent."}
initial_state:
  json_db:
    orders: {"o1": {"order_id": "o1", "n": 1.50}, "o2": {"order_id": "o2", "n": 2}}
    config: {"mode": "strict", "level": 2}
    empty: {}
  workspace: {files: [{path: notes.md, content: "hi"}]}
  filesystem: {copy: [{from: ../../shared.txt, to: /env/fs/agent-visible/in/shared.txt}]}
tools:
  agent:
    enabled: [calculator]
user_simulator:
  mode: scripted
  scripted_flow:
    - user: "first"
    - {role: user, content: second}
    - {if_assistant_contains: done, user: bye}
    - default: "Go on."
grading: g.yaml
`,
		"tasks/t/g.yaml": `state_checks:
  files: [{path: /env/fs/agent-visible/out.txt, must_exist: false}]
custom_checks: {enabled: true, file: ../../checks/suite.py, relative_imports: [".."], timeout_seconds: 5, interface_version: "1.0", fail_on_error: false}
`,
		"shared.txt":          "shared",
		"checks/suite.py":     "",
		"helpers.py":          "",
		"deep/not_shipped.py": "",
	})
	c, err := Convert(filepath.Join(root, "tasks/t"), Options{Builtins: builtin.Catalog{}})
	if err != nil {
		t.Fatal(err)
	}
	d := c.Description
	if d.SystemPrompt != "You are the agent." {
		t.Fatalf("system prompt %q", d.SystemPrompt)
	}
	if got := string(c.Tables); got != `{"orders":[{"__tolokaforge_key__":"o1","order_id":"o1","n":1.50},{"__tolokaforge_key__":"o2","order_id":"o2","n":2}],"config":[{"mode":"strict","level":2}],"empty":[]}` {
		t.Fatalf("tables %s", got)
	}
	if !reflect.DeepEqual(d.InitialState.Schemas, []task.TableSchema{{TableName: "orders", PrimaryKey: task.DictKeyField}, {TableName: "empty", PrimaryKey: task.DictKeyField}}) {
		t.Fatalf("schemas %+v", d.InitialState.Schemas)
	}
	if !reflect.DeepEqual(d.InitialState.Filesystem, map[string]string{"notes.md": "hi", "in/shared.txt": "shared"}) {
		t.Fatalf("files %v", d.InitialState.Filesystem)
	}
	// The suite and its relative_imports folder's .py files (not recursive).
	if shipped, want := keys(d.ToolArtifacts), []string{"checks/suite.py", "helpers.py"}; !reflect.DeepEqual(shipped, want) {
		t.Fatalf("artifacts %v\nwant %v", shipped, want)
	}
	cc := d.Grading.CustomChecks
	if cc.File != "checks/suite.py" || !reflect.DeepEqual(cc.RelativeImports, []string{".."}) || cc.TimeoutSeconds != 5 ||
		cc.InterfaceVersion != "1.0" || !cc.Enabled || cc.FailOnError == nil || *cc.FailOnError {
		t.Fatalf("custom checks %+v", cc)
	}
	j := d.Grading.StateChecks.JSONPaths
	if len(j) != 1 || j[0].PathGlob != "out.txt" || j[0].Absent == nil || !*j[0].Absent {
		t.Fatalf("file checks %+v", j)
	}
	flow := d.UserSimulator.ScriptedFlow
	if len(flow) != 3 || flow[0].Message != "first" || flow[1].Message != "second" || flow[2].Message != "bye" || flow[2].IfAssistantContains != "done" {
		t.Fatalf("scripted flow %+v", flow)
	}
	var diags []string
	for _, x := range c.Diagnostics {
		diags = append(diags, x.String())
	}
	all := strings.Join(diags, "\n")
	for _, w := range []string{
		`proj/tasks/t/task.yaml: user_simulator.scripted_flow[3].default: the runner's scripted user says "Please continue." while a line waits for its if_assistant_contains, not "Go on."`,
		`initial_state.json_db: config: a single record (its values are not all records): the table holds it as its one record`,
	} {
		if !strings.Contains(all, w) {
			t.Fatalf("diagnostics\n%s\nwant one containing %s", all, w)
		}
	}
	for _, x := range c.Diagnostics {
		if x.DropsGrading() {
			t.Fatalf("a grading key dropped: %s", x)
		}
	}
	raw, err := json.Marshal(d)
	if err != nil || !strings.Contains(string(raw), `"relative_imports":[".."]`) {
		t.Fatalf("wire %s %v", raw, err)
	}
}

// A tool whose tools.json entry names its Python class keeps that source,
// learns the dict tables, and ships its module's package.
func TestConvertExplicitPythonSource(t *testing.T) {
	root := writeProject(t, map[string]string{
		"tasks/t/task.yaml": strings.Replace(minimalTask, "calculator", "cancel", 1) + "initial_state: {json_db: {orders: {o1: {order_id: o1}}}}\n",
		"tasks/t/fixtures/tools.json": `[{"name": "cancel", "description": "Cancel", "parameters": {"type": "object"},
  "source": {"toolset": "fd", "module_path": "tau_tools.cancel", "class_name": "Cancel", "invocation_style": "mcp_async"}}]`,
		"tau_tools/__init__.py":      "",
		"tau_tools/cancel.py":        "class Cancel: pass\n",
		"tau_tools/sub/x.py":         "",
		"tau_tools/data.json":        "{}",
		"tau_tools/__pycache__/c.py": "",
		"other.py":                   "",
	})
	c, err := Convert(filepath.Join(root, "tasks/t"), Options{Builtins: builtin.Catalog{}})
	if err != nil && strings.Contains(err.Error(), "loads a Python class, which this Go runner cannot run") {
		// task.CheckRunnable still refuses Python classes; the Python tool
		// host (issue 23's runtime part) lifts it.
		t.Skipf("refused by task.CheckRunnable until the Python tool host lands: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	d := c.Description
	s := d.AgentTools[0].Source
	if s == nil || s.InvocationStyle != "mcp_async" || s.ModulePath != "tau_tools.cancel" || s.ClassName != "Cancel" || s.Toolset != "fd" ||
		string(s.Extra["dict_tables"]) != `{"orders":"__tolokaforge_key__"}` {
		t.Fatalf("source %+v", s)
	}
	if shipped, want := keys(d.ToolArtifacts), []string{"tau_tools/__init__.py", "tau_tools/cancel.py", "tau_tools/sub/x.py"}; !reflect.DeepEqual(shipped, want) {
		t.Fatalf("artifacts %v\nwant %v", shipped, want)
	}
}

// db_hash_check compares the end state with the hash source the block
// names; with none, upstream scores it 1.0 and it grades nothing here.
func TestConvertDBHashCheck(t *testing.T) {
	for _, tc := range []struct {
		grading string
		hash    bool
		diag    string
	}{
		{"state_checks: {db_hash_check: true, hash: {expected_state_hash: 2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881}}\n", true, ""},
		{"state_checks: {db_hash_check: true, hash: {golden_actions: [{name: calculator, kwargs: {expression: '1'}}]}}\n", true, ""},
		{"state_checks: {db_hash_check: true, jsonpaths: [{path: '$.db.t[0].a', equals: 1}]}\n", false,
			"proj/tasks/t/g.yaml: state_checks.db_hash_check: nothing to compare the end state with (no hash.expected_state_hash or golden_actions): upstream scores it 1.0, so it grades nothing here either"},
	} {
		root := writeProject(t, map[string]string{"tasks/t/task.yaml": minimalTask + "grading: g.yaml\ninitial_state: {json_db: {t: [{a: 1}]}}\n", "tasks/t/g.yaml": tc.grading})
		c, err := Convert(filepath.Join(root, "tasks/t"), Options{Builtins: builtin.Catalog{}})
		if err != nil {
			t.Fatal(err)
		}
		if c.Description.Grading.StateChecks.HashEnabled != tc.hash {
			t.Fatalf("%s: hash_enabled %v", tc.grading, !tc.hash)
		}
		found := tc.diag == ""
		for _, d := range c.Diagnostics {
			found = found || d.String() == tc.diag
			if d.DropsGrading() {
				t.Fatalf("%s: drops %s", tc.grading, d)
			}
		}
		if !found {
			t.Fatalf("%s: diagnostics %v, want %s", tc.grading, c.Diagnostics, tc.diag)
		}
	}
}

// A server script outside the pack is refused unless --mcp-command maps it,
// and then nothing of it is read.
func TestConvertScriptOutsideThePack(t *testing.T) {
	dir := writePack(t, "p", map[string]string{"task.yaml": strings.Replace(minimalTask, "calculator", "ping", 1) + "    mcp_server: ../srv/server.py\n",
		"fixtures/tools.json": `[{"name": "ping", "description": "d"}]`})
	if _, err := Convert(dir, Options{Builtins: builtin.Catalog{}}); err == nil || !strings.Contains(err.Error(), `p/task.yaml: tools.agent.mcp_server: p: "../srv/server.py" leaves the task directory`) {
		t.Fatalf("error %v", err)
	}
	c, err := Convert(dir, Options{Builtins: builtin.Catalog{}, MCPCommands: map[string][]string{"server.py": {"/opt/srv"}}})
	if err != nil {
		t.Fatal(err)
	}
	if s := c.Description.AgentTools[0].Source; string(s.Extra["command"]) != `["/opt/srv"]` || len(c.Description.ToolArtifacts) != 0 {
		t.Fatalf("source %+v, artifacts %v", s, c.Description.ToolArtifacts)
	}
}
