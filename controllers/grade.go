package controllers

import (
	"encoding/json"
	"math"

	"tolokaforge.io/operator/api/runnerpb"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/host"
)

// maxReasonsLen bounds the grade's reasons in status; the full text is in
// the attempt's grade.yaml artifact.
const maxReasonsLen = 4096

// GradeSummary turns the runner's grade into status. A component the runner
// did not evaluate (-1 on the wire, or trace_checks absent) stays absent
// rather than becoming 0, which would read as "evaluated and failed".
func GradeSummary(g *runnerpb.Grade, attempt int32) *evalv1.GradeSummary {
	if g == nil {
		return nil
	}
	s := &evalv1.GradeSummary{
		Score:       finite(g.GetScore()),
		BinaryPass:  g.GetBinaryPass(),
		Reasons:     truncate(g.GetReasons(), maxReasonsLen),
		DiffSummary: DiffSummary(g.GetStateDiffJson()),
		Attempt:     attempt,
	}
	switch g.GetJudgeStatus() {
	case runnerpb.JudgeStatus_JUDGE_STATUS_COMPLETED:
		s.JudgeStatus = evalv1.JudgeCompleted
	case runnerpb.JudgeStatus_JUDGE_STATUS_ERRORED:
		s.JudgeStatus = evalv1.JudgeErrored
	}
	if c := g.GetComponents(); c != nil {
		s.Components = evalv1.GradeComponents{
			StateChecks:     evaluated(c.GetStateChecks()),
			TranscriptRules: evaluated(c.GetTranscriptRules()),
			LLMJudge:        evaluated(c.GetLlmJudge()),
			CustomChecks:    evaluated(c.GetCustomChecks()),
		}
		if c.TraceChecks != nil {
			s.Components.TraceChecks = evaluated(*c.TraceChecks)
		}
	}
	return s
}

// evaluated maps the wire's "not evaluated" (any negative) to absent.
func evaluated(v float64) *float64 {
	if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// finite keeps a NaN score out of status, where JSON cannot carry it.
func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// DiffSummary is the `summary` of the runner's state_diff_json, or "" when
// there is no diff or it is not the documented object.
func DiffSummary(stateDiffJSON string) string {
	if stateDiffJSON == "" {
		return ""
	}
	var d struct {
		Summary string `json:"summary"`
	}
	if err := json.Unmarshal([]byte(stateDiffJSON), &d); err != nil {
		return ""
	}
	return truncate(d.Summary, maxReasonsLen)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Cut on a rune boundary so status stays valid UTF-8.
	cut := n
	for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

// addUsage folds one attempt's spend into the trial's running totals.
func addUsage(u *evalv1.Usage, r *host.AttemptResult) *evalv1.Usage {
	if r == nil {
		return u
	}
	if isZeroUsage(r.AgentUsage) && isZeroUsage(r.UserUsage) && isZeroUsage(r.JudgeUsage) && u == nil {
		return nil
	}
	if u == nil {
		u = &evalv1.Usage{}
	}
	add := func(dst *evalv1.TokenUsage, src host.Usage) {
		dst.Calls += src.Calls
		dst.PromptTokens += src.PromptTokens
		dst.CompletionTokens += src.CompletionTokens
		dst.ReasoningTokens += src.ReasoningTokens
		dst.CachedTokens += src.CachedTokens
		dst.CostUSD += src.CostUSD
	}
	add(&u.Agent, r.AgentUsage)
	add(&u.UserSimulator, r.UserUsage)
	add(&u.Judge, r.JudgeUsage)
	u.TotalTokens = 0
	u.TotalCostUSD = 0
	for _, t := range []evalv1.TokenUsage{u.Agent, u.UserSimulator, u.Judge} {
		u.TotalTokens += t.PromptTokens + t.CompletionTokens
		u.TotalCostUSD += t.CostUSD
	}
	return u
}

func isZeroUsage(u host.Usage) bool { return u == host.Usage{} }
