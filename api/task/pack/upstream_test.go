package pack

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"tolokaforge.io/operator/runner/tools/builtin"

	"tolokaforge.io/operator/api/task"
)

// Every upstream pack shape in testdata/tolokaforge (copied unchanged from
// the public Tolokaforge repository) either imports, with what it must
// produce, or is refused by name for what the runner cannot honour.
func TestUpstreamPacks(t *testing.T) {
	fd := "projects/food_delivery_2/tasks/"
	for _, tc := range []struct {
		dir        string
		taskID     string
		refused    string // the refusal, when the pack cannot be honoured
		tools      []string
		toolSource string // invocation style of the first agent tool ("" builtin)
		script     string // its mcp_server_script
		tables     []string
		pkeys      map[string]string
		components []string // grading keys set
		artifacts  []string // a few tool_artifacts keys that must be shipped
		files      []string // InitialState.Filesystem keys
		check      func(t *testing.T, c *converted)
	}{
		{
			dir: fd + "order_modify_with_checks", taskID: "order_modify_with_checks",
			toolSource: "mcp_server", script: "mcp_server.py",
			tables:     []string{"cities", "menu_item_categories", "menu_items", "menu_items_per_cuisine", "money_back_requests", "orders", "restaurant_names_desc", "restaurant_rates", "restaurants", "users"},
			pkeys:      dictKeyed("cities", "menu_item_categories", "menu_items", "money_back_requests", "orders", "restaurant_rates", "restaurants", "users"),
			components: []string{"state_checks", "custom_checks"},
			artifacts:  []string{"mcp_server.py", "tau_tools/cancel_order.py", "tau_tools/data/schemas.py", "tools_helpers.py", "check_helpers.py", "tasks/order_modify_with_checks/checks.py"},
			check: func(t *testing.T, c *converted) {
				d := c.Description
				cc := d.Grading.CustomChecks
				if cc.File != "tasks/order_modify_with_checks/checks.py" || !reflect.DeepEqual(cc.RelativeImports, []string{"../.."}) ||
					cc.TimeoutSeconds != 30 || cc.InterfaceVersion != "1.0" || !cc.Enabled || len(cc.Checks) != 0 {
					t.Fatalf("custom checks %+v", cc)
				}
				wiki, _ := os.ReadFile(filepath.Join(fixtures, "projects/food_delivery_2/wiki.md"))
				if d.SystemPrompt != string(wiki) {
					t.Fatalf("system prompt is not ../../wiki.md: %.60q", d.SystemPrompt)
				}
				if len(d.AgentTools) != 23 {
					t.Fatalf("%d agent tools", len(d.AgentTools))
				}
				var dt map[string]string
				if err := json.Unmarshal(d.AgentTools[0].Source.Extra["dict_tables"], &dt); err != nil {
					t.Fatal(err)
				}
				// Every dict table, its records carrying their key (city_id) or not, is
				// keyed by the synthetic column; money_back_requests is an empty dict.
				want := dictKeyed("cities", "menu_item_categories", "menu_items", "money_back_requests", "orders", "restaurant_rates", "restaurants", "users")
				if !reflect.DeepEqual(dt, want) {
					t.Fatalf("dict_tables %v\nwant %v", dt, want)
				}
				// Only .py files travel, and no other task's files.
				for k := range d.ToolArtifacts {
					if !strings.HasSuffix(k, ".py") || strings.HasPrefix(k, "tasks/") && k != "tasks/order_modify_with_checks/checks.py" {
						t.Fatalf("shipped %s", k)
					}
				}
				if len(d.ToolArtifacts) != 33 {
					t.Fatalf("%d artifacts", len(d.ToolArtifacts))
				}
			},
		},
		{
			dir: fd + "order_six_items_golden", taskID: "order_six_items_golden",
			toolSource: "mcp_server", script: "mcp_server.py",
			components: []string{"state_checks"},
			artifacts:  []string{"mcp_server.py", "tau_tools/create_order.py"},
			check: func(t *testing.T, c *converted) {
				sc := c.Description.Grading.StateChecks
				if !sc.HashEnabled || len(sc.GoldenActions) != 4 || sc.GoldenActions[1].ToolName != "create_order" {
					t.Fatalf("state checks %+v", sc)
				}
				if _, ok := c.Description.ToolArtifacts["tasks/order_modify_with_checks/checks.py"]; ok {
					t.Fatal("another task's check file shipped")
				}
			},
		},
		{
			dir: "calc_basic", taskID: "calc_basic", tools: []string{"write_file"},
			components: []string{"state_checks", "transcript_rules"},
		},
		{
			dir:     "calc_custom_checks",
			refused: `calc_custom_checks/task.yaml: initial_state.json_db: counter: want a list of records or a dict of records, got 0: the DB service holds tables of records`,
		},
		{
			dir:     "browser_basic",
			refused: `browser_basic/task.yaml: tools.agent.enabled[0]: tool "browser" cannot be honoured: the runner has no browser; refused rather than offer the agent a tool that cannot run`,
		},
		{
			dir: "shop_orders_02", taskID: "shop_orders_02", toolSource: "mcp_server",
			tables: []string{"customers", "orders", "products"}, pkeys: map[string]string{"customers": "id", "orders": "id", "products": "id"},
			components: []string{"state_checks", "transcript_rules"},
		},
		{
			dir: "terminal_bench/echo-hello", taskID: "echo-hello", tools: task.EnvironmentToolNames,
			check: func(t *testing.T, c *converted) {
				g := c.Description.Grading
				if g.GradingMethod != task.GradingTestExecution || !reflect.DeepEqual(g.TestExecution.Command, []string{"bash", "/tests/run-tests.sh"}) ||
					g.TestExecution.RewardFile != "/logs/verifier/reward.txt" || g.TestExecution.TimeoutS != 30 {
					t.Fatalf("grading %+v %+v", g, g.TestExecution)
				}
				if !strings.Contains(c.InitialUserMessage, "/tmp/hello.txt") || c.Description.Description != c.InitialUserMessage {
					t.Fatalf("instruction %q", c.InitialUserMessage)
				}
				if got := artifactNames(c.Description); !reflect.DeepEqual(got, []string{"run-tests.sh", "tests/test_outputs.py"}) {
					t.Fatalf("artifacts %v", got)
				}
			},
		},
		{
			dir:    "examples/custom_grading/dataset/tasks/knowledge_reasoning/knowledge_public_example_02",
			taskID: "knowledge_public_example_02", tools: []string{"read_file", "write_file"},
			components: []string{"state_checks", "transcript_rules", "llm_judge"},
			files:      []string{"prompt.txt"},
			check: func(t *testing.T, c *converted) {
				d := c.Description
				u := d.UserSimulator.ScriptedFlow
				if len(u) != 2 || !strings.HasPrefix(u[0].Message, "Please tighten") || u[1].Message != "Looks good, finalize when ready. ###STOP###" {
					t.Fatalf("scripted flow %+v", u)
				}
				if g := d.Grading.StateChecks.JSONPaths[0].PathGlob; g != "submissions/*" {
					t.Fatalf("path_glob %q", g)
				}
				if d.Grading.LLMJudge.ModelRef != "openrouter/anthropic/claude-sonnet-4-6" || !strings.HasPrefix(d.Grading.LLMJudge.Rubric.Instructions, "Grade the final reasoning") {
					t.Fatalf("judge %+v", d.Grading.LLMJudge)
				}
				if c.MaxTurns == nil || *c.MaxTurns != 8 || !strings.HasPrefix(c.InitialUserMessage, "Read `prompt.txt`") {
					t.Fatalf("max turns %v, initial message %q", c.MaxTurns, c.InitialUserMessage)
				}
			},
		},
		{
			dir:    "examples/package_api/minimal_dataset/tasks/knowledge_reasoning/package_public_example_01",
			taskID: "package_public_example_01", tools: []string{"read_file", "write_file"},
			components: []string{"state_checks", "transcript_rules"},
			files:      []string{"problem.txt"},
			check: func(t *testing.T, c *converted) {
				u := c.Description.UserSimulator.ScriptedFlow
				// The default line is the runner's own filler, so nothing is lost.
				if len(u) != 1 || u[0].Message != "Thanks. ###STOP###" || u[0].IfAssistantContains != "analysis complete" {
					t.Fatalf("scripted flow %+v", u)
				}
			},
		},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			c, err := Convert(fixture(tc.dir), Options{Builtins: builtin.Catalog{}})
			if tc.refused != "" {
				if err == nil || err.Error() != tc.refused {
					t.Fatalf("error %v\nwant %s", err, tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			d := c.Description
			if d.TaskID != tc.taskID {
				t.Fatalf("task id %q", d.TaskID)
			}
			if tc.tools != nil {
				var names []string
				for _, s := range d.AgentTools {
					names = append(names, s.Name)
				}
				if !reflect.DeepEqual(names, tc.tools) {
					t.Fatalf("tools %v, want %v", names, tc.tools)
				}
			}
			if tc.toolSource != "" {
				s := d.AgentTools[0].Source
				if s == nil || string(s.InvocationStyle) != tc.toolSource {
					t.Fatalf("source %+v", s)
				}
				if tc.script != "" && (s.MCPServerScript == nil || *s.MCPServerScript != tc.script) {
					t.Fatalf("script %v", s.MCPServerScript)
				}
			}
			if tc.tables != nil {
				var names []string
				for n := range d.InitialState.Tables {
					names = append(names, n)
				}
				sort.Strings(names)
				if !reflect.DeepEqual(names, tc.tables) {
					t.Fatalf("tables %v", names)
				}
				pk := map[string]string{}
				for _, s := range d.InitialState.Schemas {
					pk[s.TableName] = s.PrimaryKey
				}
				if !reflect.DeepEqual(pk, tc.pkeys) {
					t.Fatalf("primary keys %v\nwant %v", pk, tc.pkeys)
				}
			}
			var comps []string
			g := d.Grading
			for name, set := range map[string]bool{"state_checks": g.StateChecks != nil, "transcript_rules": g.TranscriptRules != nil,
				"llm_judge": g.LLMJudge != nil, "custom_checks": g.CustomChecks != nil, "trace_checks": g.TraceChecks != nil} {
				if set {
					comps = append(comps, name)
				}
			}
			sort.Strings(comps)
			want := append([]string(nil), tc.components...)
			sort.Strings(want)
			if !reflect.DeepEqual(comps, want) {
				t.Fatalf("grading components %v, want %v", comps, want)
			}
			for _, a := range tc.artifacts {
				raw, ok := d.ToolArtifacts[a]
				if !ok {
					t.Fatalf("artifact %s not shipped (have %d)", a, len(d.ToolArtifacts))
				}
				data, err := base64.StdEncoding.DecodeString(raw)
				if err != nil {
					t.Fatal(err)
				}
				onDisk, err := os.ReadFile(filepath.Join(fixtures, "projects/food_delivery_2", a))
				if err != nil {
					t.Fatal(err)
				}
				if string(data) != string(onDisk) {
					t.Fatalf("artifact %s differs from the file", a)
				}
			}
			for _, f := range tc.files {
				if _, ok := d.InitialState.Filesystem[f]; !ok {
					t.Fatalf("initial file %s missing: %v", f, keys(d.InitialState.Filesystem))
				}
			}
			if tc.check != nil {
				tc.check(t, c)
			}
		})
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// A project imports as a whole: every task under it, converted or refused
// together.
func TestConvertProject(t *testing.T) {
	cs, err := ConvertProject(context.Background(), fixture("projects/food_delivery_2"), Options{Builtins: builtin.Catalog{}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range cs {
		ids = append(ids, c.Description.TaskID)
	}
	if !reflect.DeepEqual(ids, []string{"order_modify_with_checks", "order_six_items_golden"}) {
		t.Fatalf("tasks %v", ids)
	}
	_, err = ConvertProject(context.Background(), fixture("."), Options{Builtins: builtin.Catalog{}})
	if err == nil || !strings.Contains(err.Error(), "2 of 9 tasks not converted") || !strings.Contains(err.Error(), `tool "browser" cannot be honoured`) {
		t.Fatalf("error %v", err)
	}
}

// dictKeyed maps each table to task.DictKeyField, the key every dict table imports with.
func dictKeyed(tables ...string) map[string]string {
	out := make(map[string]string, len(tables))
	for _, t := range tables {
		out[t] = task.DictKeyField
	}
	return out
}
