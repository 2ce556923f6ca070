package task

import (
	"strings"
	"testing"
)

// llm_judge.tools names the agent's read-only tools and max_calls bounds the judge: a
// tool the task does not have, a user tool, a tool not declared read, a writing
// builtin, an ambiguous suffix, a duplicate and a max_calls out of bounds are refused
// at validation, naming the key.
func TestJudgeToolsValidation(t *testing.T) {
	one := 1.0
	mcp := &ToolSource{Toolset: "shop", InvocationStyle: InvocationMCPServer}
	td := func(maxCalls *int, tools ...string) *TaskDescription {
		return &TaskDescription{
			TaskID: "t", Name: "n", Category: "c", Description: "d", AdapterType: AdapterNative, SystemPrompt: "p",
			AgentTools: []ToolSchema{
				{Name: "shop_get_customer", Category: CategoryRead, TimeoutS: 30, Source: mcp},
				{Name: "shop_place_order", Category: CategoryWrite, TimeoutS: 30, Source: mcp},
				{Name: "shop_quote", Category: CategoryCompute, TimeoutS: 30, Source: mcp},
				{Name: "write_file", Category: CategoryRead, TimeoutS: 30},
				{Name: "read_file", Category: CategoryRead, TimeoutS: 30},
				{Name: "list_dir", Category: CategoryCompute, TimeoutS: 30},
				{Name: "calculator", Category: CategoryCompute, TimeoutS: 30},
				{Name: "a_lookup", Category: CategoryRead, TimeoutS: 30, Source: mcp},
				{Name: "b_lookup", Category: CategoryRead, TimeoutS: 30, Source: mcp},
			},
			UserTools: []ToolSchema{{Name: "check_order_status", Category: CategoryRead, TimeoutS: 30, Source: mcp}},
			Grading: &GradingConfig{CombineMethod: CombineWeighted, Weights: map[string]float64{"llm_judge": 1}, PassThreshold: &one,
				LLMJudge: &LLMJudge{ModelRef: "j", Rubric: Rubric{Criteria: []Criterion{{ID: "a", Description: "d"}}}, Tools: tools, MaxCalls: maxCalls}},
		}
	}
	n := func(v int) *int { return &v }
	for _, c := range []struct {
		name     string
		maxCalls *int
		tools    []string
		want     string
	}{
		{name: "a read tool, authored unprefixed", tools: []string{"get_customer"}},
		{name: "a read tool by its registered name", tools: []string{"shop_get_customer"}},
		{name: "a read builtin", tools: []string{"read_file"}},
		{name: "a read builtin without a declared category", tools: []string{"list_dir"}},
		{name: "a compute builtin", tools: []string{"calculator"},
			want: `grading.llm_judge.tools[0]: "calculator" is agent tool calculator, declared category compute: a judge tool must be declared category read`},
		{name: "tools at the least max_calls", maxCalls: n(3), tools: []string{"get_customer"}},
		{name: "the most max_calls", maxCalls: n(100)},
		{name: "one call without tools", maxCalls: n(1)},
		{name: "a write tool", tools: []string{"place_order"},
			want: `grading.llm_judge.tools[0]: "place_order" is agent tool shop_place_order, declared category write: a judge tool must be declared category read`},
		{name: "a compute tool", tools: []string{"quote"},
			want: `grading.llm_judge.tools[0]: "quote" is agent tool shop_quote, declared category compute: a judge tool must be declared category read`},
		{name: "a writing builtin declared read", tools: []string{"get_customer", "write_file"},
			want: `grading.llm_judge.tools[1]: "write_file" is the builtin write_file, which writes: a judge tool must be read-only`},
		{name: "not a tool of the task", tools: []string{"get_weather"},
			want: `grading.llm_judge.tools[0]: "get_weather" names no agent tool of the task (neither "get_weather" nor *_get_weather); the judge may call only the agent's read-only tools`},
		{name: "a user tool", tools: []string{"order_status"},
			want: `grading.llm_judge.tools[0]: "order_status" is user tool check_order_status, which is not offered to the agent: the judge may call only the agent's read-only tools`},
		{name: "ambiguous", tools: []string{"lookup"},
			want: `grading.llm_judge.tools[0]: "lookup" matches several agent tools (a_lookup, b_lookup); name one exactly`},
		{name: "duplicate", tools: []string{"get_customer", "get_customer"},
			want: `grading.llm_judge.tools[1]: duplicate judge tool "get_customer" (also at index 0)`},
		{name: "empty name", tools: []string{""}, want: `grading.llm_judge.tools[0]: required`},
		{name: "max_calls 0", maxCalls: n(0), want: `grading.llm_judge.max_calls: 0 must be >= 1`},
		{name: "max_calls absurd", maxCalls: n(101),
			want: `grading.llm_judge.max_calls: 101 exceeds 100, the most calls a judge may make in one trial (LLM calls and tool calls together; every LLM call is billed and re-sends the whole transcript)`},
		{name: "max_calls leaves tools no call", maxCalls: n(2), tools: []string{"get_customer"},
			want: `grading.llm_judge.max_calls: 2 leaves the judge no call for its tools [get_customer]: after the first call a tool call and the answer take one each, so judge tools need max_calls >= 3`},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := td(c.maxCalls, c.tools...)
			err := d.Validate()
			if c.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v\nwant %q", err, c.want)
			}
		})
	}
}
