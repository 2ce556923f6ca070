package task

import (
	"reflect"
	"testing"
)

func FuzzDecodeTrialSpec(f *testing.F) {
	f.Add([]byte(baseSpec))
	for _, name := range []string{"tau_example.json", "tbench_echo_hello_task_description.json"} {
		f.Add([]byte(`{"task":` + string(readTestdata(f, name)) + `,"agent":{"provider":"oracle"}}`))
	}
	f.Add([]byte(`{"task":{"task_id":"a","name":"n","category":"c","description":"d","adapter_type":"tau","system_prompt":"p",
		"agent_tools":[{"name":"t","description":"","parameters":{"type":"object","x":"<&>\u2028"}}],
		"initial_state":{"tables":{"t":[{"id":1,"v":1.0,"s":"\u00e9"}]},"schemas":[{"table_name":"t"}],"unstable_fields":[{"table_name":"t","field_name":"id"}]},
		"user_simulator":{"first_message":null,"user_context":null},
		"grading":{"weights":{"state_checks":1,"transcript_rules":1,"trace_checks":1,"llm_judge":1,"custom_checks":0.5},"pass_threshold":0.5,
			"state_checks":{"hash_enabled":true,"golden_actions":[{"tool_name":"t"}],"hash_weight":0.5,"jsonpaths":[{"path":"$.db.t[0].v","equals":1.0}]},
			"transcript_rules":{"disallow_regex":["(?i)x"],"required_actions":[{"action_id":"a","tool_name":"t","compare_args":[]}]},
			"trace_checks":{"constraints":[{"id":"c","kind":"occurs","bind":{"var":"v","from":{"tool":"t"},"value":"args.k"},
				"require":{"kind":"occurs","match":{"tool":"t","args":{"k":"${v}","l":[{"m":["x ${v}","\u0024{v}"]}]}},"max":3}}],
				"alternatives":[{"id":"r","constraints":[{"id":"b","kind":"unique","match":{},"by":["k"]}]}]},
			"llm_judge":{"model_ref":"j","rubric":{"criteria":[{"id":"a","description":"d","kind":"graded","bar":0.5}]}},
			"custom_checks":{"enabled":true,"checks":[{"name":"c","expr":"true"},
				{"name":"d","when":"termination_reason != ''","expr":"timeline.exists(e, e.args.k == 1.0) && db.t.size() > 0 && task.metadata.x == 'y'"}]}}},
		"agent":{"provider":"openai","model":"m","seed":-1},"runtime_context":{"a":null}}`))
	f.Add([]byte(`{"task":null,"agent":{"provider":"oracle"}}`))
	// Shapes refused before the spend: an unbound nested variable, an out-of-range literal.
	f.Add([]byte(`{"task":{"task_id":"a","name":"n","category":"c","description":"d","adapter_type":"native","system_prompt":"p",
		"grading":{"weights":{"trace_checks":1e308},"trace_checks":{"constraints":[{"id":"c","kind":"occurs","match":{"args":{"k":[{"x":"${u}"},1e400]}}}]}}},
		"agent":{"provider":"oracle"}}`))
	f.Add([]byte(`{"task":{"grading":{"combine_method":"all_pass"}}}`))
	f.Add([]byte(`{"a":1}{"b":2}`))
	f.Add([]byte(`{"task":{"metadata":{"k":[1,{"x":null}]}},"task":{}}`))
	f.Add([]byte(`{"agent":{"provider":"oracle","max_tokens":9223372036854775808}}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, data []byte) {
		first, err := DecodeTrialSpec(data)
		if err != nil {
			if _, ok := err.(*DecodeError); !ok {
				t.Fatalf("error %T is not *DecodeError: %v", err, err)
			}
			return
		}
		enc, err := Encode(first)
		if err != nil {
			t.Fatalf("encode of an accepted spec failed: %v", err)
		}
		second, err := DecodeTrialSpec(enc)
		if err != nil {
			t.Fatalf("our own encoding is refused: %v\n%s", err, enc)
		}
		if d := firstDiff(reflect.ValueOf(first), reflect.ValueOf(second), "$"); d != "" {
			t.Fatalf("decode -> encode -> decode changed the spec: %s\n%s", d, enc)
		}
	})
}

func FuzzDecodeTranscriptWire(f *testing.F) {
	f.Add([]byte(`[{"role":"system","content":"p"},{"role":"user","content":"hi"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get","arguments":"{\"a\":1}"}}]},
		{"role":"tool","content":"<ok>","tool_call_id":"c1"},{"role":"assistant","content":"done"}]`))
	f.Add([]byte(`[{"role":"user","content":"a","tool_calls":[{"id":"u","function":{"name":"n","arguments":""}}]},{"role":"tool","content":"","tool_call_id":"u"}]`))
	f.Add([]byte(`[{"role":"assistant","content":"","tool_calls":[{"function":{"name":"get","arguments":"{}"}}]}]`))
	f.Add([]byte(`[{"role":"assistant","content":"","tool_calls":[{"id":"c","function":{"name":"get","arguments":{}}}]}]`))
	f.Add([]byte(`[{"role":"tool","content":"x"}]`))
	f.Add([]byte(`{"role":"user"}`))
	f.Add([]byte(`[`))
	f.Add([]byte(`[{"role":"user","content":"\ud800"}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		first, err := DecodeTranscriptWire(data)
		if err != nil {
			if _, ok := err.(*transcriptError); !ok {
				t.Fatalf("error %T is not *TranscriptError: %v", err, err)
			}
			return
		}
		enc, err := EncodeTranscriptWire(first)
		if err != nil {
			t.Fatalf("encode of an accepted transcript failed: %v", err)
		}
		second, err := DecodeTranscriptWire(enc)
		if err != nil {
			t.Fatalf("our own encoding is refused: %v\n%s", err, enc)
		}
		if !reflect.DeepEqual(first, second) {
			t.Fatalf("decode -> encode -> decode changed the transcript\n%+v\n%+v", first, second)
		}
	})
}
