package task

import (
	"encoding/json"
	"strconv"
	"time"
)

// TrialSpec is the payload of RegisterTrialRequest.trial_spec_json.
type TrialSpec struct {
	TrialID            string                     `json:"trial_id"`
	RunID              string                     `json:"run_id"`
	AttemptID          string                     `json:"attempt_id"` // opaque, unique per attempt
	Task               *TaskDescription           `json:"task"`       // required
	Agent              *ModelConfig               `json:"agent"`      // required
	UserSimulatorModel *ModelConfig               `json:"user_simulator_model,omitempty"`
	Judge              *ModelConfig               `json:"judge,omitempty"`
	EnvEndpoints       *EnvEndpoints              `json:"env_endpoints,omitempty"`
	RuntimeContext     map[string]json.RawMessage `json:"runtime_context,omitempty"`
}

// trialID is the trial_id the runner sees: "<task_id>:<trialIndex>", the
// protocol's documented format.
func trialID(taskID string, trialIndex int) string {
	return taskID + ":" + strconv.Itoa(trialIndex)
}

// TrialSpecParams are what every TrialSpec is built from, whoever runs the
// attempt (the Trial controller, `trial run`, the oracle of `pack validate`,
// `regrade`'s replay).
type TrialSpecParams struct {
	Task       *TaskDescription
	TrialIndex int
	RunID      string
	AttemptID  string // opaque, unique per attempt
	Agent      *ModelConfig
	// DBServiceURL is the attempt's DB service; "" leaves env_endpoints unset
	// (a caller that starts the service later sets it then).
	DBServiceURL string
}

// NewTrialSpec is the TrialSpec of one attempt with the fields every caller
// sets; what differs between them (user simulator, judge, runtime context)
// each sets on the result, where it can be seen.
func NewTrialSpec(p TrialSpecParams) *TrialSpec {
	s := &TrialSpec{
		TrialID:   trialID(p.Task.TaskID, p.TrialIndex),
		RunID:     p.RunID,
		AttemptID: p.AttemptID,
		Task:      p.Task,
		Agent:     p.Agent,
	}
	if p.DBServiceURL != "" {
		s.EnvEndpoints = &EnvEndpoints{DBServiceURL: p.DBServiceURL}
	}
	return s
}

// ModelConfig names a model and how to reach it. A key never travels here:
// APIKeyEnv names an environment variable of the process that calls the model,
// and ExtraHeadersEnv likewise names, per header, the variable holding its
// value (header values are credentials as often as not).
//
// Keys added for reasoning models and shared rate limits (all optional, all
// additions to the runner protocol's model config): max_completion_tokens,
// reasoning_effort, extra_body, extra_headers_env, request_timeout_seconds,
// rate_limit, pricing.cached_input_usd_per_mtok.
type ModelConfig struct {
	Provider    Provider `json:"provider"`
	Model       string   `json:"model,omitempty"`
	BaseURL     string   `json:"base_url,omitempty"`
	APIKeyEnv   string   `json:"api_key_env,omitempty"`
	Temperature *float64 `json:"temperature,omitempty"` // unset: not sent
	TopP        *float64 `json:"top_p,omitempty"`
	// MaxTokens is sent as max_tokens, the legacy key older servers and
	// models want; reasoning models refuse it. Set it only for those.
	MaxTokens *int `json:"max_tokens,omitempty"`
	// MaxCompletionTokens is sent as max_completion_tokens (reasoning and
	// visible output together); both may be set for a server that reads either.
	MaxCompletionTokens *int   `json:"max_completion_tokens,omitempty"`
	Seed                *int64 `json:"seed,omitempty"`
	// ReasoningEffort is sent as reasoning_effort: none, minimal, low,
	// medium, high or xhigh.
	ReasoningEffort string `json:"reasoning_effort,omitempty"`
	// ExtraBody is a JSON object merged into the request body; it may not
	// name a key the client sets itself (ReservedBodyKeys).
	ExtraBody json.RawMessage `json:"extra_body,omitempty"`
	// ExtraHeadersEnv maps a header name to the environment variable
	// holding its value.
	ExtraHeadersEnv map[string]string `json:"extra_headers_env,omitempty"`
	// RequestTimeoutSeconds bounds one try of a call (0: the client's default).
	RequestTimeoutSeconds float64    `json:"request_timeout_seconds,omitempty"`
	RateLimit             *RateLimit `json:"rate_limit,omitempty"`
	Pricing               *Pricing   `json:"pricing,omitempty"`
}

