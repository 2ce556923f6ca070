package runner_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/runner"
	"tolokaforge.io/operator/runner/grading"
)

// debianPython is the interpreter every Python test uses: a fresh CI machine
// has only Debian's (make python-deps installs it with pydantic).
const debianPython = "/usr/bin/python3"

// foodDir is upstream's food_delivery_2 project, the one copy of the upstream
// packs the importer's tests hold (see its NOTICE).
var foodDir = filepath.Join("..", "api", "task", "pack", "testdata", "tolokaforge", "projects", "food_delivery_2")

func withPython() harnessOpt { return func(c *runner.Config) { c.Python = debianPython } }

func needPython(tb testing.TB) {
	tb.Helper()
	if _, err := os.Stat(debianPython); err != nil {
		tb.Fatalf("%s is required (make python-deps installs it): %v", debianPython, err)
	}
}

// foodArtifacts is every .py file of the project, as tool_artifacts.
func foodArtifacts(tb testing.TB) obj {
	tb.Helper()
	out := obj{}
	err := filepath.WalkDir(foodDir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".py") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(foodDir, path)
		out[filepath.ToSlash(rel)] = base64.StdEncoding.EncodeToString(b)
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// foodState is combined_initial_state.json as the DB service holds it (every
// table a list of records) and the dict-shaped tables with their key fields,
// as the importer writes them.
func foodState(tb testing.TB) (tables obj, dictTables map[string]string) {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join(foodDir, "data", "combined_initial_state.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var state map[string]json.RawMessage
	if err := json.Unmarshal(raw, &state); err != nil {
		tb.Fatal(err)
	}
	tables, dictTables = obj{}, map[string]string{}
	for name, v := range state {
		if bytes.HasPrefix(bytes.TrimSpace(v), []byte("[")) {
			var list []any
			if err := json.Unmarshal(v, &list); err != nil {
				tb.Fatal(err)
			}
			tables[name] = list
			continue
		}
		var m map[string]map[string]any
		if err := json.Unmarshal(v, &m); err != nil {
			tb.Fatal(err)
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		list := []any{}
		key := ""
		for _, k := range keys {
			rec := m[k]
			if key == "" {
				for f, fv := range rec {
					if s, ok := fv.(string); ok && s == k {
						key = f
					}
				}
			}
			list = append(list, rec)
		}
		tables[name] = list
		dictTables[name] = key
	}
	return tables, dictTables
}

var importLine = regexp.MustCompile(`(?m)^from (tau_tools\.\w+) import (\w+)`)
var registryLine = regexp.MustCompile(`(?m)^\s+"(\w+)": (\w+),`)

// foodTools declares the project's 23 tools: tau_sync classes, or (registry)
// mcp_server tools of its mcp_server.py.
func foodTools(tb testing.TB, registry bool, dictTables map[string]string) []any {
	tb.Helper()
	src, err := os.ReadFile(filepath.Join(foodDir, "mcp_server.py"))
	if err != nil {
		tb.Fatal(err)
	}
	module := map[string]string{}
	for _, m := range importLine.FindAllStringSubmatch(string(src), -1) {
		module[m[2]] = m[1]
	}
	var out []any
	for _, m := range registryLine.FindAllStringSubmatch(string(src), -1) {
		name, class := m[1], m[2]
		source := obj{"toolset": "food_delivery_2", "module_path": module[class], "class_name": class,
			"invocation_style": "tau_sync", "extra": obj{"dict_tables": dictTables}}
		if registry {
			source = obj{"toolset": "food_delivery_2", "module_path": "", "class_name": name,
				"invocation_style": "mcp_server", "mcp_server_script": "mcp_server.py", "extra": obj{"dict_tables": dictTables}}
		}
		out = append(out, obj{"name": name, "description": "", "source": source})
	}
	if len(out) != 23 {
		tb.Fatalf("found %d tools in mcp_server.py, want 23", len(out))
	}
	return out
}

func foodTask(tb testing.TB, registry bool) obj {
	tables, dt := foodState(tb)
	t := baseTask(foodTools(tb, registry, dt), nil, tables)
	t["tool_artifacts"] = foodArtifacts(tb)
	return t
}

// dbTable reads one table through GetState as records keyed by field.
func dbTable(tb testing.TB, h *harness, id, table, key string) map[string]map[string]any {
	tb.Helper()
	st := h.state(tb, id, true, table)
	if !st.GetSuccess() {
		tb.Fatalf("GetState: %s", st.GetError())
	}
	var data map[string][]map[string]any
	if err := json.Unmarshal([]byte(st.GetStateJson()), &data); err != nil {
		tb.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, r := range data[table] {
		out[fmt.Sprint(r[key])] = r
	}
	return out
}

func TestPythonToolsRunFoodDelivery(t *testing.T) {
	needPython(t)
	h := startRunner(t, nil, withPython())
	for _, registry := range []bool{false, true} {
		t.Run(fmt.Sprintf("registry=%v", registry), func(t *testing.T) {
			id := fmt.Sprintf("food-%v", registry)
			resp := h.mustRegister(t, id, foodTask(t, registry))
			if resp.GetNumAgentTools() != 23 {
				t.Fatalf("agent tools: %d", resp.GetNumAgentTools())
			}
			// A tool without declared parameters advertises its get_info() schema.
			var cancel *runnerpb.ToolSchema
			for _, s := range resp.GetToolSchemas() {
				if s.GetName() == "cancel_order" {
					cancel = s
				}
			}
			if cancel == nil || cancel.GetDescription() != "Cancel a pending food delivery order." || !strings.Contains(cancel.GetParametersJson(), `"required":["order_id","reason"]`) {
				t.Fatalf("cancel_order schema: %v", cancel)
			}

			v0 := dbTable(t, h, id, "orders", "order_id")["order_53"]
			out := h.mustExec(t, id, call{tool: "cancel_order", args: `{"order_id":"order_53","reason":"Delivery delay"}`, callID: "c1"})
			if !strings.Contains(out, `"status": "Cancelled"`) {
				t.Fatalf("output: %s", out)
			}
			got := dbTable(t, h, id, "orders", "order_id")["order_53"]
			if got["status"] != "Cancelled" || got["reason_for_cancellation"] != "Delivery delay" || got["user_id"] != v0["user_id"] {
				t.Fatalf("order_53 in the DB: %v", got)
			}

			// A tool that raises changes nothing, and says why.
			before := h.state(t, id, true).GetFullHash()
			r := h.exec(t, id, call{tool: "create_order", args: `{"user_id":"user_9515","restaurant_id":"restaurant_75303418","menu_items":[{"id":"restaurant_75303418_item_0"}],"delivery_address":{"city_id":"la310","address":"a","zip":"1"}}`, callID: "c2"})
			if r.GetStatus() != runnerpb.ExecutionStatus_EXECUTION_STATUS_ERROR || r.GetErrorMessage() != "KeyError: 'quantity'" {
				t.Fatalf("raising tool: %s %q", r.GetStatus(), r.GetErrorMessage())
			}
			if after := h.state(t, id, true).GetFullHash(); after != before || r.GetMetrics().GetStateMutations() != 0 {
				t.Fatalf("a raising tool changed the state (mutations %d)", r.GetMetrics().GetStateMutations())
			}

			// Reset brings the DB back; the host follows before its next call.
			rr, err := h.c.ResetTrial(ctxT(t), &runnerpb.ResetTrialRequest{TrialId: id})
			if err != nil || !rr.GetSuccess() {
				t.Fatalf("reset: %v %s", err, rr.GetError())
			}
			out = h.mustExec(t, id, call{tool: "get_order_details", args: `{"order_id":"order_53"}`, callID: "c3"})
			if strings.Contains(out, "Cancelled") {
				t.Fatalf("the host kept a pre-reset order: %s", out)
			}
			// A write into a table the project left empty (dict-shaped, key unknown).
			h.mustExec(t, id, call{tool: "create_money_back_request", args: `{"user_id":"user_5247","order_id":"order_53","reason":"Cold food"}`, callID: "c4"})
			mb := h.state(t, id, true, "money_back_requests").GetStateJson()
			if !strings.Contains(mb, `"order_id":"order_53"`) {
				t.Fatalf("money_back_requests: %s", mb)
			}
			if c := h.cleanup(t, id); !c.GetSuccess() {
				t.Fatal(c.GetError())
			}
		})
	}
}

func TestPythonToolSeesRestore(t *testing.T) {
	needPython(t)
	pg := &probeGrader{}
	h := startRunner(t, nil, withPython(), withGrader(pg))
	id := "food-restore"
	h.mustRegister(t, id, foodTask(t, false))
	pg.set(func(ctx context.Context, env grading.Env, _ grading.Request) (*runnerpb.Grade, error) {
		if _, err := env.DB().Snapshot(ctx, id, "before"); err != nil {
			return nil, err
		}
		if st, msg, err := env.Replay(ctx, "cancel_order", json.RawMessage(`{"order_id":"order_53","reason":"Delivery delay"}`)); err != nil || st != "success" {
			return nil, fmt.Errorf("replay: %v %s %s", err, st, msg)
		}
		if _, err := env.DB().Restore(ctx, id, "before"); err != nil {
			return nil, err
		}
		return &runnerpb.Grade{}, nil
	})
	if g, err := h.c.GradeTrial(ctxT(t), &runnerpb.GradeTrialRequest{TrialId: id}); err != nil || !g.GetSuccess() {
		t.Fatalf("grade: %v %s", err, g.GetError())
	}
	out := h.mustExec(t, id, call{tool: "get_order_details", args: `{"order_id":"order_53"}`, callID: "c1"})
	if strings.Contains(out, "Cancelled") {
		t.Fatalf("the host kept the replay's change after the restore: %s", out)
	}
}

func TestPythonToolRegistrationErrors(t *testing.T) {
	needPython(t)
	h := startRunner(t, nil, withPython())
	py := base64.StdEncoding.EncodeToString
	cases := []struct {
		name      string
		artifacts obj
		source    obj
		want      string
	}{
		{"missing import", obj{"tools/a.py": py([]byte("import no_such_dependency\nclass A:\n    @staticmethod\n    def invoke(data):\n        return 'x'\n"))},
			obj{"toolset": "t", "module_path": "tools.a", "class_name": "A", "invocation_style": "tau_sync"},
			`task.agent_tools[0] (a_tool): load the Python tool: module tools.a: ModuleNotFoundError: No module named 'no_such_dependency'`},
		{"missing module", obj{},
			obj{"toolset": "t", "module_path": "tools.nothing", "class_name": "A", "invocation_style": "tau_sync"},
			`task.agent_tools[0] (a_tool): load the Python tool: module tools.nothing: ModuleNotFoundError: No module named 'tools'`},
		{"no class", obj{"tools/a.py": py([]byte("X = 1\n"))},
			obj{"toolset": "t", "module_path": "tools.a", "class_name": "A", "invocation_style": "tau_sync"},
			`task.agent_tools[0] (a_tool): load the Python tool: module tools.a has no class 'A'`},
		{"no module_path", obj{},
			obj{"toolset": "t", "module_path": "", "class_name": "A", "invocation_style": "mcp_async"},
			`task.agent_tools[0] (a_tool): source: a mcp_async tool needs module_path and class_name`},
		{"bad dict_tables", obj{},
			obj{"toolset": "t", "module_path": "m", "class_name": "A", "invocation_style": "tau_sync", "extra": obj{"dict_tables": []any{"orders"}}},
			`task.agent_tools[0] (a_tool): source.extra.dict_tables: want an object of table name -> key field (strings), got ["orders"]`},
		{"registry without the tool", obj{"srv.py": py([]byte("TOOLS = {}\n"))},
			obj{"toolset": "t", "module_path": "", "class_name": "a_tool", "invocation_style": "mcp_server", "mcp_server_script": "srv.py"},
			`task.agent_tools[0] (a_tool): load the Python tool: script `},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := baseTask([]any{obj{"name": "a_tool", "description": "x", "source": tc.source}}, nil, obj{"orders": []any{}})
			doc["tool_artifacts"] = tc.artifacts
			resp := h.register(t, "bad", doc)
			if resp.GetSuccess() || !strings.HasPrefix(resp.GetError(), tc.want) {
				t.Fatalf("got success=%v\n error %q\n want prefix %q", resp.GetSuccess(), resp.GetError(), tc.want)
			}
			assertNothingLeft(t, h, "bad")
		})
	}
}

// goldenActions reads a food_delivery_2 task's golden path.
func goldenActions(tb testing.TB, taskName string) []map[string]any {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join(foodDir, "tasks", taskName, "grading.yaml"))
	if err != nil {
		tb.Fatal(err)
	}
	var g struct {
		StateChecks struct {
			Hash struct {
				GoldenActions []map[string]any `json:"golden_actions"`
			} `json:"hash"`
		} `json:"state_checks"`
	}
	if err := yaml.Unmarshal(raw, &g); err != nil {
		tb.Fatal(err)
	}
	if len(g.StateChecks.Hash.GoldenActions) == 0 {
		tb.Fatalf("%s: no golden actions", taskName)
	}
	return g.StateChecks.Hash.GoldenActions
}

// plainPython runs the actions by calling the project's classes directly on
// the same tables, as upstream's orchestrator does, and returns the end state.
const plainPython = `
import json, sys
sys.path.insert(0, sys.argv[1])
sys.stdout, out = sys.stderr, sys.stdout
import mcp_server
data = json.load(open(sys.argv[2]))
for a in json.load(open(sys.argv[3])):
    mcp_server.TOOLS[a["name"]].invoke(data, **a["kwargs"])
out.write(json.dumps(data))
`

// TestGoldenActionsEquivalence: the end state after a task's golden actions
// through the runner equals, record for record, the state food_delivery_2's
// own classes produce when called directly in plain Python.
func TestGoldenActionsEquivalence(t *testing.T) {
	needPython(t)
	h := startRunner(t, nil, withPython())
	_, dictTables := foodState(t)
	abs, err := filepath.Abs(foodDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, taskName := range []string{"order_six_items_golden", "order_modify_with_checks"} {
		t.Run(taskName, func(t *testing.T) {
			actions := goldenActions(t, taskName)
			id := "golden-" + taskName
			h.mustRegister(t, id, foodTask(t, false))
			for i, a := range actions {
				args, _ := json.Marshal(a["kwargs"])
				h.mustExec(t, id, call{tool: a["name"].(string), args: string(args), callID: fmt.Sprint("g", i)})
			}

			dir := t.TempDir()
			actionsFile := filepath.Join(dir, "actions.json")
			b, _ := json.Marshal(actions)
			if err := os.WriteFile(actionsFile, b, 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(debianPython, "-B", "-c", plainPython, abs, filepath.Join(abs, "data", "combined_initial_state.json"), actionsFile)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			outJSON, err := cmd.Output()
			if err != nil {
				t.Fatalf("plain Python: %v\n%s", err, stderr.String())
			}
			var want map[string]json.RawMessage
			if err := json.Unmarshal(outJSON, &want); err != nil {
				t.Fatal(err)
			}
			st := h.state(t, id, true)
			var got map[string][]json.RawMessage
			if err := json.Unmarshal([]byte(st.GetStateJson()), &got); err != nil {
				t.Fatal(err)
			}
			changed := 0
			for table, raw := range want {
				key, isDict := dictTables[table]
				var wantRecs map[string]any
				if isDict {
					if err := json.Unmarshal(raw, &wantRecs); err != nil {
						t.Fatal(err)
					}
				} else {
					var list []any
					if err := json.Unmarshal(raw, &list); err != nil {
						t.Fatal(err)
					}
					wantRecs = map[string]any{}
					for i, r := range list {
						wantRecs[fmt.Sprint(i)] = r
					}
				}
				gotRecs := map[string]any{}
				for i, r := range got[table] {
					var rec map[string]any
					if err := json.Unmarshal(r, &rec); err != nil {
						t.Fatal(err)
					}
					k := fmt.Sprint(i)
					if isDict && key != "" {
						k = fmt.Sprint(rec[key])
					}
					gotRecs[k] = rec
				}
				if len(gotRecs) != len(wantRecs) {
					t.Errorf("table %s: %d records through the runner, %d in plain Python", table, len(gotRecs), len(wantRecs))
				}
				for k, w := range wantRecs {
					wb, _ := json.Marshal(w)
					gb, _ := json.Marshal(gotRecs[k])
					if !bytes.Equal(wb, gb) {
						t.Errorf("table %s record %s:\n runner %s\n python %s", table, k, gb, wb)
					}
				}
				initial, _ := foodState(t)
				ib, _ := json.Marshal(initial[table])
				gl, _ := json.Marshal(got[table])
				if !bytes.Equal(ib, gl) {
					changed++
				}
			}
			if changed == 0 {
				t.Fatal("the golden actions changed no table: the comparison proves nothing")
			}
		})
	}
}

// A write from elsewhere (a builtin tool) reaches the host before its next call.
func TestPythonToolSeesBuiltinWrite(t *testing.T) {
	needPython(t)
	h := startRunner(t, nil, withPython())
	id := "food-builtin"
	doc := foodTask(t, false)
	doc["agent_tools"] = append(doc["agent_tools"].([]any), tool("db_update"))
	h.mustRegister(t, id, doc)
	h.mustExec(t, id, call{tool: "db_update", args: `{"table":"orders","filter":{"order_id":"order_53"},"set":{"status":"Delivered"}}`, callID: "c1"})
	out := h.mustExec(t, id, call{tool: "get_order_details", args: `{"order_id":"order_53"}`, callID: "c2"})
	if !strings.Contains(out, `"status": "Delivered"`) {
		t.Fatalf("the host did not see the builtin's write: %s", out)
	}
}

// A call that overruns its budget kills the host; the next call runs on a
// new host loaded from the DB, which holds nothing of the killed call.
func TestPythonToolTimeoutRebuildsHost(t *testing.T) {
	needPython(t)
	h := startRunner(t, nil, withPython())
	code := "import time\n" +
		"class Slow:\n    @staticmethod\n    def invoke(data, k):\n        data['kv'][k]['v'] = 'slow'\n        time.sleep(30)\n        return 'late'\n" +
		"class Get:\n    @staticmethod\n    def invoke(data, k):\n        return data['kv'][k]['v']\n"
	src := func(class string) obj {
		return obj{"toolset": "t", "module_path": "kv.tools", "class_name": class, "invocation_style": "tau_sync",
			"extra": obj{"dict_tables": obj{"kv": "k"}}}
	}
	doc := baseTask([]any{
		obj{"name": "slow", "description": "x", "source": src("Slow"), "parameters": obj{"type": "object"}},
		obj{"name": "get", "description": "x", "source": src("Get"), "parameters": obj{"type": "object"}},
	}, nil, obj{"kv": []any{obj{"k": "a", "v": "start"}}})
	doc["tool_artifacts"] = obj{"kv/tools.py": base64.StdEncoding.EncodeToString([]byte(code))}
	h.mustRegister(t, "slow", doc)
	r := h.exec(t, "slow", call{tool: "slow", args: `{"k":"a"}`, callID: "c1", timeout: 0.5})
	if r.GetStatus() != runnerpb.ExecutionStatus_EXECUTION_STATUS_TIMEOUT {
		t.Fatalf("slow: %s %q", r.GetStatus(), r.GetErrorMessage())
	}
	if out := h.mustExec(t, "slow", call{tool: "get", args: `{"k":"a"}`, callID: "c2"}); out != "start" {
		t.Fatalf("after the timeout the host holds %q, want the DB's %q", out, "start")
	}
}

// A .py mcp_server_script without a TOOLS registry is a stdio MCP server,
// started with Config.Python.
func TestPythonStdioServerUsesConfiguredInterpreter(t *testing.T) {
	h := startRunner(t, nil, func(c *runner.Config) { c.Python = "/nonexistent/python-for-test" })
	doc := baseTask([]any{obj{"name": "ping", "description": "x", "source": obj{"toolset": "t", "module_path": "", "class_name": "ping",
		"invocation_style": "mcp_server", "mcp_server_script": "srv.py"}}}, nil, nil)
	doc["tool_artifacts"] = obj{"srv.py": base64.StdEncoding.EncodeToString([]byte("import sys\nprint('not a registry')\n"))}
	resp := h.register(t, "stdio", doc)
	if resp.GetSuccess() || !strings.Contains(resp.GetError(), `"/nonexistent/python-for-test"`) {
		t.Fatalf("got success=%v error %q, want the configured interpreter named", resp.GetSuccess(), resp.GetError())
	}
}
