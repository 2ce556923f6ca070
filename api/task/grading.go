package task

import "encoding/json"

// GradingConfig is TaskDescription.grading (shared/spec/grading-config.md).
type GradingConfig struct {
	CombineMethod   CombineMethod      `json:"combine_method,omitempty"` // default weighted
	Weights         map[string]float64 `json:"weights"`                  // default {}; keys are component names
	PassThreshold   *float64           `json:"pass_threshold,omitempty"` // default 1.0
	GradingMethod   gradingMethod      `json:"grading_method,omitempty"` // default components
	StateChecks     *StateChecks       `json:"state_checks,omitempty"`
	TranscriptRules *TranscriptRules   `json:"transcript_rules,omitempty"`
	TraceChecks     *TraceChecks       `json:"trace_checks,omitempty"`
	LLMJudge        *LLMJudge          `json:"llm_judge,omitempty"`
	CustomChecks    *CustomChecks      `json:"custom_checks,omitempty"`
	TestExecution   *TestExecution     `json:"test_execution,omitempty"`
}

// CombineMethod is a closed set: weighted | all | any.
type CombineMethod string

const (
	CombineWeighted CombineMethod = "weighted"
	CombineAll      CombineMethod = "all"
	CombineAny      CombineMethod = "any"
)

// gradingMethod is a closed set: components | test_execution.
type gradingMethod string

const (
	gradingComponents    gradingMethod = "components"
	GradingTestExecution gradingMethod = "test_execution"
)

// Component names: the keys of GradingConfig.Weights and of GradeComponents.
const (
	ComponentStateChecks     = "state_checks"
	ComponentTranscriptRules = "transcript_rules"
	ComponentTraceChecks     = "trace_checks"
	ComponentLLMJudge        = "llm_judge"
	ComponentCustomChecks    = "custom_checks"
)

// StateChecks grades the trial's end state.
type StateChecks struct {
	HashEnabled         bool            `json:"hash_enabled,omitempty"`
	GoldenActions       []GoldenAction  `json:"golden_actions,omitzero"` // nil: absent; empty: declared (the golden state is the initial state)
	ExpectedHash        *string         `json:"expected_hash,omitempty"`
	HashWeight          *float64        `json:"hash_weight,omitempty"`
	JSONPaths           []JSONPathCheck `json:"jsonpaths,omitempty"`
	DBProbes            []DBProbe       `json:"db_probes,omitempty"`
	IDFields            []string        `json:"id_fields,omitempty"`
	NumericStringFields []string        `json:"numeric_string_fields,omitempty"`
	RelaxedValidation   bool            `json:"relaxed_validation,omitempty"`
}

// GoldenAction is one step of the reference solution, authored unprefixed.
type GoldenAction struct {
	ToolName  string          `json:"tool_name"`
	Arguments json.RawMessage `json:"arguments,omitempty"` // JSON object
}

// JSONPathCheck is one RFC 9535 assertion over {db: <stable tables>}. Exactly one
// operator is set; a RawMessage operand keeps the author's number literal.
type JSONPathCheck struct {
	Path        string          `json:"path,omitempty"`
	PathGlob    string          `json:"path_glob,omitempty"`
	Description string          `json:"description,omitempty"`
	Equals      json.RawMessage `json:"equals,omitempty"`
	EqualsCI    *string         `json:"equals_ci,omitempty"`
	NotEquals   json.RawMessage `json:"not_equals,omitempty"`
	Contains    json.RawMessage `json:"contains,omitempty"`
	ContainsCI  *string         `json:"contains_ci,omitempty"`
	Matches     *string         `json:"matches,omitempty"` // RE2
	Exists      *bool           `json:"exists,omitempty"`
	Absent      *bool           `json:"absent,omitempty"`
	GT          json.RawMessage `json:"gt,omitempty"`
	GTE         json.RawMessage `json:"gte,omitempty"`
	LT          json.RawMessage `json:"lt,omitempty"`
	LTE         json.RawMessage `json:"lte,omitempty"`
	Count       *int            `json:"count,omitempty"`
}

