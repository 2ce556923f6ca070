package shop

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math/big"
	"os"
	"strconv"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"tolokaforge.io/operator/api/canonical"
)

var update = flag.Bool("update", false, "rewrite task.json from the pack in shop_orders_02/")

const packDir = "shop_orders_02/"

// toolCategories follows the Type column of system_prompt.md's tool table.
var toolCategories = map[string]string{
	"list_products":   "read",
	"get_customer":    "read",
	"place_order":     "write",
	"confirm_payment": "write",
}

// TestTaskJSONIsBuiltFromThePack rebuilds the TaskDescription from task.yaml,
// grading.yaml, system_prompt.md, initial_state.json and fixtures/tools.json and
// requires task.json to be exactly that (run with -update after changing the pack).
func TestTaskJSONIsBuiltFromThePack(t *testing.T) {
	want := buildTaskJSON(t)
	if *update {
		if err := os.WriteFile("task.json", want, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Skip("task.json rewritten; rebuild to embed it")
	}
	if got := TaskJSON(); !bytes.Equal(got, want) {
		t.Fatalf("task.json is stale; run go test ./examples/shop -run TestTaskJSON -update\n got %s\nwant %s", got, want)
	}
}

// taskDescription mirrors the TaskDescription keys of runner-protocol.md and
// grading-config.md, decoded strictly, so a misspelt key in task.json fails here.
type taskDescription struct {
	TaskID        string       `json:"task_id"`
	Name          string       `json:"name"`
	Category      string       `json:"category"`
	Description   string       `json:"description"`
	AdapterType   string       `json:"adapter_type"`
	SchemaVersion string       `json:"schema_version"`
	SystemPrompt  string       `json:"system_prompt"`
	AgentTools    []toolSchema `json:"agent_tools"`
	UserTools     []toolSchema `json:"user_tools"`
	InitialState  struct {
		Tables  map[string][]map[string]any `json:"tables"`
		Schemas []struct {
			TableName  string         `json:"table_name"`
			Fields     map[string]any `json:"fields"`
			PrimaryKey string         `json:"primary_key"`
		} `json:"schemas"`
		UnstableFields []any `json:"unstable_fields"`
	} `json:"initial_state"`
	UserSimulator struct {
		Mode      string `json:"mode"`
		Persona   string `json:"persona"`
		Backstory string `json:"backstory"`
	} `json:"user_simulator"`
	Grading struct {
		CombineMethod string             `json:"combine_method"`
		Weights       map[string]float64 `json:"weights"`
		PassThreshold float64            `json:"pass_threshold"`
		StateChecks   struct {
			HashEnabled   bool    `json:"hash_enabled"`
			HashWeight    float64 `json:"hash_weight"`
			GoldenActions []struct {
				ToolName  string          `json:"tool_name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"golden_actions"`
			JSONPaths []struct {
				Path        string `json:"path"`
				Equals      any    `json:"equals"`
				Description string `json:"description"`
			} `json:"jsonpaths"`
		} `json:"state_checks"`
		TranscriptRules struct {
			MaxTurns        int      `json:"max_turns"`
			DisallowRegex   []string `json:"disallow_regex"`
			RequiredActions []struct {
				ActionID    string         `json:"action_id"`
				Requestor   string         `json:"requestor"`
				ToolName    string         `json:"tool_name"`
				Arguments   map[string]any `json:"arguments"`
				CompareArgs []string       `json:"compare_args"`
			} `json:"required_actions"`
			CommunicateInfo []struct {
				Info     string `json:"info"`
				Required bool   `json:"required"`
			} `json:"communicate_info"`
		} `json:"transcript_rules"`
	} `json:"grading"`
	Metadata map[string]any `json:"metadata"`
}

type toolSchema struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Category    string          `json:"category"`
	TimeoutS    float64         `json:"timeout_s"`
	Source      struct {
		Toolset         string  `json:"toolset"`
		ModulePath      string  `json:"module_path"`
		ClassName       string  `json:"class_name"`
		InvocationStyle string  `json:"invocation_style"`
		MCPServerScript *string `json:"mcp_server_script"`
		Extra           struct {
			Command []string `json:"command"`
		} `json:"extra"`
	} `json:"source"`
}

func TestTaskJSONDecodesStrictly(t *testing.T) {
	dec := json.NewDecoder(bytes.NewReader(TaskJSON()))
	dec.DisallowUnknownFields()
	var td taskDescription
	if err := dec.Decode(&td); err != nil {
		t.Fatalf("strict decode of task.json: %v", err)
	}
	if td.TaskID != "shop_orders_02" || td.AdapterType != "native" || td.Category != "tool_use" || td.SchemaVersion != "1.0.0" {
		t.Errorf("header = %q %q %q %q", td.TaskID, td.AdapterType, td.Category, td.SchemaVersion)
	}
	var names []string
	for _, tool := range td.AgentTools {
		names = append(names, tool.Name)
		s := tool.Source
		if s.Toolset != "shop" || s.ModulePath != "" || s.ClassName != tool.Name || s.InvocationStyle != "mcp_server" ||
			s.MCPServerScript != nil || fmt.Sprint(s.Extra.Command) != "[tolokaforge mcp shop]" || tool.TimeoutS != 30 {
			t.Errorf("tool %s: source/timeout = %+v %v", tool.Name, s, tool.TimeoutS)
		}
		if tool.Category != toolCategories[tool.Name] {
			t.Errorf("tool %s: category %q", tool.Name, tool.Category)
		}
	}
	if fmt.Sprint(names) != "[list_products get_customer place_order confirm_payment]" {
		t.Errorf("agent tools = %v", names)
	}
	if len(td.UserTools) != 0 || len(td.InitialState.UnstableFields) != 0 || len(td.Metadata) != 0 {
		t.Errorf("user_tools/unstable_fields/metadata not empty")
	}
	if len(td.InitialState.Schemas) != 3 || td.InitialState.Schemas[2].TableName != "orders" || td.InitialState.Schemas[2].PrimaryKey != "id" {
		t.Errorf("schemas = %+v", td.InitialState.Schemas)
	}
	g := td.Grading
	if g.CombineMethod != "weighted" || g.Weights["state_checks"] != 0.7 || g.Weights["transcript_rules"] != 0.3 || g.PassThreshold != 0.75 {
		t.Errorf("grading header = %+v", g)
	}
	sc := g.StateChecks
	if !sc.HashEnabled || sc.HashWeight != 0.6 || len(sc.GoldenActions) != 2 || len(sc.JSONPaths) != 7 {
		t.Errorf("state_checks = %+v", sc)
	}
	if got := compactJSON(t, sc.GoldenActions[0].Arguments); got != `{"customer_id":"C-101","items":[{"product_id":"P-001","quantity":1,"unit_price":89.99},{"product_id":"P-002","quantity":2,"unit_price":34.5}]}` {
		t.Errorf("golden place_order arguments = %s", got)
	}
	if sc.GoldenActions[1].ToolName != "confirm_payment" || compactJSON(t, sc.GoldenActions[1].Arguments) != `{"order_id":"O-001"}` {
		t.Errorf("golden confirm_payment = %+v", sc.GoldenActions[1])
	}
	tr := g.TranscriptRules
	if tr.MaxTurns != 14 || len(tr.DisallowRegex) != 1 || len(tr.RequiredActions) != 4 || tr.RequiredActions[3].ToolName != "confirm_payment" ||
		tr.RequiredActions[3].CompareArgs == nil || len(tr.CommunicateInfo) != 3 || tr.CommunicateInfo[2].Info != "141.01" {
		t.Errorf("transcript_rules = %+v", tr)
	}
	if td.UserSimulator.Mode != "llm" || td.UserSimulator.Persona != "cooperative" || td.UserSimulator.Backstory == "" {
		t.Errorf("user_simulator = %+v", td.UserSimulator)
	}
}

// TestTaskJSONKeepsFloatLiterals checks the int/float kind survives in the file
// itself (encoding/json would have written 300 for 300.00).
func TestTaskJSONKeepsFloatLiterals(t *testing.T) {
	v, err := parseOrdered(TaskJSON())
	if err != nil {
		t.Fatal(err)
	}
	is := get(t, v, "initial_state", "tables")
	got := canonical.Dump(is, canonical.DumpOptions{Compact: true})
	want := `{"products":[{"id":"P-001","name":"Wireless Headphones","price":89.99,"stock":42,"category":"audio"},` +
		`{"id":"P-002","name":"USB-C Hub 7-Port","price":34.5,"stock":15,"category":"accessories"},` +
		`{"id":"P-003","name":"Ergonomic Laptop Stand","price":27.0,"stock":8,"category":"accessories"},` +
		`{"id":"P-004","name":"Mechanical Keyboard","price":129.0,"stock":5,"category":"input"}],` +
		`"customers":[{"id":"C-101","name":"Alex Torres","email":"alex@example.com","balance":300.0}],"orders":[]}`
	if string(got) != want {
		t.Errorf("initial_state.tables =\n%s\nwant\n%s", got, want)
	}
	st, _ := InitialState().MarshalJSON()
	if string(st) != want {
		t.Errorf("InitialState() =\n%s\nwant\n%s", st, want)
	}
}

func compactJSON(t *testing.T, raw []byte) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func get(t *testing.T, v canonical.Value, path ...string) canonical.Value {
	t.Helper()
	for _, k := range path {
		o, ok := v.(canonical.Object)
		if !ok {
			t.Fatalf("%s: not an object", k)
		}
		if v, ok = o.Get(k); !ok {
			t.Fatalf("missing %s", k)
		}
	}
	return v
}

func buildTaskJSON(t *testing.T) []byte {
	t.Helper()
	read := func(name string) []byte {
		data, err := os.ReadFile(packDir + name)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	task := yamlValue(t, read("task.yaml"))
	grading := yamlValue(t, read("grading.yaml"))
	tools, err := parseOrdered(read("fixtures/tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	tables, err := parseOrdered(read("initial_state.json"))
	if err != nil {
		t.Fatal(err)
	}
	field := func(v canonical.Value, path ...string) canonical.Value { return get(t, v, path...) }
	// obj builds a dict in the order given; values are Go strings, nil, []any or Values.
	obj := func(kv ...any) canonical.Object {
		var ms []canonical.Member
		for i := 0; i < len(kv); i += 2 {
			v, err := canonical.FromAny(kv[i+1])
			if err != nil {
				t.Fatalf("%s: %v", kv[i], err)
			}
			ms = append(ms, canonical.Member{Key: kv[i].(string), Value: v})
		}
		return canonical.NewOrderedObject(ms...)
	}

	toolsByName := map[string]canonical.Object{}
	for _, tv := range tools.(canonical.Array) {
		name, _ := tv.(canonical.Object).Get("name")
		toolsByName[string(name.(canonical.String))] = tv.(canonical.Object)
	}
	agentTools := []any{}
	for _, n := range field(task, "tools", "agent", "enabled").(canonical.Array) {
		name := string(n.(canonical.String))
		spec, ok := toolsByName[name]
		if !ok {
			t.Fatalf("task.yaml enables %s, which tools.json lacks", name)
		}
		desc, _ := spec.Get("description")
		params, _ := spec.Get("parameters")
		agentTools = append(agentTools, obj(
			"name", name,
			"description", desc,
			"parameters", params,
			"category", toolCategories[name],
			"timeout_s", canonical.Float(30),
			"source", obj(
				"toolset", "shop",
				"module_path", "",
				"class_name", name,
				"invocation_style", "mcp_server",
				"mcp_server_script", nil,
				"extra", obj("command", []any{"tolokaforge", "mcp", "shop"}),
			),
		))
	}
	schemas := []any{}
	for name := range tables.(canonical.Object).InOrder() {
		schemas = append(schemas, obj("table_name", name, "fields", obj(), "primary_key", "id"))
	}

	golden := []any{}
	for _, a := range field(grading, "state_checks", "hash", "golden_actions").(canonical.Array) {
		golden = append(golden, obj("tool_name", field(a, "name"), "arguments", field(a, "kwargs")))
	}
	required := []any{}
	for _, a := range field(grading, "transcript_rules", "required_actions").(canonical.Array) {
		required = append(required, obj(
			"action_id", field(a, "action_id"),
			"requestor", field(a, "requestor"),
			"tool_name", field(a, "name"),
			"arguments", field(a, "arguments"),
			"compare_args", field(a, "compare_args"),
		))
	}
	td := obj(
		"task_id", field(task, "task_id"),
		"name", field(task, "name"),
		"category", field(task, "category"),
		"description", field(task, "description"),
		"adapter_type", "native",
		"schema_version", "1.0.0",
		"system_prompt", string(read("system_prompt.md")),
		"agent_tools", agentTools,
		"user_tools", []any{},
		"initial_state", obj("tables", tables, "schemas", schemas, "unstable_fields", []any{}),
		"user_simulator", obj(
			"mode", field(task, "user_simulator", "mode"),
			"persona", field(task, "user_simulator", "persona"),
			"backstory", field(task, "user_simulator", "backstory"),
		),
		"grading", obj(
			"combine_method", field(grading, "combine", "method"),
			"weights", field(grading, "combine", "weights"),
			"pass_threshold", field(grading, "combine", "pass_threshold"),
			"state_checks", obj(
				"hash_enabled", field(grading, "state_checks", "hash", "enabled"),
				"hash_weight", field(grading, "state_checks", "hash", "weight"),
				"golden_actions", golden,
				"jsonpaths", field(grading, "state_checks", "jsonpaths"),
			),
			"transcript_rules", obj(
				"max_turns", field(grading, "transcript_rules", "max_turns"),
				"disallow_regex", field(grading, "transcript_rules", "disallow_regex"),
				"required_actions", required,
				"communicate_info", field(grading, "transcript_rules", "communicate_info"),
			),
		),
		"metadata", obj(),
	)
	compact := canonical.Dump(td, canonical.DumpOptions{Compact: true})
	var out bytes.Buffer
	if err := json.Indent(&out, compact, "", "  "); err != nil {
		t.Fatal(err)
	}
	out.WriteByte('\n')
	return out.Bytes()
}

// yamlValue converts YAML to canonical Values through the node tree, so 0.70 stays
// the float 0.7 and 14 the int 14 (a YAML-to-JSON round trip through interface{}
// would turn a float like 300.00 into the int 300).
func yamlValue(t *testing.T, data []byte) canonical.Value {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	v, err := nodeValue(&doc)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func nodeValue(n *yaml.Node) (canonical.Value, error) {
	switch n.Kind {
	case yaml.DocumentNode:
		return nodeValue(n.Content[0])
	case yaml.AliasNode:
		return nodeValue(n.Alias)
	case yaml.SequenceNode:
		arr := canonical.Array{}
		for _, c := range n.Content {
			v, err := nodeValue(c)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		return arr, nil
	case yaml.MappingNode:
		var ms []canonical.Member
		for i := 0; i+1 < len(n.Content); i += 2 {
			v, err := nodeValue(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			ms = append(ms, canonical.Member{Key: n.Content[i].Value, Value: v})
		}
		return canonical.NewOrderedObject(ms...), nil
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return canonical.String(n.Value), nil
		case "!!int":
			i, ok := new(big.Int).SetString(n.Value, 10)
			if !ok {
				return nil, fmt.Errorf("line %d: integer %q is not decimal", n.Line, n.Value)
			}
			return canonical.NewBigInt(i), nil
		case "!!float":
			f, err := strconv.ParseFloat(n.Value, 64)
			return canonical.Float(f), err
		case "!!bool":
			var b bool
			err := n.Decode(&b)
			return canonical.Bool(b), err
		case "!!null":
			return canonical.Null{}, nil
		}
	}
	return nil, fmt.Errorf("line %d: unsupported YAML node %v %s", n.Line, n.Kind, n.ShortTag())
}
