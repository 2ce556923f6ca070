package task

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// checker records the first validation failure. Checks run in declaration
// order (map keys sorted), so the same bad input always yields the same error.
type checker struct {
	err *DecodeError
	// runner is set for a trial spec (RegisterTrial): the runner grades every hash
	// shape the spec lets it grade (a hash with no declared source against the
	// trial's initial state), so the authoring-only refusals do not apply.
	runner bool
}

func (c *checker) failf(path, format string, args ...any) {
	if c.err == nil {
		c.err = &DecodeError{Path: path, Msg: fmt.Sprintf(format, args...)}
	}
}

func (c *checker) result() error {
	if c.err == nil {
		return nil
	}
	return c.err
}

func (c *checker) required(path, value string) {
	if value == "" {
		c.failf(path, "required")
	}
}

// enum checks a closed-set value set in Go (the decoder already checked what came
// off the wire). Empty is left to required() or to the default.
func (c *checker) enum(path, value string, members []string) {
	if value != "" && !isMember(value, members) {
		c.failf(path, "%s", notMember(value, members))
	}
}

func (c *checker) unit(path string, v *float64) {
	if v != nil && !(*v >= 0 && *v <= 1) {
		c.failf(path, "%v is outside [0, 1]", *v)
	}
}

// nonNegative also refuses ±Inf (and NaN): YAML (.inf, .nan) and Go-built values can
// carry them where JSON cannot, and an infinite weight or timeout has no meaning the
// fold or a clock could honour.
func (c *checker) nonNegative(path string, v float64) {
	switch {
	case !IsFinite(v):
		c.failf(path, "%v is not a finite number", v)
	case v < 0:
		c.failf(path, "%v must be >= 0", v)
	}
}

// maxSeconds is the longest duration time.Duration holds, in whole seconds.
const maxSeconds = math.MaxInt64 / int64(time.Second)

// seconds checks a non-negative number of seconds that becomes a time.Duration, which
// a larger value would overflow into a negative one.
func (c *checker) seconds(path string, v float64) {
	c.nonNegative(path, v)
	if IsFinite(v) && v > float64(maxSeconds) {
		c.failf(path, "%v exceeds the longest duration, %d seconds", v, maxSeconds)
	}
}

// jsonNumbers refuses a number literal in a free-form value that the grader's JSON
// parser (api/canonical) refuses at grade time: a float literal outside the float64
// range (1e400). json.Valid accepts it, so without this the trial would register,
// the agent would spend its budget, and the grade would fail on the literal.
func (c *checker) jsonNumbers(path string, raw json.RawMessage) {
	if raw == nil || !json.Valid(raw) {
		return
	}
	walkJSON(raw, path, func(p string, v any) {
		n, ok := v.(json.Number)
		if !ok || !strings.ContainsAny(string(n), ".eE") {
			return // an integer literal of any size is exact in the canonical model
		}
		if f, err := strconv.ParseFloat(string(n), 64); err != nil || !IsFinite(f) {
			c.failf(p, "number %s is outside the float64 range", n)
		}
	})
}

// walkJSON calls visit for every value of a valid JSON document, depth first, with
// its path below path (objects' keys in sorted order, so the first failure reported
// is deterministic). Numbers arrive as json.Number.
func walkJSON(raw json.RawMessage, path string, visit func(path string, v any)) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return
	}
	walkValue(v, path, visit)
}

func walkValue(v any, path string, visit func(path string, v any)) {
	visit(path, v)
	switch x := v.(type) {
	case []any:
		for i, e := range x {
			walkValue(e, joinIndex(path, i), visit)
		}
	case map[string]any:
		for _, k := range sortedKeys(x) {
			walkValue(x[k], joinKey(path, k), visit)
		}
	}
}

func (c *checker) nonNegativeInt(path string, v *int) {
	if v != nil && *v < 0 {
		c.failf(path, "%d must be >= 0", *v)
	}
}

// regex compiles an RE2 pattern the way the evaluators will.
func (c *checker) regex(path, pattern string) {
	if _, err := regexp.Compile(pattern); err != nil {
		c.failf(path, "invalid RE2 regular expression: %v", err)
	}
}

// jsonObject checks a free-form value that must be an object (or absent).
func (c *checker) jsonObject(path string, raw json.RawMessage) {
	if raw == nil {
		return
	}
	if k := rawKind(raw); k != "object" {
		c.failf(path, "expected a JSON object, got %s", k)
	}
}

func rawKind(raw json.RawMessage) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return "nothing"
	}
	if !json.Valid(t) {
		return "invalid JSON"
	}
	return jsonKind(t)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Validate checks a TrialSpec after ApplyDefaults; errors are *DecodeError
// with paths rooted at the spec ("task.grading.pass_threshold").
func (s *TrialSpec) Validate() error {
	c := &checker{runner: true}
	s.validate(c)
	return c.result()
}

