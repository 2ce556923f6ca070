package task

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
)

// firstDiff names the first place two values differ for reflect.DeepEqual
// ("" when they are equal), so a failing round trip says where.
func firstDiff(a, b reflect.Value, path string) string {
	if a.IsValid() != b.IsValid() {
		return path + ": validity differs"
	}
	if !a.IsValid() {
		return ""
	}
	if a.Type() != b.Type() {
		return fmt.Sprintf("%s: type %s vs %s", path, a.Type(), b.Type())
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return fmt.Sprintf("%s: nil %v vs %v", path, a.IsNil(), b.IsNil())
			}
			return ""
		}
		return firstDiff(a.Elem(), b.Elem(), path)
	case reflect.Struct:
		for i := range a.NumField() {
			if d := firstDiff(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); d != "" {
				return d
			}
		}
		return ""
	case reflect.Slice:
		if a.IsNil() != b.IsNil() {
			return fmt.Sprintf("%s: nil slice %v vs %v", path, a.IsNil(), b.IsNil())
		}
		if a.Type().Elem().Kind() == reflect.Uint8 && !reflect.DeepEqual(a.Interface(), b.Interface()) {
			return fmt.Sprintf("%s: %q vs %q", path, a.Bytes(), b.Bytes())
		}
		fallthrough
	case reflect.Array:
		if a.Len() != b.Len() {
			return fmt.Sprintf("%s: len %d vs %d", path, a.Len(), b.Len())
		}
		for i := range a.Len() {
			if d := firstDiff(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
		return ""
	case reflect.Map:
		if a.IsNil() != b.IsNil() {
			return fmt.Sprintf("%s: nil map %v vs %v", path, a.IsNil(), b.IsNil())
		}
		if a.Len() != b.Len() {
			return fmt.Sprintf("%s: len %d vs %d", path, a.Len(), b.Len())
		}
		for _, k := range a.MapKeys() {
			if d := firstDiff(a.MapIndex(k), b.MapIndex(k), fmt.Sprintf("%s[%v]", path, k)); d != "" {
				return d
			}
		}
		return ""
	}
	if !reflect.DeepEqual(a.Interface(), b.Interface()) {
		return fmt.Sprintf("%s: %#v vs %#v", path, a.Interface(), b.Interface())
	}
	return ""
}

// roundTrip asserts decode -> encode -> decode yields an equal value and that a
// second encode is byte-identical to the first.
func roundTrip[T any](t *testing.T, first *T, decode func([]byte) (*T, error)) {
	t.Helper()
	enc, err := Encode(first)
	if err != nil {
		t.Fatal(err)
	}
	second, err := decode(enc)
	if err != nil {
		t.Fatalf("re-decoding our own encoding failed: %v\n%s", err, enc)
	}
	if d := firstDiff(reflect.ValueOf(first), reflect.ValueOf(second), "$"); d != "" {
		t.Fatalf("round trip changed the value: %s", d)
	}
	enc2, err := Encode(second)
	if err != nil {
		t.Fatal(err)
	}
	if string(enc) != string(enc2) {
		t.Fatalf("encoding is not stable\n%s\n%s", enc, enc2)
	}
}

func TestRoundTripTauExample(t *testing.T) {
	data := readTestdata(t, "tau_example.json")
	task, err := DecodeTaskDescription(data)
	if err != nil {
		t.Fatal(err)
	}
	// Spot-check what the example says and what defaults filled in.
	tool := task.AgentTools[0]
	if task.AdapterType != adapterTau || tool.Name != "book_reservation" || tool.Category != CategoryCompute ||
		tool.TimeoutS != 30 || tool.Source.InvocationStyle != InvocationTauSync || tool.Source.ClassName != "BookReservation" {
		t.Fatalf("decoded task = %+v", task)
	}
	if got := string(task.InitialState.Tables["users"]); got != `[{"user_id":"mia_li_3668","name":"Mia Li","membership":"gold","balance":1250.50}]` {
		t.Fatalf("users table not kept verbatim (compacted): %s", got)
	}
	if got := string(task.InitialState.Tables["reservations"]); got != `[]` {
		t.Fatalf("reservations = %s", got)
	}
	if got := task.InitialState.Schemas[2].PrimaryKey; got != "id" {
		t.Fatalf("default primary key = %q", got)
	}
	g := task.Grading
	if g.CombineMethod != CombineWeighted || !reflect.DeepEqual(g.Weights, map[string]float64{"state_checks": 1}) ||
		*g.PassThreshold != 1 || !g.StateChecks.HashEnabled ||
		string(g.StateChecks.GoldenActions[0].Arguments) != `{"user_id":"mia_li_3668","origin":"JFK","destination":"SEA"}` {
		t.Fatalf("grading = %+v", g)
	}
	roundTrip(t, task, DecodeTaskDescription)

	// The same task inside a TrialSpec, as RegisterTrial receives it.
	spec := map[string]any{
		"trial_id":             "airline_task_001:0",
		"run_id":               "run-2024-06-01",
		"attempt_id":           "att-7f3a",
		"task":                 json.RawMessage(data),
		"agent":                map[string]any{"provider": "openai", "model": "gpt-4o", "base_url": "http://127.0.0.1:8080/v1", "api_key_env": "AGENT_API_KEY", "temperature": 0.0, "seed": 7, "pricing": map[string]any{"input_usd_per_mtok": 2.5, "output_usd_per_mtok": 10}},
		"user_simulator_model": map[string]any{"provider": "openai", "model": "gpt-4o-mini", "max_tokens": 512},
		"judge":                nil,
		"env_endpoints":        map[string]any{"db_service_url": "http://127.0.0.1:8000"},
		"runtime_context":      map[string]any{"queue": "default", "budget": 1.5},
	}
	specJSON, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := DecodeTrialSpec(specJSON)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ts.Task, task) {
		t.Fatalf("task inside the spec decodes differently from the task alone")
	}
	if ts.Agent.Provider != ProviderOpenAI || *ts.Agent.Seed != 7 || ts.Agent.Pricing.OutputUSDPerMTok != 10 || ts.Judge != nil ||
		ts.EnvEndpoints.DBServiceURL != "http://127.0.0.1:8000" || string(ts.RuntimeContext["budget"]) != "1.5" {
		t.Fatalf("spec = %+v", ts)
	}
	roundTrip(t, ts, DecodeTrialSpec)
}