// ReasoningEfforts are the values reasoning_effort takes.
var ReasoningEfforts = []string{"none", "minimal", "low", "medium", "high", "xhigh"}

// ReservedBodyKeys are the request keys the client writes itself, which
// extra_body may not override (stream: the client reads whole answers only).
var ReservedBodyKeys = []string{"model", "messages", "tools", "temperature", "top_p", "max_tokens",
	"max_completion_tokens", "seed", "reasoning_effort", "stream"}

// RateLimit caps the calls to one model at one base URL, shared by every
// trial of the process that calls it. Zero means no cap on that measure.
type RateLimit struct {
	RequestsPerMinute int   `json:"requests_per_minute,omitempty"`
	TokensPerMinute   int64 `json:"tokens_per_minute,omitempty"`
}

// Provider is a closed set: oracle | openai (any OpenAI-compatible endpoint).
type Provider string

const (
	ProviderOracle Provider = "oracle"
	ProviderOpenAI Provider = "openai"
)

// Pricing costs tokens in USD per million. Cached prompt tokens cost
// CachedInputUSDPerMTok when set, else the input price.
type Pricing struct {
	InputUSDPerMTok       float64  `json:"input_usd_per_mtok"`
	OutputUSDPerMTok      float64  `json:"output_usd_per_mtok"`
	CachedInputUSDPerMTok *float64 `json:"cached_input_usd_per_mtok,omitempty"`
}

// EnvEndpoints points the runner at the trial's services.
type EnvEndpoints struct {
	DBServiceURL string `json:"db_service_url,omitempty"`
	// EnvironmentURL is the host:port of the exec agent serving a terminal
	// task's environment (the pod the manager starts per attempt); required
	// when the task has an environment. Our extension of the wire (optional).
	EnvironmentURL string `json:"environment_url,omitempty"`
}

// TerminationReason is how a trial ended; the empty value means "none reported".
type TerminationReason string

const (
	TerminationNone          TerminationReason = ""
	TerminationAgentDone     TerminationReason = "agent_done"
	TerminationUserStop      TerminationReason = "user_stop"
	TerminationStuckDetected TerminationReason = "stuck_detected"
	TerminationTimeout       TerminationReason = "timeout"
	TerminationMaxTurns      TerminationReason = "max_turns"
	TerminationError         TerminationReason = "error"
	TerminationRateLimit     TerminationReason = "rate_limit"
	TerminationAPIError      TerminationReason = "api_error"
	TerminationTrialLost     TerminationReason = "trial_lost"
)

// RecordedToolCall is one entry of the runner's ordered tool-call record.
type RecordedToolCall struct {
	CallID         string          `json:"call_id"`
	Sequence       int             `json:"sequence"` // trial-wide, 0-based
	ToolName       string          `json:"tool_name"`
	Arguments      json.RawMessage `json:"arguments"` // {} when refused as invalid
	Executor       string          `json:"executor"`  // agent | user
	Status         ToolCallStatus  `json:"status"`
	Output         string          `json:"output"` // untruncated; the error text on failure
	LatencySeconds float64         `json:"latency_seconds"`
	Timestamp      time.Time       `json:"timestamp"`
}

// ToolCallStatus mirrors ExecutionStatus in the record.
type ToolCallStatus string

const (
	ToolCallSuccess          ToolCallStatus = "success"
	ToolCallError            ToolCallStatus = "error"
	ToolCallTimeout          ToolCallStatus = "timeout"
	ToolCallToolNotFound     ToolCallStatus = "tool_not_found"
	ToolCallInvalidArguments ToolCallStatus = "invalid_arguments"
)

// Executor names which actor's registry a call goes to.
const (
	ExecutorAgent = "agent"
	ExecutorUser  = "user"
)