func (s *TrialSpec) validate(c *checker) {
	if s.Task == nil {
		c.failf("task", "required")
	} else {
		s.Task.validate(c, "task")
	}
	if s.Agent == nil {
		c.failf("agent", "required")
	} else {
		s.Agent.validate(c, "agent")
	}
	if s.UserSimulatorModel != nil {
		s.UserSimulatorModel.validate(c, "user_simulator_model")
	}
	if s.Judge != nil {
		s.Judge.validate(c, "judge")
	}
}

// Validate checks one model config on its own (a CLI's model-config file);
// paths are rooted at path ("agent.reasoning_effort").
func (m *ModelConfig) Validate(path string) error {
	c := &checker{}
	m.validate(c, path)
	return c.result()
}

func (m *ModelConfig) validate(c *checker, path string) {
	c.required(joinKey(path, "provider"), string(m.Provider))
	c.enum(joinKey(path, "provider"), string(m.Provider), m.Provider.members())
	if m.Temperature != nil {
		c.nonNegative(joinKey(path, "temperature"), *m.Temperature)
	}
	c.unit(joinKey(path, "top_p"), m.TopP)
	if m.MaxTokens != nil && *m.MaxTokens < 1 {
		c.failf(joinKey(path, "max_tokens"), "%d must be >= 1", *m.MaxTokens)
	}
	if m.MaxCompletionTokens != nil && *m.MaxCompletionTokens < 1 {
		c.failf(joinKey(path, "max_completion_tokens"), "%d must be >= 1", *m.MaxCompletionTokens)
	}
	c.enum(joinKey(path, "reasoning_effort"), m.ReasoningEffort, ReasoningEfforts)
	if m.ExtraBody != nil {
		c.jsonObject(joinKey(path, "extra_body"), m.ExtraBody)
		var obj map[string]json.RawMessage
		if json.Unmarshal(m.ExtraBody, &obj) == nil {
			keys := make([]string, 0, len(obj))
			for k := range obj {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if isMember(k, ReservedBodyKeys) {
					c.failf(joinKey(path, "extra_body."+k), "the client sets %q itself; use the model config's own field", k)
				}
			}
		}
	}
	names := make([]string, 0, len(m.ExtraHeadersEnv))
	for h := range m.ExtraHeadersEnv {
		names = append(names, h)
	}
	sort.Strings(names)
	for _, h := range names {
		p := joinKey(path, "extra_headers_env."+h)
		if !validHeaderName(h) {
			c.failf(p, "%q is not a valid HTTP header name", h)
		} else if reservedHeader(h) {
			c.failf(p, "header %q is set by the client (authorization and content headers cannot be overridden)", h)
		}
		c.required(p, m.ExtraHeadersEnv[h])
	}
	if !(m.RequestTimeoutSeconds >= 0) {
		c.failf(joinKey(path, "request_timeout_seconds"), "%v must be >= 0", m.RequestTimeoutSeconds)
	}
	if r := m.RateLimit; r != nil {
		if r.RequestsPerMinute < 0 {
			c.failf(joinKey(path, "rate_limit.requests_per_minute"), "%d must be >= 0", r.RequestsPerMinute)
		}
		if r.TokensPerMinute < 0 {
			c.failf(joinKey(path, "rate_limit.tokens_per_minute"), "%d must be >= 0", r.TokensPerMinute)
		}
	}
	if p := m.Pricing; p != nil {
		c.nonNegative(joinKey(path, "pricing.input_usd_per_mtok"), p.InputUSDPerMTok)
		c.nonNegative(joinKey(path, "pricing.output_usd_per_mtok"), p.OutputUSDPerMTok)
		if p.CachedInputUSDPerMTok != nil {
			c.nonNegative(joinKey(path, "pricing.cached_input_usd_per_mtok"), *p.CachedInputUSDPerMTok)
		}
	}
}

// validHeaderName: an RFC 9110 token.
func validHeaderName(h string) bool {
	if h == "" {
		return false
	}
	for _, r := range h {
		if r > 0x7e || r <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return false
		}
	}
	return true
}

// ReservedHeaders are the headers the client owns.
var ReservedHeaders = []string{"authorization", "content-type", "content-length", "host", "accept"}

func reservedHeader(h string) bool { return isMember(strings.ToLower(h), ReservedHeaders) }

// Validate checks a TaskDescription after ApplyDefaults; paths are rooted at
// the task ("grading.combine_method").
func (t *TaskDescription) Validate() error {
	c := &checker{}
	t.validate(c, "")
	return c.result()
}