// TestRoundTripTBenchEchoHello decodes a TaskDescription dumped by the Python
// runner at an older schema. Where it differs from the current schema:
//
//   - grading.llm_judge, grading.state_checks, grading.transcript_rules: null.
//     Null means absent (Python's Optional), so the blocks decode to nil.
//   - grading has no grading_method, trace_checks, custom_checks or
//     test_execution: defaults apply (components; the rest absent). Its weights
//     {"custom_checks": 1.0} name a valid component, so they decode as sent,
//     with no share invented for anything else.
//   - grading.pass_threshold 0.5: kept (the current default 1.0 applies only
//     when absent).
//   - user_simulator.first_message and user_simulator.user_context: null. Both
//     left the schema in protocol v2; the decoder accepts them only as null
//     (see legacy.go) and drops them. scripted_flow: null decodes to absent.
//   - search: every optional field null (api_key included) decodes to nil; a
//     non-null api_key would be refused (a secret never travels in the spec).
//   - agent_tools[0].source.mcp_server_script: null -> nil; module_path "" is
//     kept (not required); extra is free-form and kept verbatim.
//   - agent_tools[0].source.invocation_style docker_compose_exec: accepted by
//     the decoder (it is in the closed set); the Go runner refuses it at
//     registration, which is not this package's decision.
//   - generated_at: null -> nil; source_files, tool_artifacts {} and
//     initialization_actions [] match the defaults.
//   - timeout_s 120.0 decodes to 120 and re-encodes as 120 (same number).
func TestRoundTripTBenchEchoHello(t *testing.T) {
	data := readTestdata(t, "tbench_echo_hello_task_description.json")
	task, err := DecodeTaskDescription(data)
	if err != nil {
		t.Fatal(err)
	}
	g := task.Grading
	switch {
	case task.AdapterType != adapterTerminalBench || task.TaskID != "echo-hello":
		t.Fatalf("task = %+v", task)
	case g.StateChecks != nil || g.TranscriptRules != nil || g.LLMJudge != nil || g.CustomChecks != nil:
		t.Fatalf("null grading blocks not absent: %+v", g)
	case !reflect.DeepEqual(g.Weights, map[string]float64{"custom_checks": 1}) || *g.PassThreshold != 0.5 || g.GradingMethod != gradingComponents:
		t.Fatalf("grading = %+v", g)
	case task.UserSimulator.Mode != UserSimScripted || task.UserSimulator.ScriptedFlow != nil:
		t.Fatalf("user_simulator = %+v", task.UserSimulator)
	case task.Search.Enabled || task.Search.APIKey != nil || task.Search.Port != nil:
		t.Fatalf("search = %+v", task.Search)
	case task.AgentTools[0].Source.InvocationStyle != invocationDockerComposeExec || task.AgentTools[0].TimeoutS != 120:
		t.Fatalf("tool = %+v", task.AgentTools[0])
	case task.GeneratedAt != nil || string(task.Metadata["verifier_timeout_sec"]) != "30.0":
		t.Fatalf("generated_at/metadata = %v %s", task.GeneratedAt, task.Metadata["verifier_timeout_sec"])
	}
	roundTrip(t, task, DecodeTaskDescription)
}

func TestDecodeNativeShopToolSchemas(t *testing.T) {
	var tools []ToolSchema
	if err := DecodeStrict(readTestdata(t, "native_shop_orders_02_tool_schemas.json"), &tools); err != nil {
		t.Fatal(err)
	}
	for i := range tools {
		tools[i].applyDefaults()
	}
	c := &checker{}
	validateTools(c, "tools", tools)
	if err := c.result(); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
		src := tool.Source
		if src == nil || src.InvocationStyle != InvocationMCPServer || src.MCPServerScript == nil || *src.MCPServerScript != "mcp_server.py" ||
			src.ModulePath != "mcp_server" || src.Toolset != "tool_use" || src.ClassName != tool.Name || tool.TimeoutS != 30 || tool.Category != CategoryCompute {
			t.Fatalf("tool %q = %+v / %+v", tool.Name, tool, src)
		}
	}
	if want := []string{"list_products", "get_customer", "place_order", "confirm_payment"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("names = %v, want %v", names, want)
	}
	// $defs and $ref stay in the free-form parameters.
	var params map[string]any
	if err := json.Unmarshal(tools[2].Parameters, &params); err != nil || params["$defs"] == nil {
		t.Fatalf("place_order parameters lost $defs: %s", tools[2].Parameters)
	}
}
