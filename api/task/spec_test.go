package task

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestBaseSpecDecodes(t *testing.T) {
	if _, err := DecodeTrialSpec(specWith(t)); err != nil {
		t.Fatalf("baseSpec must be valid: %v", err)
	}
}

func TestDecodeTrialSpecUnknownKeys(t *testing.T) {
	tests := []struct {
		name string
		mut  mutation
		want string
	}{
		{"top level", set("tsak", 1), "tsak: unknown key"},
		{"task", set("task.task_idd", "x"), "task.task_idd: unknown key"},
		{"grading.state_checks", set("task.grading.state_checks.hsah_enabled", true), "task.grading.state_checks.hsah_enabled: unknown key"},
		{"agent_tools[i].source", set("task.agent_tools[1].source.invocation_stile", "tau_sync"), "task.agent_tools[1].source.invocation_stile: unknown key"},
		{"trace constraint inside alternatives", set("task.grading.trace_checks.alternatives", raw(`[{"id":"r1","constraints":[
			{"id":"c0","kind":"absent","match":{"tool":"refund"}},
			{"id":"c1","kind":"occurs","match":{"tool":"refund"},"mni":1}]}]`)),
			"task.grading.trace_checks.alternatives[0].constraints[1].mni: unknown key"},
		{"selector inside require inside alternatives", set("task.grading.trace_checks.alternatives", raw(`[{"id":"r1","constraints":[
			{"id":"c0","kind":"occurs","bind":{"var":"o","from":{"tool":"place_order"},"value":"result.id"},
			 "require":{"kind":"occurs","match":{"tool":"pay","argz":{"order_id":"${o}"}}}}]}]`)),
			"task.grading.trace_checks.alternatives[0].constraints[0].require.match.argz: unknown key"},
		{"model config", set("agent.api_key", "sk-x"), "agent.api_key: unknown key"},
		{"env_endpoints", set("env_endpoints", raw(`{"db_url":"x"}`)), "env_endpoints.db_url: unknown key"},
		{"initial_state", set("task.initial_state", raw(`{"tables":{},"tabels":{}}`)), "task.initial_state.tabels: unknown key"},
		{"llm_judge rubric criterion", set("task.grading.llm_judge", raw(`{"model_ref":"judge","rubric":{"criteria":[{"id":"a","description":"d","wieght":1}]}}`)),
			"task.grading.llm_judge.rubric.criteria[0].wieght: unknown key"},
		{"db probe expect", set("task.grading.state_checks.db_probes", raw(`[{"id":"p","query":"$.db.x","expect":{"cnt":1}}]`)),
			"task.grading.state_checks.db_probes[0].expect.cnt: unknown key"},
		{"older grading key jsonpath_checks", set("task.grading.state_checks.jsonpath_checks", raw(`[]`)),
			"task.grading.state_checks.jsonpath_checks: unknown key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeTrialSpec(specWith(t, tt.mut))
			wantErr(t, err, tt.want)
		})
	}
}