// DBProbe is a named read-only query evaluated by the DB service.
type DBProbe struct {
	ID          string      `json:"id"`
	Query       string      `json:"query"` // JSONPath over {db: tables}
	Expect      ProbeExpect `json:"expect"`
	Description string      `json:"description,omitempty"`
}

// ProbeExpect holds exactly one expectation.
type ProbeExpect struct {
	Count  *int            `json:"count,omitempty"`
	Equals json.RawMessage `json:"equals,omitempty"` // JSON array of the expected results
	Exists *bool           `json:"exists,omitempty"`
	Absent *bool           `json:"absent,omitempty"`
}

// TranscriptRules are checks over the trial's timeline; each list item is one rule.
type TranscriptRules struct {
	MustContain       []string          `json:"must_contain,omitempty"`
	DisallowRegex     []string          `json:"disallow_regex,omitempty"`
	MaxTurns          *int              `json:"max_turns,omitempty"`
	MinAssistantTurns *int              `json:"min_assistant_turns,omitempty"`
	RequiredActions   []RequiredAction  `json:"required_actions,omitempty"`
	CommunicateInfo   []CommunicateInfo `json:"communicate_info,omitempty"`
}

// RequiredAction asks for a successful tool call by an actor.
type RequiredAction struct {
	ActionID  string          `json:"action_id"`
	Requestor Requestor       `json:"requestor,omitempty"` // default assistant
	ToolName  string          `json:"tool_name"`
	Arguments json.RawMessage `json:"arguments,omitempty"` // JSON object
	// CompareArgs: nil = every given argument; empty = name only; list = those keys.
	CompareArgs *[]string `json:"compare_args,omitempty"`
}

// Requestor is a closed set: assistant | user.
type Requestor string

const (
	RequestorAssistant Requestor = "assistant"
	RequestorUser      Requestor = "user"
)

// CommunicateInfo must appear (case-insensitive) in an assistant message.
type CommunicateInfo struct {
	Info     string `json:"info"`
	Required *bool  `json:"required,omitempty"` // default true
}

// TraceChecks are temporal constraints over the timeline.
type TraceChecks struct {
	Constraints  []TraceConstraint  `json:"constraints,omitempty"`
	Alternatives []traceAlternative `json:"alternatives,omitempty"`
}

// traceAlternative is one route; the trial is scored on its best route.
type traceAlternative struct {
	ID          string            `json:"id"`
	Constraints []TraceConstraint `json:"constraints"`
}

// TraceConstraint is one constraint of one of the ten kinds.
type TraceConstraint struct {
	ID        string           `json:"id,omitempty"` // required except inside require
	Kind      TraceKind        `json:"kind"`
	Severity  TraceSeverity    `json:"severity,omitempty"` // default scored
	Weight    *float64         `json:"weight,omitempty"`   // default 1
	Message   string           `json:"message,omitempty"`
	Match     *Selector        `json:"match,omitempty"`
	Min       *int             `json:"min,omitempty"`
	Max       *int             `json:"max,omitempty"`
	First     *Selector        `json:"first,omitempty"`
	Then      *Selector        `json:"then,omitempty"`
	Trigger   *Selector        `json:"trigger,omitempty"`
	Response  *Selector        `json:"response,omitempty"`
	Within    *int             `json:"within,omitempty"`
	Next      *Selector        `json:"next,omitempty"`
	Sequence  []Selector       `json:"sequence,omitempty"`
	Scope     *Selector        `json:"scope,omitempty"`
	After     *Selector        `json:"after,omitempty"`
	Before    *Selector        `json:"before,omitempty"`
	By        []string         `json:"by,omitempty"`
	Bind      *traceBinding    `json:"bind,omitempty"`
	Require   *TraceConstraint `json:"require,omitempty"`
	OnUnbound onUnbound        `json:"on_unbound,omitempty"` // default fail
}

// TraceKind is a closed set of the ten constraint kinds.
type TraceKind string

const (
	TraceOccurs             TraceKind = "occurs"
	TraceAbsent             TraceKind = "absent"
	TracePrecedes           TraceKind = "precedes"
	TraceResponds           TraceKind = "responds"
	TraceImmediatelyFollows TraceKind = "immediately_follows"
	TraceOrder              TraceKind = "order"
	TraceFirst              TraceKind = "first"
	TraceLast               TraceKind = "last"
	TraceBetween            TraceKind = "between"
	TraceUnique             TraceKind = "unique"
)

