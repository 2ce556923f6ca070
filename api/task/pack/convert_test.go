package pack

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"tolokaforge.io/operator/runner/tools/builtin"

	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/examples/shop"
)

// fixtures are upstream's packs, copied unchanged (testdata/tolokaforge/NOTICE.md).
const fixtures = "testdata/tolokaforge"

func fixture(name string) string { return filepath.Join(fixtures, name) }

func diagStrings(ds []Diagnostic) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.String()
	}
	return out
}

func compact(t *testing.T, raw []byte) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestConvertShopOrders02(t *testing.T) {
	c, err := Convert(fixture("shop_orders_02"), Options{Builtins: builtin.Catalog{}})
	if err != nil {
		t.Fatal(err)
	}
	d := c.Description
	if c.Name != "shop-orders-02" || d.TaskID != "shop_orders_02" || d.Category != "tool_use" || d.AdapterType != task.AdapterNative {
		t.Fatalf("header %q %q %q %q", c.Name, d.TaskID, d.Category, d.AdapterType)
	}
	if c.MaxTurns == nil || *c.MaxTurns != 14 || !strings.HasPrefix(c.InitialUserMessage, "Hi! I'm customer C-101 (Alex Torres).") {
		t.Fatalf("host fields %v %q", c.MaxTurns, c.InitialUserMessage)
	}
	if !strings.HasPrefix(d.SystemPrompt, "# Shop Orders Agent — System Guide") {
		t.Fatalf("system prompt %q", d.SystemPrompt[:40])
	}
	var names []string
	for _, tool := range d.AgentTools {
		names = append(names, tool.Name)
		s := tool.Source
		if s == nil || s.InvocationStyle != task.InvocationMCPServer || s.Toolset != "shop" || s.ClassName != tool.Name ||
			s.MCPServerScript != nil || string(s.Extra["command"]) != `["tolokaforge","mcp","shop"]` || tool.TimeoutS != 30 {
			t.Fatalf("tool %s source %+v timeout %v", tool.Name, s, tool.TimeoutS)
		}
	}
	if strings.Join(names, ",") != "list_products,get_customer,place_order,confirm_payment" || len(d.UserTools) != 0 {
		t.Fatalf("tools %v user %v", names, d.UserTools)
	}
	// Number literals as written: 300.00 stays a float for the hash.
	if got := string(c.Tables); !strings.Contains(got, `"balance":300.00`) || !strings.Contains(got, `"stock":42`) {
		t.Fatalf("tables %s", got)
	}
	if len(d.InitialState.Schemas) != 3 || d.InitialState.Schemas[0].PrimaryKey != "id" {
		t.Fatalf("schemas %+v", d.InitialState.Schemas)
	}
	g := d.Grading
	sc := g.StateChecks
	if !sc.HashEnabled || *sc.HashWeight != 0.6 || len(sc.GoldenActions) != 2 || len(sc.JSONPaths) != 7 {
		t.Fatalf("state checks %+v", sc)
	}
	if got := compact(t, sc.GoldenActions[0].Arguments); got != `{"customer_id":"C-101","items":[{"product_id":"P-001","quantity":1,"unit_price":89.99},{"product_id":"P-002","quantity":2,"unit_price":34.5}]}` {
		t.Fatalf("golden place_order %s", got)
	}
	if sc.GoldenActions[1].ToolName != "confirm_payment" || compact(t, sc.GoldenActions[1].Arguments) != `{"order_id":"O-001"}` {
		t.Fatalf("golden confirm_payment %+v", sc.GoldenActions[1])
	}
	if g.CombineMethod != task.CombineWeighted || g.Weights["state_checks"] != 0.7 || g.Weights["transcript_rules"] != 0.3 || *g.PassThreshold != 0.75 {
		t.Fatalf("combine %+v", g)
	}
	tr := g.TranscriptRules
	if *tr.MaxTurns != 14 || len(tr.RequiredActions) != 4 || tr.RequiredActions[0].ToolName != "list_products" ||
		tr.RequiredActions[0].CompareArgs == nil || len(*tr.RequiredActions[0].CompareArgs) != 0 || len(tr.CommunicateInfo) != 3 {
		t.Fatalf("transcript rules %+v", tr)
	}
	if d.UserSimulator.Mode != task.UserSimLLM || !strings.HasPrefix(d.UserSimulator.Backstory, "You are customer Alex Torres") {
		t.Fatalf("user simulator %+v", d.UserSimulator)
	}
	if got := compact(t, d.Metadata["policies"]); !strings.HasPrefix(got, `{"guidance":["Always call list_products`) {
		t.Fatalf("metadata.policies %s", got)
	}
	want := []string{"shop_orders_02/task.yaml: policies: kept as metadata.policies only: the runner does not show policies to the agent; put them in the system prompt to enforce them"}
	if got := diagStrings(c.Diagnostics); !reflect.DeepEqual(got, want) {
		t.Fatalf("diagnostics\n%q\nwant\n%q", got, want)
	}

	// The example's hand-built TaskDescription grades the same way.
	ex, err := task.DecodeTaskDescription(shop.TaskJSON())
	if err != nil {
		t.Fatal(err)
	}
	if a, b := semantic(t, ex.Grading), semantic(t, d.Grading); !reflect.DeepEqual(a, b) {
		t.Fatalf("grading differs from examples/shop's:\n%v\n%v", a, b)
	}
	if a, b := semantic(t, ex.InitialState.Tables), semantic(t, d.InitialState.Tables); !reflect.DeepEqual(a, b) {
		t.Fatalf("tables differ from examples/shop's")
	}
}