func TestDecodeTrialSpecClosedSets(t *testing.T) {
	trace := func(c string) mutation {
		return set("task.grading.trace_checks", raw(`{"constraints":[`+c+`]}`))
	}
	tests := []struct {
		name string
		muts []mutation
		want string
	}{
		{"adapter_type", []mutation{set("task.adapter_type", "mcp")},
			`task.adapter_type: "mcp" is not one of native, tau, tlk_mcp_core, terminal_bench`},
		{"tool category", []mutation{set("task.agent_tools[0].category", "readonly")},
			`task.agent_tools[0].category: "readonly" is not one of read, write, compute`},
		{"invocation_style", []mutation{set("task.agent_tools[1].source.invocation_style", "docker")},
			`task.agent_tools[1].source.invocation_style: "docker" is not one of tau_sync, mcp_async, mcp_server, docker_compose_exec`},
		{"unstable reason", []mutation{set("task.initial_state", raw(`{"tables":{},"unstable_fields":[{"table_name":"t","field_name":"f","reason":"uuid"}]}`))},
			`task.initial_state.unstable_fields[0].reason: "uuid" is not one of auto_id, timestamp, llm_generated, random`},
		{"env_type", []mutation{set("task.initialization_actions", raw(`[{"env_type":"agent","tool_name":"get"}]`))},
			`task.initialization_actions[0].env_type: "agent" is not one of assistant, user`},
		{"user simulator mode", []mutation{set("task.user_simulator.mode", "human")},
			`task.user_simulator.mode: "human" is not one of scripted, llm`},
		{"combine_method", []mutation{set("task.grading.combine_method", "all_pass")},
			`task.grading.combine_method: "all_pass" is not one of weighted, all, any`},
		{"combine_method explicit empty", []mutation{set("task.grading.combine_method", "")},
			`task.grading.combine_method: "" is not one of weighted, all, any`},
		{"grading_method", []mutation{set("task.grading.grading_method", "tests")},
			`task.grading.grading_method: "tests" is not one of components, test_execution`},
		{"weights key", []mutation{set("task.grading.weights", raw(`{"state_checks":0.5,"state_check":0.5}`))},
			`task.grading.weights.state_check: "state_check" is not one of state_checks, transcript_rules, trace_checks, llm_judge, custom_checks`},
		{"requestor", []mutation{set("task.grading.transcript_rules", raw(`{"required_actions":[{"action_id":"a","tool_name":"get","requestor":"agent"}]}`))},
			`task.grading.transcript_rules.required_actions[0].requestor: "agent" is not one of assistant, user`},
		{"trace kind", []mutation{trace(`{"id":"c","kind":"never","match":{}}`)},
			`task.grading.trace_checks.constraints[0].kind: "never" is not one of occurs, absent, precedes, responds, immediately_follows, order, first, last, between, unique`},
		{"severity", []mutation{trace(`{"id":"c","kind":"absent","match":{},"severity":"fatal"}`)},
			`task.grading.trace_checks.constraints[0].severity: "fatal" is not one of scored, gate`},
		{"on_unbound", []mutation{trace(`{"id":"c","kind":"absent","match":{},"on_unbound":"skip"}`)},
			`task.grading.trace_checks.constraints[0].on_unbound: "skip" is not one of fail, pass, undecided`},
		{"event kind", []mutation{trace(`{"id":"c","kind":"absent","match":{"event":"tool_result"}}`)},
			`task.grading.trace_checks.constraints[0].match.event: "tool_result" is not one of message, tool_call`},
		{"criterion kind", []mutation{set("task.grading.llm_judge", raw(`{"model_ref":"judge","rubric":{"criteria":[{"id":"a","description":"d","kind":"scale"}]}}`))},
			`task.grading.llm_judge.rubric.criteria[0].kind: "scale" is not one of binary, graded`},
		{"provider", []mutation{set("agent.provider", "anthropic")},
			`agent.provider: "anthropic" is not one of oracle, openai`},
		{"judge provider", []mutation{set("judge", raw(`{"provider":"azure"}`))},
			`judge.provider: "azure" is not one of oracle, openai`},
		{"selector role", []mutation{trace(`{"id":"c","kind":"absent","match":{"role":"system"}}`)},
			`task.grading.trace_checks.constraints[0].match.role: "system" is not one of user, assistant`},
		{"selector executor", []mutation{trace(`{"id":"c","kind":"absent","match":{"executor":"assistant"}}`)},
			`task.grading.trace_checks.constraints[0].match.executor: "assistant" is not one of agent, user`},
		{"selector status", []mutation{trace(`{"id":"c","kind":"absent","match":{"status":"ok"}}`)},
			`task.grading.trace_checks.constraints[0].match.status: "ok" is not one of success, error, timeout, tool_not_found, invalid_arguments`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeTrialSpec(specWith(t, tt.muts...))
			wantErr(t, err, tt.want)
		})
	}
}

func TestParseTerminationReason(t *testing.T) {
	for _, s := range []string{"", "agent_done", "user_stop", "stuck_detected", "timeout", "max_turns", "error", "rate_limit", "api_error", "trial_lost"} {
		got, err := ParseTerminationReason(s)
		if err != nil || string(got) != s {
			t.Fatalf("ParseTerminationReason(%q) = %q, %v", s, got, err)
		}
	}
	_, err := ParseTerminationReason("finished")
	wantErr(t, err, `termination_reason: "finished" is not one of agent_done, user_stop, stuck_detected, timeout, max_turns, error, rate_limit, api_error, trial_lost (or empty: none reported)`)
	// Case matters: the enum's spelling is the wire's.
	_, err = ParseTerminationReason("AGENT_DONE")
	if err == nil {
		t.Fatal("AGENT_DONE accepted")
	}
}

