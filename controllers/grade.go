package controllers

import (
	"tolokaforge.io/operator/api/result"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/host"
)

// truncate bounds a message in status, conditions and events, on a rune
// boundary so it stays valid UTF-8.
var truncate = result.Truncate

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