// semantic is v as generic JSON (numbers as float64) for comparisons that
// ignore literal spelling.
func semantic(t *testing.T, v any) any {
	t.Helper()
	b, err := task.Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestConvertCalcBasic(t *testing.T) {
	c, err := Convert(fixture("calc_basic"), Options{Builtins: builtin.Catalog{}})
	if err != nil {
		t.Fatal(err)
	}
	d := c.Description
	if len(d.AgentTools) != 1 || d.AgentTools[0].Name != "write_file" || d.AgentTools[0].Source != nil || d.AgentTools[0].Description == "" {
		t.Fatalf("agent tools %+v", d.AgentTools)
	}
	if d.SystemPrompt != d.Description || d.InitialState != nil || c.Tables != nil {
		t.Fatalf("system prompt / state: %q %+v", d.SystemPrompt, d.InitialState)
	}
	if u := d.UserSimulator; u.Mode != task.UserSimScripted || len(u.ScriptedFlow) != 1 ||
		u.ScriptedFlow[0].Message != "Please calculate 17 times 23 and save the answer to a file called result.txt." {
		t.Fatalf("user simulator %+v", u)
	}
	ra := d.Grading.TranscriptRules.RequiredActions
	if len(ra) != 1 || ra[0].ActionID != "required_tool_write_file" || ra[0].ToolName != "write_file" || len(*ra[0].CompareArgs) != 0 {
		t.Fatalf("required actions %+v", ra)
	}
	// state_checks.files become path_glob checks over the trial's files.
	sc := d.Grading.StateChecks
	if sc == nil || len(sc.JSONPaths) != 2 || sc.JSONPaths[0].PathGlob != "result.txt" || sc.JSONPaths[0].Exists == nil || !*sc.JSONPaths[0].Exists ||
		sc.JSONPaths[1].PathGlob != "result.txt" || string(sc.JSONPaths[1].Contains) != `"391"` || d.Grading.LLMJudge != nil {
		t.Fatalf("state checks %+v judge %+v", sc, d.Grading.LLMJudge)
	}
	if mc := d.Grading.TranscriptRules.MustContain; len(mc) != 1 || mc[0] != "391" {
		t.Fatalf("must_contain %q (must_contain_phrases)", mc)
	}
	if _, ok := d.Metadata["policies"]; ok {
		t.Fatal("empty policies were kept")
	}
	want := []string{
		"calc_basic/task.yaml: system_prompt: absent and no system_prompt.md: the description is used as the system prompt",
		`calc_basic/grading.yaml: transcript_rules.must_contain_phrases: graded as must_contain (Tolokaforge's TranscriptRulesConfig has no such key and ignores it)`,
	}
	if got := diagStrings(c.Diagnostics); !reflect.DeepEqual(got, want) {
		t.Fatalf("diagnostics\n%q\nwant\n%q", got, want)
	}
}

// writePack writes files into a fresh task directory named name.
func writePack(t testing.TB, name string, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	for f, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const minimalTask = `task_id: mini
name: Mini
category: test
description: d
tools:
  agent:
    enabled: [calculator]
`

// Every key that has no place is reported by path, none silently dropped.
func TestConvertReportsEveryUnmappedKey(t *testing.T) {
	dir := writePack(t, "odd", map[string]string{
		"task.yaml": minimalTask + `  user:
    enabled: []
    extra_user_key: 1
extra_top: {a: 1}
adapter_settings: {x: 1}
system_prompt: prompt.md
initial_state:
  json_db: db.json
  rag: null
  initialization_actions:
    - func_name: calculator
      arguments: {expression: "1+1"}
      note: why
user_simulator:
  mode: scripted
  first_message: hello
  scripted_flow:
    - role: user
      content: hi
      mood: happy
metadata: {tags: [a]}
grading: grading.yaml
`,
		"prompt.md": "You compute.",
		"checks.py": "from tolokaforge.core.grading.checks_interface import check\n",
		"db.json":   `{"users": {"u1": {"id": "u1", "n": 1.50}}, "logs": [{"at": 1}]}`,
		"grading.yaml": `combine: {method: all_pass, weights: {state_checks: 1, transcript_rules: 1, llm_judge: 1, custom_checks: 1}, pass_threshold: 1, style: strict}
state_checks:
  db_hash_check: true
  hash:
    enabled: true
    golden_actions: [{name: calculator, kwargs: {expression: "2*3"}, why: x}]
    weight: 0.5
    salt: 1
  jsonpaths:
    - {path: "$.db.users[0].n", equals: 1.50, op: eq}
transcript_rules:
  must_contain: ["6"]
  tool_expectations: {required_tools: [calculator], disallowed_tools: [bash]}
  required_actions: [{action_id: a, name: calculator, arguments: {}, foo: 1}]
llm_judge: {model_ref: judge, rubric: "Be right.", style: terse}
custom_checks: {enabled: true, file: checks.py, lang: py}
`,
	})
	c, err := Convert(dir, Options{Builtins: builtin.Catalog{}})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, d := range c.Diagnostics {
		paths = append(paths, d.File+" "+d.Path)
	}
	sort.Strings(paths)
	want := []string{
		"odd/grading.yaml combine.style",
		"odd/grading.yaml custom_checks.lang",
		"odd/grading.yaml llm_judge.rubric",
		"odd/grading.yaml llm_judge.style",
		"odd/grading.yaml state_checks.hash.golden_actions[0].why",
		"odd/grading.yaml state_checks.hash.salt",
		"odd/grading.yaml state_checks.jsonpaths[0].op",
		"odd/grading.yaml transcript_rules.required_actions[0].foo",
		"odd/grading.yaml transcript_rules.tool_expectations.disallowed_tools",
		"odd/task.yaml adapter_settings",
		"odd/task.yaml extra_top",
		"odd/task.yaml initial_state.initialization_actions[0].note",
		"odd/task.yaml tools.user.extra_user_key",
		"odd/task.yaml user_simulator.first_message",
		"odd/task.yaml user_simulator.scripted_flow[0].mood",
	}
	if !reflect.DeepEqual(paths, want) {
		t.Fatalf("diagnostic paths\n%s\nwant\n%s", strings.Join(paths, "\n"), strings.Join(want, "\n"))
	}
	d := c.Description
	if d.Grading.CombineMethod != task.CombineAll || d.Grading.LLMJudge.ModelRef != "judge" || d.Grading.LLMJudge.Rubric.Instructions != "Be right." {
		t.Fatalf("grading %+v", d.Grading)
	}
	if len(d.InitializationActions) != 1 || d.InitializationActions[0].ToolName != "calculator" || d.InitializationActions[0].EnvType != task.EnvAssistant {
		t.Fatalf("init actions %+v", d.InitializationActions)
	}
	if got := string(c.Tables); got != `{"users":[{"__tolokaforge_key__":"u1","id":"u1","n":1.50}],"logs":[{"at":1}]}` {
		t.Fatalf("tables %s", got)
	}
	if len(d.InitialState.Schemas) != 1 || d.InitialState.Schemas[0].TableName != "users" {
		t.Fatalf("schemas %+v (logs has no id)", d.InitialState.Schemas)
	}
	if got := compact(t, d.Grading.StateChecks.JSONPaths[0].Equals); got != "1.50" {
		t.Fatalf("equals literal %s", got)
	}
	ra := d.Grading.TranscriptRules.RequiredActions
	if len(ra) != 2 || ra[1].ActionID != "required_tool_calculator" {
		t.Fatalf("required actions %+v", ra)
	}
}

// trace_checks and CEL custom_checks survive the import, with the shares
// Tolokaforge grades a grading.yaml without combine with, and pass the pre-run
// checks (the TaskDescription decodes and validates).
func TestConvertKeepsTraceAndCELChecks(t *testing.T) {
	dir := writePack(t, "kept", map[string]string{
		"task.yaml": minimalTask + "grading: grading.yaml\n",
		"grading.yaml": `transcript_rules:
  tool_expectations: {disallowed_tools: [bash]}
trace_checks:
  constraints:
    - {id: no_bash, kind: absent, match: {tool: bash}}
    - {id: calc_then_answer, kind: precedes, severity: gate, first: {event: tool_call, tool: calculator}, then: {event: message, role: assistant}}
custom_checks:
  enabled: true
  fail_on_error: false
  checks:
    - {name: no_tables, expr: "size(db) == 0", weight: 2, description: "the task has no tables"}
`,
	})
	c, err := Convert(dir, Options{Builtins: builtin.Catalog{}})
	if err != nil {
		t.Fatal(err)
	}
	g := c.Description.Grading
	tc := g.TraceChecks
	if tc == nil || len(tc.Constraints) != 2 || tc.Constraints[0].ID != "no_bash" || tc.Constraints[0].Kind != task.TraceAbsent ||
		tc.Constraints[0].Match == nil || tc.Constraints[0].Match.Tool != "bash" || tc.Constraints[1].Severity != task.SeverityGate {
		t.Fatalf("trace_checks = %+v", tc)
	}
	cc := g.CustomChecks
	if cc == nil || !cc.Enabled || cc.FailOnError == nil || *cc.FailOnError || len(cc.Checks) != 1 ||
		cc.Checks[0].Name != "no_tables" || cc.Checks[0].Expr != "size(db) == 0" || *cc.Checks[0].Weight != 2 {
		t.Fatalf("custom_checks = %+v", cc)
	}
	want := map[string]float64{"state_checks": 1, "transcript_rules": 1, "trace_checks": 1, "custom_checks": 1}
	if !reflect.DeepEqual(g.Weights, want) {
		t.Fatalf("weights = %v, want %v", g.Weights, want)
	}
	// The wire the Task carries decodes to the same checks: nothing is lost on the way to the runner.
	back, err := task.DecodeTaskDescription(c.Wire)
	if err != nil || back.Grading.TraceChecks == nil || back.Grading.CustomChecks == nil {
		t.Fatalf("wire decodes to %+v, %v", back, err)
	}
	msgs := map[string]string{}
	for _, d := range c.Diagnostics {
		msgs[d.Path] = d.Msg
	}
	for _, k := range []string{"trace_checks", "custom_checks"} {
		if m, dropped := msgs[k]; dropped {
			t.Errorf("%s reported as not mapped: %s", k, m)
		}
	}
	// The disallowed-tools diagnostic may now send the author to trace_checks.
	if deny := msgs["transcript_rules.tool_expectations.disallowed_tools"]; !strings.Contains(deny, "express them as trace_checks") {
		t.Errorf("disallowed_tools diagnostic %q", deny)
	}
}

// Bad trace checks and CEL checks are refused at import, naming the file and key.
func TestConvertRefusesBadTraceAndCELChecks(t *testing.T) {
	for _, c := range []struct {
		name, grading, want string
	}{
		{"trace: unknown selector key", `trace_checks: {constraints: [{id: no_bash, kind: absent, select: {tool: bash}}]}`,
			"bad/grading.yaml: trace_checks.constraints[0].select: unknown key"},
		{"trace: unknown kind", `trace_checks: {constraints: [{id: x, kind: sometimes, match: {tool: bash}}]}`,
			`bad/grading.yaml: trace_checks.constraints[0].kind: "sometimes" is not one of`},
		{"trace: missing id", `trace_checks: {constraints: [{kind: absent, match: {tool: bash}}]}`,
			"bad/grading.yaml: trace_checks.constraints[0].id: required"},
		{"trace: not a mapping", `trace_checks: [1]`, "bad/grading.yaml: trace_checks: expected a mapping, got a list"},
		{"cel: does not compile", `custom_checks: {enabled: true, checks: [{name: broken, expr: "db.x =="}]}`,
			`bad/grading.yaml: custom_checks.checks[0].expr: check "broken": CEL expression "db.x ==" does not compile`},
		{"cel: undeclared variable", `custom_checks: {enabled: true, checks: [{name: st, expr: "state.size() == 1"}]}`,
			`bad/grading.yaml: custom_checks.checks[0].expr: check "st": CEL expression "state.size() == 1" does not compile: line 1, column 1: undeclared reference to 'state'`},
		{"cel: unknown check key", `custom_checks: {enabled: true, checks: [{name: c, expr: "true", python: x}]}`,
			"bad/grading.yaml: custom_checks.checks[0].python: unknown key"},
		{"combine without a share for trace_checks", "combine: {method: weighted, weights: {state_checks: 1}}\ntrace_checks: {constraints: [{id: a, kind: absent, match: {tool: bash}}]}",
			"weights: trace_checks is configured but weights declares no share for it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := writePack(t, "bad", map[string]string{"task.yaml": minimalTask + "grading: grading.yaml\n", "grading.yaml": c.grading + "\n"})
			_, err := Convert(dir, Options{Builtins: builtin.Catalog{}})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestConvertErrors(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"no task.yaml", map[string]string{"x": ""}, "task.yaml: no such file"},
		{"yaml syntax", map[string]string{"task.yaml": "task_id: [a"}, "bad/task.yaml: yaml:"},
		{"duplicate key", map[string]string{"task.yaml": "task_id: a\ntask_id: b\n"}, "bad/task.yaml: task_id: duplicate key"},
		{"task_id missing", map[string]string{"task.yaml": "name: n\n"}, "bad/task.yaml: task_id: required"},
		{"description missing", map[string]string{"task.yaml": "task_id: t\nname: n\ncategory: c\n"}, "bad/task.yaml: description: required"},
		{"task_id unusable", map[string]string{"task.yaml": "task_id: ___\nname: n\ncategory: c\ndescription: d\n"}, `bad/task.yaml: task_id: "___" has no letters or digits`},
		{"max_turns zero", map[string]string{"task.yaml": minimalTask + "max_turns: 0\n"}, "bad/task.yaml: max_turns: 0 is outside [1, 1000]"},
		{"max_turns text", map[string]string{"task.yaml": minimalTask + "max_turns: ten\n"}, `bad/task.yaml: max_turns: expected an integer, got "ten"`},
		{"unknown tool", map[string]string{"task.yaml": strings.Replace(minimalTask, "calculator", "teleport", 1)},
			`bad/task.yaml: tools.agent.enabled[0]: tool "teleport" has no implementation: the pack has no tool list (fixtures/tools.json), tools.agent.mcp_server is not set, and it is not a builtin`},
		{"schema without implementation", map[string]string{"task.yaml": strings.Replace(minimalTask, "calculator", "teleport", 1),
			"fixtures/tools.json": `[{"name": "teleport", "description": "x", "parameters": {}}]`},
			`bad/task.yaml: tools.agent.enabled[0]: tool "teleport" has a schema in fixtures/tools.json but no implementation`},
		{"json_db missing", map[string]string{"task.yaml": minimalTask + "initial_state: {json_db: nope.json}\n"}, "bad/task.yaml: initial_state.json_db: bad: stat nope.json: no such file or directory"},
		{"json_db escapes", map[string]string{"task.yaml": minimalTask + "initial_state: {json_db: ../../etc/passwd}\n"}, `leaves the task directory`},
		{"json_db not tables", map[string]string{"task.yaml": minimalTask + "initial_state: {json_db: db.json}\n", "db.json": `[1]`}, "bad/db.json: want a JSON object of tables"},
		{"record not object", map[string]string{"task.yaml": minimalTask + "initial_state: {json_db: db.json}\n", "db.json": `{"t": [1]}`}, "bad/db.json: t[0]: want a JSON object (a record)"},
		{"bad combine", map[string]string{"task.yaml": minimalTask + "grading: g.yaml\n", "g.yaml": "combine: {method: best}\n"},
			`bad/g.yaml: combine.method: "best" is not one of weighted, all, any, all_pass, any_pass`},
		{"golden action without name", map[string]string{"task.yaml": minimalTask + "grading: g.yaml\n", "g.yaml": "state_checks: {hash: {enabled: true, golden_actions: [{kwargs: {}}]}}\n"},
			"bad/g.yaml: state_checks.hash.golden_actions[0]: names no tool (name)"},
		{"assistant line in scripted flow", map[string]string{"task.yaml": minimalTask + "user_simulator: {mode: scripted, scripted_flow: [{role: assistant, content: x}]}\n"},
			`bad/task.yaml: user_simulator.scripted_flow[0].role: "assistant": a scripted flow holds the user's lines only`},
		{"weight not a number", map[string]string{"task.yaml": minimalTask + "grading: g.yaml\n", "g.yaml": "combine: {weights: {state_checks: high}}\n"},
			`bad/g.yaml: combine.weights.state_checks: expected a number, got "high"`},
		{"not a native task", map[string]string{"task.yaml": minimalTask + "adapter_type: tau\n"}, `bad/task.yaml: adapter_type: "tau": only native task directories are imported`},
		{"strict decoder refuses the result", map[string]string{"task.yaml": minimalTask + "grading: g.yaml\n", "g.yaml": "combine: {weights: {style_points: 1}}\n"},
			"the converted TaskDescription does not decode: grading.weights.style_points"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := writePack(t, "bad", tc.files)
			_, err := Convert(dir, Options{Builtins: builtin.Catalog{}})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestMCPMapping(t *testing.T) {
	shopTools := []string{"list_products", "place_order"}
	cases := []struct {
		name     string
		script   string
		enabled  []string
		commands map[string][]string
		command  string
		script2  string
		noted    bool
	}{
		{"known server", "mcp_server.py", shopTools, nil, `["tolokaforge","mcp","shop"]`, "", false},
		{"flag wins", "mcp_server.py", shopTools, map[string][]string{"mcp_server.py": {"my-shop", "--fast"}}, `["my-shop","--fast"]`, "", false},
		{"flag by path", "servers/s.py", []string{"x"}, map[string][]string{"servers/s.py": {"srv"}}, `["srv"]`, "", false},
		{"unknown tools stay a script", "mcp_server.py", []string{"list_products", "refund"}, nil, "", "mcp_server.py", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := resolveMCP(tc.script, tc.enabled, tc.commands)
			src := s.source("list_products")
			if got := string(src.Extra["command"]); got != tc.command {
				t.Fatalf("command %s, want %s", got, tc.command)
			}
			if (src.MCPServerScript != nil) != (tc.script2 != "") || src.MCPServerScript != nil && *src.MCPServerScript != tc.script2 {
				t.Fatalf("script %v", src.MCPServerScript)
			}
			if (s.note != "") != tc.noted {
				t.Fatalf("note %q", s.note)
			}
		})
	}
	for _, bad := range []string{"", "x", "=a", "x=", "x=  "} {
		if _, _, ok := ParseMCPCommand(bad); ok {
			t.Errorf("ParseMCPCommand(%q) accepted", bad)
		}
	}
	if s, argv, ok := ParseMCPCommand(`mcp_server.py=tolokaforge mcp shop`); !ok || s != "mcp_server.py" || strings.Join(argv, "|") != "tolokaforge|mcp|shop" {
		t.Fatalf("ParseMCPCommand: %q %q %v", s, argv, ok)
	}
}

// An unmapped script is shipped with the task when the pack holds it.
func TestUnknownScriptIsShipped(t *testing.T) {
	dir := writePack(t, "py", map[string]string{
		"task.yaml":           "task_id: py\nname: n\ncategory: c\ndescription: d\ntools:\n  agent:\n    mcp_server: srv.py\n    enabled: [refund]\n",
		"fixtures/tools.json": `[{"name": "refund", "description": "r", "parameters": {"type": "object"}, "category": "write", "timeout_s": 5}]`,
		"srv.py":              "print('hi')\n",
	})
	c, err := Convert(dir, Options{Builtins: builtin.Catalog{}})
	if err != nil {
		t.Fatal(err)
	}
	tool := c.Description.AgentTools[0]
	if *tool.Source.MCPServerScript != "srv.py" || tool.Category != task.CategoryWrite || tool.TimeoutS != 5 {
		t.Fatalf("tool %+v source %+v", tool, tool.Source)
	}
	if got := c.Description.ToolArtifacts["srv.py"]; got != "cHJpbnQoJ2hpJykK" {
		t.Fatalf("tool_artifacts %q", got)
	}
	if len(c.Diagnostics) != 3 || c.Diagnostics[1].Path != "tools.agent.mcp_server" || !strings.Contains(c.Diagnostics[1].Msg, "--mcp-command srv.py=ARGV") ||
		c.Diagnostics[2].String() != "py/task.yaml: grading: absent and no grading.yaml: the task is not graded" {
		t.Fatalf("diagnostics %v", diagStrings(c.Diagnostics))
	}
}

func TestObjectName(t *testing.T) {
	for in, want := range map[string]string{
		"shop_orders_02":        "shop-orders-02",
		"Calc.Basic v2":         "calc-basic-v2",
		"__x__":                 "x",
		strings.Repeat("a", 70): strings.Repeat("a", 63),
		"ÿ":                     "",
	} {
		if got := objectName(in); got != want {
			t.Errorf("ObjectName(%q) = %q, want %q", in, got, want)
		}
	}
}