func (t *TaskDescription) validate(c *checker, path string) {
	c.required(joinKey(path, "task_id"), t.TaskID)
	c.required(joinKey(path, "name"), t.Name)
	c.required(joinKey(path, "category"), t.Category)
	c.required(joinKey(path, "description"), t.Description)
	c.required(joinKey(path, "adapter_type"), string(t.AdapterType))
	c.enum(joinKey(path, "adapter_type"), string(t.AdapterType), t.AdapterType.members())
	c.required(joinKey(path, "system_prompt"), t.SystemPrompt)
	validateTools(c, joinKey(path, "agent_tools"), t.AgentTools)
	validateTools(c, joinKey(path, "user_tools"), t.UserTools)
	for i, a := range t.InitializationActions {
		p := joinIndex(joinKey(path, "initialization_actions"), i)
		c.required(joinKey(p, "env_type"), string(a.EnvType))
		c.enum(joinKey(p, "env_type"), string(a.EnvType), a.EnvType.members())
		c.required(joinKey(p, "tool_name"), a.ToolName)
		c.jsonObject(joinKey(p, "arguments"), a.Arguments)
	}
	if t.InitialState != nil {
		t.InitialState.validate(c, joinKey(path, "initial_state"))
	}
	if u := t.UserSimulator; u != nil {
		p := joinKey(path, "user_simulator")
		c.enum(joinKey(p, "mode"), string(u.Mode), u.Mode.members())
		for i, line := range u.ScriptedFlow {
			c.required(joinKey(joinIndex(joinKey(p, "scripted_flow"), i), "message"), line.Message)
		}
	}
	if s := t.Search; s != nil {
		p := joinKey(path, "search")
		// A key never travels in a trial spec (ARCHITECTURE.md, "Contracts"):
		// older dumps carry api_key as null, which decodes to absent.
		if s.APIKey != nil && *s.APIKey != "" {
			c.failf(joinKey(p, "api_key"), "a secret never travels in the trial spec; only null is accepted")
		}
		if s.Port != nil && (*s.Port < 1 || *s.Port > 65535) {
			c.failf(joinKey(p, "port"), "%d is outside [1, 65535]", *s.Port)
		}
	}
	t.validateEnvironment(c, path)
	if t.Grading != nil {
		t.Grading.validate(c, joinKey(path, "grading"))
		t.validatePythonChecksFile(c, joinKey(path, "grading"))
		if j := t.Grading.LLMJudge; j != nil {
			t.validateJudgeTools(c, joinKey(joinKey(joinKey(path, "grading"), "llm_judge"), "tools"), j.Tools)
		}
	}
}

// validatePythonChecksFile refuses a Python custom-check suite whose file the task
// does not ship: the runner reads it from the unpacked tool_artifacts, and a missing
// one would only fail the grade after the agent spent its budget.
func (t *TaskDescription) validatePythonChecksFile(c *checker, gradingPath string) {
	cc := t.Grading.CustomChecks
	if cc == nil || cc.File == "" {
		return
	}
	if _, ok := t.ToolArtifacts[cc.File]; !ok {
		c.failf(joinKey(joinKey(gradingPath, "custom_checks"), "file"), "%q is not among the task's tool_artifacts", cc.File)
	}
}

func validateTools(c *checker, path string, tools []ToolSchema) {
	first := map[string]int{}
	for i, tool := range tools {
		p := joinIndex(path, i)
		c.required(joinKey(p, "name"), tool.Name)
		if tool.Name != "" {
			if j, dup := first[tool.Name]; dup {
				c.failf(joinKey(p, "name"), "duplicate tool name %q (also at index %d)", tool.Name, j)
			} else {
				first[tool.Name] = i
			}
		}
		c.jsonObject(joinKey(p, "parameters"), tool.Parameters)
		c.enum(joinKey(p, "category"), string(tool.Category), tool.Category.members())
		if !(tool.TimeoutS > 0) {
			c.failf(joinKey(p, "timeout_s"), "%v must be > 0", tool.TimeoutS)
		}
		if src := tool.Source; src != nil {
			c.enum(joinKey(p, "source.invocation_style"), string(src.InvocationStyle), src.InvocationStyle.members())
		}
	}
}

func (st *InitialState) validate(c *checker, path string) {
	for _, name := range sortedKeys(st.Tables) {
		p := joinKey(joinKey(path, "tables"), name)
		raw := bytes.TrimSpace(st.Tables[name])
		if k := rawKind(raw); k != "array" {
			c.failf(p, "expected an array of objects, got %s", k)
			continue
		}
		var rows []json.RawMessage
		if err := json.Unmarshal(raw, &rows); err != nil {
			c.failf(p, "%v", err)
			continue
		}
		for i, row := range rows {
			if k := rawKind(row); k != "object" {
				c.failf(joinIndex(p, i), "expected object, got %s", k)
				break
			}
		}
	}
	for i, s := range st.Schemas {
		c.required(joinKey(joinIndex(joinKey(path, "schemas"), i), "table_name"), s.TableName)
	}
	for i, u := range st.UnstableFields {
		p := joinIndex(joinKey(path, "unstable_fields"), i)
		c.required(joinKey(p, "table_name"), u.TableName)
		c.required(joinKey(p, "field_name"), u.FieldName)
		c.enum(joinKey(p, "reason"), string(u.Reason), u.Reason.members())
	}
}