func TestDecodeTrialSpecValidation(t *testing.T) {
	tc := func(c string) mutation { return set("task.grading.trace_checks", raw(`{"constraints":[`+c+`]}`)) }
	sc := func(s string) mutation { return set("task.grading.state_checks", raw(s)) }
	tests := []struct {
		name string
		muts []mutation
		want string
	}{
		// required
		{"task missing", []mutation{del("task")}, "task: required"},
		{"task null", []mutation{set("task", nil)}, "task: required"},
		{"agent missing", []mutation{del("agent")}, "agent: required"},
		{"provider missing", []mutation{set("agent", raw(`{"model":"gpt"}`))}, "agent.provider: required"},
		{"task_id", []mutation{del("task.task_id")}, "task.task_id: required"},
		{"name empty", []mutation{set("task.name", "")}, "task.name: required"},
		{"category", []mutation{del("task.category")}, "task.category: required"},
		{"description", []mutation{del("task.description")}, "task.description: required"},
		{"adapter_type", []mutation{del("task.adapter_type")}, "task.adapter_type: required"},
		{"system_prompt", []mutation{set("task.system_prompt", nil)}, "task.system_prompt: required"},
		// tools
		{"tool name empty", []mutation{set("task.agent_tools[1].name", "")}, "task.agent_tools[1].name: required"},
		{"tool name duplicate", []mutation{set("task.agent_tools[1].name", "get")}, `task.agent_tools[1].name: duplicate tool name "get" (also at index 0)`},
		{"same name on both actors is fine, twice on one is not",
			[]mutation{set("task.user_tools", raw(`[{"name":"get","description":""},{"name":"get","description":""}]`))},
			`task.user_tools[1].name: duplicate tool name "get" (also at index 0)`},
		{"parameters not an object", []mutation{set("task.agent_tools[0].parameters", raw(`[]`))}, "task.agent_tools[0].parameters: expected a JSON object, got array"},
		{"negative timeout", []mutation{set("task.agent_tools[0].timeout_s", -1)}, "task.agent_tools[0].timeout_s: -1 must be > 0"},
		// initial state
		{"table not an array", []mutation{set("task.initial_state", raw(`{"tables":{"orders":{"id":1}}}`))},
			"task.initial_state.tables.orders: expected an array of objects, got object"},
		{"table row not an object", []mutation{set("task.initial_state", raw(`{"tables":{"a":[],"orders":[{"id":1},[2]]}}`))},
			"task.initial_state.tables.orders[1]: expected object, got array"},
		{"table null", []mutation{set("task.initial_state", raw(`{"tables":{"orders":null}}`))},
			"task.initial_state.tables.orders: expected an array of objects, got null"},
		{"unstable field name", []mutation{set("task.initial_state", raw(`{"tables":{},"unstable_fields":[{"table_name":"t"}]}`))},
			"task.initial_state.unstable_fields[0].field_name: required"},
		// arguments
		{"init action arguments", []mutation{set("task.initialization_actions", raw(`[{"env_type":"user","tool_name":"get","arguments":"{}"}]`))},
			"task.initialization_actions[0].arguments: expected a JSON object, got string"},
		{"golden action arguments", []mutation{sc(`{"hash_enabled":true,"golden_actions":[{"tool_name":"put","arguments":[1]}]}`)},
			"task.grading.state_checks.golden_actions[0].arguments: expected a JSON object, got array"},
		{"required action arguments", []mutation{set("task.grading.transcript_rules", raw(`{"required_actions":[{"action_id":"a","tool_name":"get","arguments":3}]}`))},
			"task.grading.transcript_rules.required_actions[0].arguments: expected a JSON object, got number"},
		// jsonpaths
		{"jsonpath neither path", []mutation{sc(`{"jsonpaths":[{"equals":1}]}`)},
			"task.grading.state_checks.jsonpaths[0]: needs exactly one of path, path_glob; got neither"},
		{"jsonpath both paths", []mutation{sc(`{"jsonpaths":[{"path":"$.db.a","path_glob":"*.txt","exists":true}]}`)},
			"task.grading.state_checks.jsonpaths[0]: needs exactly one of path, path_glob; got both"},
		{"jsonpath no operator", []mutation{sc(`{"jsonpaths":[{"path":"$.db.a","description":"x"}]}`)},
			"task.grading.state_checks.jsonpaths[0]: needs exactly one operator (equals, equals_ci, not_equals, contains, contains_ci, matches, exists, absent, gt, gte, lt, lte, count); got none"},
		{"jsonpath two operators", []mutation{sc(`{"jsonpaths":[{"path":"$.db.a","equals":1,"gte":0}]}`)},
			"task.grading.state_checks.jsonpaths[0]: needs exactly one operator; got equals, gte"},
		{"jsonpath null operator is absent", []mutation{sc(`{"jsonpaths":[{"path":"$.db.a","equals":null}]}`)},
			"task.grading.state_checks.jsonpaths[0]: needs exactly one operator (equals, equals_ci, not_equals, contains, contains_ci, matches, exists, absent, gt, gte, lt, lte, count); got none"},
		{"jsonpath not rooted", []mutation{sc(`{"jsonpaths":[{"path":"db.a","exists":true}]}`)},
			`task.grading.state_checks.jsonpaths[0].path: "db.a" is not a JSONPath query (must start with $)`},
		{"jsonpath bad glob", []mutation{sc(`{"jsonpaths":[{"path_glob":"[a","contains_ci":"x"}]}`)},
			`task.grading.state_checks.jsonpaths[0].path_glob: invalid glob "[a": syntax error in pattern`},
		{"jsonpath matches is RE2", []mutation{sc(`{"jsonpaths":[{"path":"$.db.a","matches":"(?<=x)y"}]}`)},
			"task.grading.state_checks.jsonpaths[0].matches: invalid RE2 regular expression: error parsing regexp: invalid named capture: `(?<=x)y`"},
		{"jsonpath negative count", []mutation{sc(`{"jsonpaths":[{"path":"$.db.a","count":-1}]}`)},
			"task.grading.state_checks.jsonpaths[0].count: -1 must be >= 0"},
		// db probes
		{"probe no expectation", []mutation{sc(`{"db_probes":[{"id":"p","query":"$.db.a","expect":{}}]}`)},
			"task.grading.state_checks.db_probes[0].expect: needs exactly one expectation (count, equals, exists, absent); got 0"},
		{"probe two expectations", []mutation{sc(`{"db_probes":[{"id":"p","query":"$.db.a","expect":{"count":1,"exists":true}}]}`)},
			"task.grading.state_checks.db_probes[0].expect: needs exactly one expectation (count, equals, exists, absent); got 2"},
		{"probe equals not a list", []mutation{sc(`{"db_probes":[{"id":"p","query":"$.db.a","expect":{"equals":{"a":1}}}]}`)},
			"task.grading.state_checks.db_probes[0].expect.equals: expected an array of the expected results, got object"},
		{"probe duplicate id", []mutation{sc(`{"db_probes":[{"id":"p","query":"$.db.a","expect":{"count":1}},{"id":"p","query":"$.db.b","expect":{"count":1}}]}`)},
			`task.grading.state_checks.db_probes[1].id: duplicate probe id "p" (also at index 0)`},
		{"probe beside jsonpaths", []mutation{sc(`{"jsonpaths":[{"path":"$.db.a","exists":true}],"db_probes":[{"id":"p","query":"$.db.a","expect":{"count":1}}]}`)},
			"task.grading.state_checks.db_probes: db_probes is the sole state source when present; it cannot be declared beside non-empty jsonpaths"},
		{"probe beside hash with source", []mutation{sc(`{"hash_enabled":true,"golden_actions":[{"tool_name":"put"}],"db_probes":[{"id":"p","query":"$.db.a","expect":{"count":1}}]}`)},
			"task.grading.state_checks.db_probes: db_probes is the sole state source when present; it cannot be declared beside an enabled hash naming a source (golden_actions or expected_hash)"},
		{"expected_hash not hex", []mutation{sc(`{"hash_enabled":true,"expected_hash":"abc"}`)},
			`task.grading.state_checks.expected_hash: "abc" is not a lowercase hex sha256 digest`},
		{"hash_weight range", []mutation{sc(`{"hash_enabled":true,"hash_weight":1.5}`)},
			"task.grading.state_checks.hash_weight: 1.5 is outside [0, 1]"},
		// numbers
		{"pass_threshold above 1", []mutation{set("task.grading.pass_threshold", 1.01)}, "task.grading.pass_threshold: 1.01 is outside [0, 1]"},
		{"pass_threshold below 0", []mutation{set("task.grading.pass_threshold", -0.1)}, "task.grading.pass_threshold: -0.1 is outside [0, 1]"},
		{"negative weight", []mutation{set("task.grading.weights", raw(`{"state_checks":-0.5}`))}, "task.grading.weights.state_checks: -0.5 must be >= 0"},
		{"top_p range", []mutation{set("agent.top_p", 2)}, "agent.top_p: 2 is outside [0, 1]"},
		// regexes
		{"disallow_regex", []mutation{set("task.grading.transcript_rules", raw(`{"disallow_regex":["ok","(?i)(unable"]}`))},
			"task.grading.transcript_rules.disallow_regex[1]: invalid RE2 regular expression: error parsing regexp: missing closing ): `(?i)(unable`"},
		{"content_matches", []mutation{tc(`{"id":"c","kind":"absent","match":{"content_matches":"a{2,1}"}}`)},
			"task.grading.trace_checks.constraints[0].match.content_matches: invalid RE2 regular expression: error parsing regexp: invalid repeat count: `{2,1}`"},
		// transcript rules
		{"duplicate action_id", []mutation{set("task.grading.transcript_rules", raw(`{"required_actions":[{"action_id":"a","tool_name":"get"},{"action_id":"a","tool_name":"put"}]}`))},
			`task.grading.transcript_rules.required_actions[1].action_id: duplicate action_id "a" (also at index 0)`},
		{"communicate_info empty", []mutation{set("task.grading.transcript_rules", raw(`{"communicate_info":[{"info":""}]}`))},
			"task.grading.transcript_rules.communicate_info[0].info: required"},
		{"max_turns negative", []mutation{set("task.grading.transcript_rules", raw(`{"max_turns":-2}`))},
			"task.grading.transcript_rules.max_turns: -2 must be >= 0"},
		// trace checks
		{"constraint id required", []mutation{tc(`{"kind":"absent","match":{}}`)},
			"task.grading.trace_checks.constraints[0].id: required"},
		{"constraint id unique", []mutation{tc(`{"id":"c","kind":"absent","match":{}},{"id":"c","kind":"absent","match":{}}`)},
			`task.grading.trace_checks.constraints[1].id: duplicate constraint id "c" (also at index 0)`},
		{"kind field missing", []mutation{tc(`{"id":"c","kind":"precedes","first":{"tool":"a"}}`)},
			"task.grading.trace_checks.constraints[0].then: required by kind precedes"},
		{"unique needs by", []mutation{tc(`{"id":"c","kind":"unique","match":{"tool":"a"}}`)},
			"task.grading.trace_checks.constraints[0].by: required by kind unique"},
		{"order needs a sequence", []mutation{tc(`{"id":"c","kind":"order","sequence":[]}`)},
			"task.grading.trace_checks.constraints[0].sequence: required by kind order"},
		{"field of another kind", []mutation{tc(`{"id":"c","kind":"absent","match":{},"within":3}`)},
			"task.grading.trace_checks.constraints[0].within: not used by kind absent"},
		{"max below default min", []mutation{tc(`{"id":"c","kind":"occurs","match":{},"max":0}`)},
			"task.grading.trace_checks.constraints[0].max: 0 is below min 1"},
		{"within zero", []mutation{tc(`{"id":"c","kind":"responds","trigger":{},"response":{},"within":0}`)},
			"task.grading.trace_checks.constraints[0].within: 0 must be >= 1"},
		{"negative trace weight", []mutation{tc(`{"id":"c","kind":"absent","match":{},"weight":-1}`)},
			"task.grading.trace_checks.constraints[0].weight: -1 must be >= 0"},
		{"bind without require", []mutation{tc(`{"id":"c","kind":"occurs","bind":{"var":"o","from":{},"value":"args.id"}}`)},
			"task.grading.trace_checks.constraints[0].require: required with bind"},
		{"require with an id", []mutation{tc(`{"id":"c","kind":"occurs","bind":{"var":"o","from":{},"value":"args.id"},"require":{"id":"x","kind":"absent","match":{}}}`)},
			"task.grading.trace_checks.constraints[0].require.id: not allowed inside require (the enclosing constraint's id names the verdict)"},
		{"require needs its kind's fields", []mutation{tc(`{"id":"c","kind":"occurs","bind":{"var":"o","from":{},"value":"args.id"},"require":{"kind":"precedes","first":{}}}`)},
			"task.grading.trace_checks.constraints[0].require.then: required by kind precedes"},
		{"bind value", []mutation{tc(`{"id":"c","kind":"occurs","bind":{"var":"o","from":{},"value":"output.id"},"require":{"kind":"absent","match":{}}}`)},
			`task.grading.trace_checks.constraints[0].bind.value: "output.id" must be result.<path> or args.<key>`},
		{"bind var", []mutation{tc(`{"id":"c","kind":"occurs","bind":{"var":"1x","from":{},"value":"args.id"},"require":{"kind":"absent","match":{}}}`)},
			`task.grading.trace_checks.constraints[0].bind.var: "1x" is not a variable name ([A-Za-z_][A-Za-z0-9_]*)`},
		{"alternative id", []mutation{set("task.grading.trace_checks", raw(`{"alternatives":[{"constraints":[{"id":"c","kind":"absent","match":{}}]}]}`))},
			"task.grading.trace_checks.alternatives[0].id: required"},
		{"alternative empty", []mutation{set("task.grading.trace_checks", raw(`{"alternatives":[{"id":"r","constraints":[]}]}`))},
			"task.grading.trace_checks.alternatives[0].constraints: an alternative needs at least one constraint"},
		{"constraint in alternative needs id", []mutation{set("task.grading.trace_checks", raw(`{"alternatives":[{"id":"r","constraints":[{"kind":"absent","match":{}}]}]}`))},
			"task.grading.trace_checks.alternatives[0].constraints[0].id: required"},
		// judge
		{"judge model_ref", []mutation{set("task.grading.llm_judge", raw(`{"rubric":{"criteria":[{"id":"a","description":"d"}]}}`))},
			"task.grading.llm_judge.model_ref: required"},
		{"judge no criteria", []mutation{set("task.grading.llm_judge", raw(`{"model_ref":"j","rubric":{"criteria":[]}}`))},
			"task.grading.llm_judge.rubric.criteria: at least one criterion is required"},
		{"judge bar", []mutation{set("task.grading.llm_judge", raw(`{"model_ref":"j","rubric":{"criteria":[{"id":"a","description":"d","kind":"graded","bar":7}]}}`))},
			"task.grading.llm_judge.rubric.criteria[0].bar: 7 is outside [0, 1]"},
		{"judge max_calls", []mutation{set("task.grading.llm_judge", raw(`{"model_ref":"j","rubric":{"criteria":[{"id":"a","description":"d"}]},"max_calls":0}`))},
			"task.grading.llm_judge.max_calls: 0 must be >= 1"},
		{"judge max_calls absurd", []mutation{set("task.grading.llm_judge", raw(`{"model_ref":"j","rubric":{"criteria":[{"id":"a","description":"d"}]},"max_calls":8000}`))},
			"task.grading.llm_judge.max_calls: 8000 exceeds 100, the most calls a judge may make in one trial (LLM calls and tool calls together; every LLM call is billed and re-sends the whole transcript)"},
		{"judge tool naming no agent tool", []mutation{set("task.grading.llm_judge", raw(`{"model_ref":"j","rubric":{"criteria":[{"id":"a","description":"d"}]},"tools":["get_weather"]}`)),
			set("task.grading.weights", raw(`{"state_checks":1,"llm_judge":1}`))},
			`task.grading.llm_judge.tools[0]: "get_weather" names no agent tool of the task (neither "get_weather" nor *_get_weather); the judge may call only the agent's read-only tools`},
		// custom checks
		{"custom check expr", []mutation{set("task.grading.custom_checks", raw(`{"enabled":true,"checks":[{"name":"a"}]}`))},
			"task.grading.custom_checks.checks[0].expr: required"},
		{"custom check duplicate", []mutation{set("task.grading.custom_checks", raw(`{"checks":[{"name":"a","expr":"true"},{"name":"a","expr":"false"}]}`))},
			`task.grading.custom_checks.checks[1].name: duplicate check name "a" (also at index 0)`},
		// test execution
		{"test_execution without method", []mutation{set("task.grading.test_execution", raw(`{"command":["true"]}`))},
			"task.grading.test_execution: only allowed with grading_method test_execution"},
		{"test_execution method without block", []mutation{set("task.grading.grading_method", "test_execution")},
			"task.grading.test_execution: required when grading_method is test_execution"},
		{"test_execution command", []mutation{set("task.grading.grading_method", "test_execution"), set("task.grading.test_execution", raw(`{"command":[]}`))},
			"task.grading.test_execution.command: required"},
		// secrets and legacy keys
		{"search api_key", []mutation{set("task.search", raw(`{"enabled":false,"api_key":"sk-123"}`))},
			"task.search.api_key: a secret never travels in the trial spec; only null is accepted"},
		{"legacy first_message non-null", []mutation{set("task.user_simulator", raw(`{"first_message":"hi"}`))},
			"task.user_simulator.first_message: protocol v2 dropped this key from the trial spec (only null is accepted, as older schema dumps carry it)"},
		{"legacy user_context non-null", []mutation{set("task.user_simulator", raw(`{"first_message":null,"user_context":{}}`))},
			"task.user_simulator.user_context: protocol v2 dropped this key from the trial spec (only null is accepted, as older schema dumps carry it)"},
		// type mismatches name the path
		{"type mismatch deep", []mutation{set("task.grading.transcript_rules", raw(`{"max_turns":"14"}`))},
			"task.grading.transcript_rules.max_turns: expected integer, got string"},
		{"type mismatch in list", []mutation{set("task.agent_tools[1].timeout_s", "30")},
			"task.agent_tools[1].timeout_s: expected number, got string"},
		{"legacy pydantic int as float", []mutation{set("task.grading.transcript_rules", raw(`{"max_turns":14.0}`))},
			"task.grading.transcript_rules.max_turns: expected integer, got 14.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeTrialSpec(specWith(t, tt.muts...))
			wantErr(t, err, tt.want)
		})
	}
}

