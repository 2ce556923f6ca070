package pack

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"tolokaforge.io/operator/runner/tools/builtin"
)

// TestImportReadsSchemasFromTheTools: with no fixtures/tools.json, the tools of a
// registry script are described by the script's own classes (Options.Describe),
// asked once per script; the fallback schema is kept only for a tool that gives
// none, and the report names it. A Describer that fails is reported naming the
// script, not refused (the import may run where the pack's Python is not; the
// runner loads the tools again at registration); a stdio MCP script is asked
// tools/list.
func TestImportReadsSchemasFromTheTools(t *testing.T) {
	files := map[string]string{
		"tasks/t/task.yaml": "task_id: t\nname: T\ncategory: c\ndescription: d\ntools:\n  agent:\n    enabled: [get_user, silent]\n    mcp_server: ../../registry.py\n",
		"registry.py":       "from tools_pkg.x import A, B\nTOOLS = {'get_user': A, 'silent': B}\n",
		"tools_pkg/x.py":    "class A: pass\nclass B: pass\n",
	}
	var asked []DescribeRequest
	describe := func(_ context.Context, req DescribeRequest) (map[string]DescribedTool, error) {
		asked = append(asked, req)
		return map[string]DescribedTool{
			"get_user": {Description: "Get a user.", Parameters: json.RawMessage(`{"type": "object", "properties": {"user_id": {"type": "string"}}}`)},
			"silent":   {},
		}, nil
	}
	dir := writePack(t, "proj", files)
	conv, err := Convert(dir+"/tasks/t", Options{Builtins: builtin.Catalog{}, Describe: describe})
	if err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 || asked[0].Script != "registry.py" || !reflect.DeepEqual(asked[0].Tools, []string{"get_user", "silent"}) ||
		string(asked[0].Files["tools_pkg/x.py"]) != files["tools_pkg/x.py"] {
		t.Fatalf("asked %+v", asked)
	}
	tools := conv.Description.AgentTools
	if tools[0].Description != "Get a user." || string(tools[0].Parameters) != `{"type":"object","properties":{"user_id":{"type":"string"}}}` {
		t.Fatalf("get_user: %+v", tools[0])
	}
	if tools[1].Description != "Agent tool: silent" || string(tools[1].Parameters) != `{"type":"object","properties":{}}` {
		t.Fatalf("silent: %+v", tools[1])
	}
	want := `proj/tasks/t/task.yaml: tools.agent.enabled: 1 tool(s) have no schema in fixtures/tools.json and give none themselves (silent): offered with upstream's fallback schema`
	if got := strings.Join(diagStrings(conv.Diagnostics), "\n"); !strings.Contains(got, want) {
		t.Fatalf("diagnostics\n%s\nwant one starting %s", got, want)
	}

	// A failing Describer (the import may run where the pack's Python is not) is
	// reported naming the script and the error; the tools keep the fallback.
	failing := func(context.Context, DescribeRequest) (map[string]DescribedTool, error) {
		return nil, errors.New("load tool get_user with python3: ModuleNotFoundError: No module named 'x'")
	}
	conv, err = Convert(dir+"/tasks/t", Options{Builtins: builtin.Catalog{}, Describe: failing})
	if err != nil {
		t.Fatalf("a Describer's failure refused the import: %v", err)
	}
	want = "proj/tasks/t/task.yaml: tools.agent.mcp_server: reading the tools' schemas from registry.py at import failed: load tool get_user with python3: ModuleNotFoundError"
	if got := strings.Join(diagStrings(conv.Diagnostics), "\n"); !strings.Contains(got, want) || !strings.Contains(got, "give none themselves (get_user, silent)") {
		t.Fatalf("diagnostics\n%s", got)
	}

	// A stdio MCP server (no TOOLS registry) is asked tools/list (Stdio); one that
	// cannot answer at import leaves the fallback and is reported, not refused.
	files["registry.py"] = "import sys\nprint('serving')\n"
	asked = nil
	dir = writePack(t, "proj", files)
	if _, err := Convert(dir+"/tasks/t", Options{Builtins: builtin.Catalog{}, Describe: describe}); err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 || !asked[0].Stdio {
		t.Fatalf("a stdio MCP script: asked %+v", asked)
	}
	conv, err = Convert(dir+"/tasks/t", Options{Builtins: builtin.Catalog{}, Describe: failing})
	if err != nil {
		t.Fatalf("a stdio server that cannot answer refused the import: %v", err)
	}
	want = "proj/tasks/t/task.yaml: tools.agent.mcp_server: asking the MCP server for tools/list from registry.py at import failed: load tool get_user with python3: ModuleNotFoundError"
	if got := strings.Join(diagStrings(conv.Diagnostics), "\n"); !strings.Contains(got, want) || !strings.Contains(got, "give none themselves (get_user, silent)") {
		t.Fatalf("diagnostics\n%s", got)
	}
}
