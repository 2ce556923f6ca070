package task

import (
	"encoding/json"
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

// ModelConfig names a model and how to reach it. A key never travels here:
// APIKeyEnv names an environment variable of the process that calls the model.
type ModelConfig struct {
	Provider    Provider `json:"provider"`
	Model       string   `json:"model,omitempty"`
	BaseURL     string   `json:"base_url,omitempty"`
	APIKeyEnv   string   `json:"api_key_env,omitempty"`
	Temperature *float64 `json:"temperature,omitempty"`
	TopP        *float64 `json:"top_p,omitempty"`
	MaxTokens   *int     `json:"max_tokens,omitempty"`
	Seed        *int64   `json:"seed,omitempty"`
	Pricing     *Pricing `json:"pricing,omitempty"`
}

// Provider is a closed set: oracle | openai (any OpenAI-compatible endpoint).
type Provider string

const (
	ProviderOracle Provider = "oracle"
	ProviderOpenAI Provider = "openai"
)

// Pricing costs tokens in USD per million.
type Pricing struct {
	InputUSDPerMTok  float64 `json:"input_usd_per_mtok"`
	OutputUSDPerMTok float64 `json:"output_usd_per_mtok"`
}

// EnvEndpoints points the runner at the trial's services.
type EnvEndpoints struct {
	DBServiceURL string `json:"db_service_url,omitempty"`
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