func TestDecodeTrialSpecDefaults(t *testing.T) {
	s, err := DecodeTrialSpec(specWith(t,
		set("task.agent_tools[2]", raw(`{"name":"tau","description":"x","source":{"toolset":"t","module_path":"m","class_name":"C","invocation_style":"mcp_server","mcp_server_script":null}}`)),
		set("task.initial_state", raw(`{"tables":{"t":[]},"schemas":[{"table_name":"t"}],"unstable_fields":[{"table_name":"t","field_name":"id"}]}`)),
		set("task.initialization_actions", raw(`[{"env_type":"assistant","tool_name":"get"}]`)),
		set("task.user_simulator", raw(`{}`)),
		set("task.grading", raw(`{
			"state_checks":{"golden_actions":[{"tool_name":"put"}]},
			"transcript_rules":{"required_actions":[{"action_id":"a","tool_name":"get"}],"communicate_info":[{"info":"x"}]},
			"trace_checks":{"constraints":[{"id":"c","kind":"occurs","match":{"tool":"get"}},
				{"id":"d","kind":"between","after":{},"before":{},"match":{}},
				{"id":"e","kind":"occurs","bind":{"var":"v","from":{},"value":"args.id"},"require":{"kind":"occurs","match":{}}}]},
			"llm_judge":{"model_ref":"judge","rubric":{"criteria":[{"id":"a","description":"d"}]}},
			"custom_checks":{"checks":[{"name":"a","expr":"true"}]},
			"weights":{"transcript_rules":1,"trace_checks":1,"llm_judge":1}
		}`)),
	))
	if err != nil {
		t.Fatal(err)
	}
	task := s.Task
	if task.SchemaVersion != "1.0.0" {
		t.Errorf("schema_version = %q", task.SchemaVersion)
	}
	if task.UserTools == nil || len(task.UserTools) != 0 {
		t.Errorf("user_tools = %#v, want empty non-nil", task.UserTools)
	}
	for i, tool := range task.AgentTools {
		if tool.Category != CategoryCompute || tool.TimeoutS != 30 {
			t.Errorf("agent_tools[%d]: category %q timeout %v", i, tool.Category, tool.TimeoutS)
		}
	}
	if got := task.AgentTools[1].Source.InvocationStyle; got != InvocationTauSync {
		t.Errorf("invocation_style = %q", got)
	}
	if got := task.AgentTools[2].Source; got.InvocationStyle != InvocationMCPServer || got.MCPServerScript != nil || got.Extra == nil {
		t.Errorf("explicit source = %+v", got)
	}
	if got := task.InitialState.Schemas[0].PrimaryKey; got != "id" {
		t.Errorf("primary_key = %q", got)
	}
	if got := task.InitialState.UnstableFields[0].Reason; got != reasonAutoID {
		t.Errorf("reason = %q", got)
	}
	if got := string(task.InitializationActions[0].Arguments); got != "{}" {
		t.Errorf("init arguments = %q", got)
	}
	if u := task.UserSimulator; u.Mode != UserSimLLM || u.Persona != "cooperative" {
		t.Errorf("user_simulator = %+v", u)
	}
	g := task.Grading
	if g.CombineMethod != CombineWeighted || g.GradingMethod != gradingComponents || *g.PassThreshold != 1.0 {
		t.Errorf("grading = %q %q %v", g.CombineMethod, g.GradingMethod, *g.PassThreshold)
	}
	// Only the configured components need a share; none is invented for the rest.
	if len(g.Weights) != 3 {
		t.Errorf("weights = %#v, want the three declared", g.Weights)
	}
	if got := string(g.StateChecks.GoldenActions[0].Arguments); got != "{}" {
		t.Errorf("golden arguments = %q", got)
	}
	if a := g.TranscriptRules.RequiredActions[0]; a.Requestor != RequestorAssistant || a.CompareArgs != nil {
		t.Errorf("required action = %+v", a)
	}
	if r := g.TranscriptRules.CommunicateInfo[0].Required; r == nil || !*r {
		t.Errorf("communicate_info.required = %v", r)
	}
	for i, c := range g.TraceChecks.Constraints {
		if c.Severity != SeverityScored || *c.Weight != 1 || c.OnUnbound != onUnboundFail {
			t.Errorf("constraint %d = %q %v %q", i, c.Severity, *c.Weight, c.OnUnbound)
		}
	}
	if c := g.TraceChecks.Constraints; *c[0].Min != 1 || *c[1].Min != 1 || c[2].Min != nil || *c[2].Require.Min != 1 {
		t.Errorf("trace min defaults wrong: %v %v %v", c[0].Min, c[1].Min, c[2].Min)
	}
	j := g.LLMJudge
	if !*j.IncludeAgentSystemPrompt || *j.MaxCalls != 8 || j.Rubric.Criteria[0].Kind != CriterionBinary || *j.Rubric.Criteria[0].Weight != 1 {
		t.Errorf("judge = %+v", j)
	}
	if cc := g.CustomChecks; !*cc.FailOnError || *cc.Checks[0].Weight != 1 || cc.Enabled {
		t.Errorf("custom checks = %+v", cc)
	}

	// weights crosses the wire as sent: never a share nobody sent.
	out, err := Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, []byte(`"weights":{"llm_judge":1,"trace_checks":1,"transcript_rules":1}`)) {
		t.Errorf("encoded grading lacks the declared weights: %s", out)
	}
}

