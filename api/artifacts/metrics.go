package artifacts

import (
	"sort"

	"tolokaforge.io/operator/api/task"
)

// Metrics is the document of metrics.yaml: the host writes it for every
// attempt, and the report reads latency and spend back from it with this
// same type, so a key renamed here is renamed for both.
type Metrics struct {
	TrialID           string         `json:"trial_id"`
	TaskID            string         `json:"task_id"`
	TrialIndex        int            `json:"trial_index"`
	Attempt           int            `json:"attempt"`
	Outcome           string         `json:"outcome"`
	TerminationReason string         `json:"termination_reason"`
	Turns             int            `json:"turns"`
	Messages          int            `json:"messages"`
	ToolCalls         int            `json:"tool_calls"`
	Latency           metricsLatency `json:"latency"`
	Tokens            metricsTokens  `json:"tokens"`
	ToolUsage         []toolUsage    `json:"tool_usage"`
}

// metricsLatency is where an attempt's wall clock went, in seconds.
type metricsLatency struct {
	TotalS        float64 `json:"total_s"`
	RegistrationS float64 `json:"registration_s"`
	AgentLLMS     float64 `json:"agent_llm_s"`
	UserLLMS      float64 `json:"user_llm_s"`
	ToolsS        float64 `json:"tools_s"`
	GradingS      float64 `json:"grading_s"`
	// AgentLLMPerTurnS is the mean agent call latency.
	AgentLLMPerTurnS float64 `json:"agent_llm_per_turn_s"`
}

// metricsTokens is an attempt's spend per actor and in total.
type metricsTokens struct {
	Agent         Usage   `json:"agent"`
	UserSimulator Usage   `json:"user_simulator"`
	Judge         Usage   `json:"judge"`
	TotalTokens   int64   `json:"total_tokens"`
	TotalCostUSD  float64 `json:"total_cost_usd"`
}

// toolUsage is one tool's line of metrics.yaml; it keeps Tolokaforge's metrics.yaml keys (the code's, not
// OUTPUT_FORMAT.md's tool/count/success/fail).
type toolUsage struct {
	ToolName       string  `json:"tool_name"`
	CallCount      int     `json:"call_count"`
	SuccessCount   int     `json:"success_count"`
	ErrorCount     int     `json:"error_count"`
	TotalDurationS float64 `json:"total_duration_s"`
}

func metricsDoc(a *Attempt) Metrics {
	m := Metrics{
		TrialID: a.TrialID, TaskID: a.TaskID, TrialIndex: a.TrialIndex, Attempt: a.AttemptNumber,
		Outcome: a.Outcome, TerminationReason: a.TerminationReason,
		Turns: a.Turns, Messages: len(a.Messages), ToolCalls: len(a.ToolCalls),
		Latency: metricsLatency{
			TotalS:        a.EndTime.Sub(a.StartTime).Seconds(),
			RegistrationS: a.Timings.Registration.Seconds(),
			AgentLLMS:     a.Timings.AgentLLM.Seconds(),
			UserLLMS:      a.Timings.UserLLM.Seconds(),
			ToolsS:        a.Timings.Tools.Seconds(),
			GradingS:      a.Timings.Grading.Seconds(),
		},
		Tokens: metricsTokens{Agent: a.AgentUsage, UserSimulator: a.UserUsage, Judge: a.JudgeUsage},
	}
	if a.Turns > 0 {
		m.Latency.AgentLLMPerTurnS = a.Timings.AgentLLM.Seconds() / float64(a.Turns)
	}
	for _, u := range []Usage{a.AgentUsage, a.UserUsage, a.JudgeUsage} {
		m.Tokens.TotalTokens += u.PromptTokens + u.CompletionTokens
		m.Tokens.TotalCostUSD += u.CostUSD
	}
	m.ToolUsage = aggregateToolUsage(a.ToolCalls)
	return m
}

// aggregateToolUsage aggregates the record per tool name, sorted by name.
func aggregateToolUsage(calls []task.RecordedToolCall) []toolUsage {
	by := map[string]*toolUsage{}
	for _, c := range calls {
		u := by[c.ToolName]
		if u == nil {
			u = &toolUsage{ToolName: c.ToolName}
			by[c.ToolName] = u
		}
		u.CallCount++
		if c.Status == task.ToolCallSuccess {
			u.SuccessCount++
		} else {
			u.ErrorCount++
		}
		u.TotalDurationS += c.LatencySeconds
	}
	out := make([]toolUsage, 0, len(by))
	for _, u := range by {
		out = append(out, *u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ToolName < out[j].ToolName })
	return out
}