// TraceSeverity is a closed set: scored | gate.
type TraceSeverity string

const (
	SeverityScored TraceSeverity = "scored"
	SeverityGate   TraceSeverity = "gate"
)

// onUnbound is a closed set: fail | pass | undecided.
type onUnbound string

const (
	onUnboundFail      onUnbound = "fail"
	OnUnboundPass      onUnbound = "pass"
	OnUnboundUndecided onUnbound = "undecided"
)

// Selector matches timeline events; every key given must match.
type Selector struct {
	Event          EventKind                  `json:"event,omitempty"`
	Role           string                     `json:"role,omitempty"`
	Executor       string                     `json:"executor,omitempty"`
	Tool           string                     `json:"tool,omitempty"`
	Args           map[string]json.RawMessage `json:"args,omitempty"`
	Status         string                     `json:"status,omitempty"`
	ContentMatches string                     `json:"content_matches,omitempty"` // RE2
	Result         map[string]json.RawMessage `json:"result,omitempty"`
}

// EventKind is a closed set: message | tool_call.
type EventKind string

const (
	EventMessage  EventKind = "message"
	EventToolCall EventKind = "tool_call"
)

// traceBinding binds a variable from the events a selector matches.
type traceBinding struct {
	Var   string   `json:"var"`
	From  Selector `json:"from"`
	Value string   `json:"value"` // "result.<path>" | "args.<key>"
}

// LLMJudge configures the rubric judge the runner runs.
type LLMJudge struct {
	ModelRef                 string   `json:"model_ref"`
	Rubric                   Rubric   `json:"rubric"`
	IncludeAgentSystemPrompt *bool    `json:"include_agent_system_prompt,omitempty"` // default true
	Tools                    []string `json:"tools,omitempty"`
	MaxCalls                 *int     `json:"max_calls,omitempty"` // default 8
}

// Rubric is the judge's instructions and criteria.
type Rubric struct {
	Instructions string      `json:"instructions,omitempty"`
	Criteria     []Criterion `json:"criteria"`
}

// Criterion is one rubric line.
type Criterion struct {
	ID          string        `json:"id"`
	Description string        `json:"description"`
	Kind        CriterionKind `json:"kind,omitempty"` // default binary
	Bar         *float64      `json:"bar,omitempty"`
	Weight      *float64      `json:"weight,omitempty"` // default 1
}

// CriterionKind is a closed set: binary | graded.
type CriterionKind string

const (
	CriterionBinary CriterionKind = "binary"
	CriterionGraded CriterionKind = "graded"
)

// CustomChecks are CEL expressions over the trial and, from a Tolokaforge
// pack, a Python suite written against upstream's checks_interface.
type CustomChecks struct {
	Enabled     bool          `json:"enabled,omitempty"`
	FailOnError *bool         `json:"fail_on_error,omitempty"` // default true
	Checks      []CustomCheck `json:"checks,omitempty"`

	// File is the Python suite (upstream's checks.py), a path among the
	// task's tool_artifacts; empty for CEL-only checks.
	File string `json:"file,omitempty"`
	// RelativeImports are folders added to the suite's import path, each
	// relative to File's folder inside tool_artifacts (upstream's "../..").
	RelativeImports []string `json:"relative_imports,omitempty"`
	// TimeoutSeconds bounds the whole Python suite [30].
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty"`
	// InterfaceVersion is the checks_interface version the suite declares ["1.0"].
	InterfaceVersion string `json:"interface_version,omitempty"`
}

// CustomCheck is one CEL check.
type CustomCheck struct {
	Name        string   `json:"name"`
	Expr        string   `json:"expr"`
	When        string   `json:"when,omitempty"`
	Weight      *float64 `json:"weight,omitempty"` // default 1
	Description string   `json:"description,omitempty"`
}

// TestExecution runs a verifier command (grading_method: test_execution).
type TestExecution struct {
	Command    []string `json:"command"`
	RewardFile string   `json:"reward_file,omitempty"`
	TimeoutS   float64  `json:"timeout_s,omitempty"`
}