func TestDecodeGradingConfigWeightsNeverInvented(t *testing.T) {
	// golden_actions with hash_enabled false configure nothing a fold scores.
	for _, doc := range []string{`{"state_checks":{"golden_actions":[{"tool_name":"put"}]}}`, `{"weights":null}`} {
		g, err := DecodeGradingConfig([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		if g.Weights == nil || len(g.Weights) != 0 {
			t.Fatalf("%s: weights = %#v, want {}", doc, g.Weights)
		}
	}
	// Paths of a standalone grading block are rooted at the block.
	_, err := DecodeGradingConfig([]byte(`{"combine_method":"any_pass"}`))
	wantErr(t, err, `combine_method: "any_pass" is not one of weighted, all, any`)
	_, err = DecodeGradingConfig([]byte(`{"state_checks":{"hsah_enabled":true}}`))
	wantErr(t, err, "state_checks.hsah_enabled: unknown key")
}

func TestDecodeTrialSpecNullIsAbsent(t *testing.T) {
	s, err := DecodeTrialSpec(specWith(t,
		set("user_simulator_model", nil),
		set("judge", nil),
		set("runtime_context", nil),
		set("task.schema_version", nil),
		set("task.user_tools", nil),
		set("task.search", nil),
		set("task.generated_at", nil),
		set("task.agent_tools[0].timeout_s", nil),
		set("task.agent_tools[0].parameters", nil),
		set("task.agent_tools[1].source.mcp_server_script", nil),
		set("task.agent_tools[1].source.extra", nil),
		set("task.grading.pass_threshold", nil),
		set("task.grading.weights", raw(`{"transcript_rules":1}`)),
		set("task.grading.llm_judge", nil),
		set("task.grading.state_checks.hash_enabled", nil),
		set("task.grading.state_checks.golden_actions", raw(`[{"tool_name":"put","arguments":null}]`)),
		set("task.grading.transcript_rules", raw(`{"required_actions":[{"action_id":"a","tool_name":"get","compare_args":null},{"action_id":"b","tool_name":"get","compare_args":[]}]}`)),
		set("task.user_simulator", raw(`{"first_message":null,"user_context":null,"scripted_flow":null,"mode":null}`)),
	))
	if err != nil {
		t.Fatal(err)
	}
	task := s.Task
	switch {
	case s.UserSimulatorModel != nil, s.Judge != nil, s.RuntimeContext != nil:
		t.Errorf("null optional spec fields not absent: %+v", s)
	case task.SchemaVersion != "1.0.0", task.UserTools == nil, task.Search != nil, task.GeneratedAt != nil:
		t.Errorf("null task fields not absent/defaulted")
	case task.AgentTools[0].TimeoutS != 30, task.AgentTools[0].Parameters != nil:
		t.Errorf("tool 0 = %+v", task.AgentTools[0])
	case task.AgentTools[1].Source.MCPServerScript != nil, task.AgentTools[1].Source.Extra == nil:
		t.Errorf("source = %+v", task.AgentTools[1].Source)
	case *task.Grading.PassThreshold != 1.0, task.Grading.Weights == nil, task.Grading.LLMJudge != nil:
		t.Errorf("grading = %+v", task.Grading)
	case task.Grading.StateChecks.HashEnabled:
		t.Errorf("hash_enabled null must be false")
	case string(task.Grading.StateChecks.GoldenActions[0].Arguments) != "{}":
		t.Errorf("arguments null must default to {}")
	case task.UserSimulator.Mode != UserSimLLM:
		t.Errorf("mode null must default to llm")
	}
	// compare_args: null is "every given argument", [] is "name only".
	ra := task.Grading.TranscriptRules.RequiredActions
	if ra[0].CompareArgs != nil {
		t.Errorf("compare_args null = %v, want nil", *ra[0].CompareArgs)
	}
	if ra[1].CompareArgs == nil || len(*ra[1].CompareArgs) != 0 {
		t.Errorf("compare_args [] = %v, want pointer to empty", ra[1].CompareArgs)
	}
}

func TestDecodeTaskDescriptionPathsRootedAtTask(t *testing.T) {
	_, err := DecodeTaskDescription([]byte(`{"task_id":"a","grading":{"state_checks":{"hsah_enabled":true}}}`))
	wantErr(t, err, "grading.state_checks.hsah_enabled: unknown key")
	_, err = DecodeTaskDescription([]byte(`{"task_id":"a"}`))
	wantErr(t, err, "name: required")
}

func TestValidateGoBuiltValues(t *testing.T) {
	// Values built in Go bypass the decoder's closed-set check; Validate keeps it.
	g := &GradingConfig{CombineMethod: "best"}
	g.ApplyDefaults()
	wantErr(t, g.Validate(), `combine_method: "best" is not one of weighted, all, any`)

	s := &TrialSpec{Task: &TaskDescription{}, Agent: &ModelConfig{Provider: ProviderOracle}}
	s.ApplyDefaults()
	wantErr(t, s.Validate(), "task.task_id: required")

	var raw json.RawMessage = []byte(`{"x":1}`)
	td := &TaskDescription{TaskID: "a", Name: "n", Category: "c", Description: "d", AdapterType: AdapterNative, SystemPrompt: "p",
		InitialState: &InitialState{Tables: map[string]json.RawMessage{"b": []byte("[]"), "a": raw}}}
	td.ApplyDefaults()
	wantErr(t, td.Validate(), "initial_state.tables.a: expected an array of objects, got object")
}
