package controllers

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/host"
)

func TestAddUsage(t *testing.T) {
	if got := addUsage(nil, &host.AttemptResult{}); got != nil {
		t.Errorf("zero spend made a usage block: %+v", got)
	}
	u := addUsage(nil, &host.AttemptResult{
		AgentUsage: host.Usage{Calls: 1, PromptTokens: 10, CompletionTokens: 5, ReasoningTokens: 2, CostUSD: 0.1},
		JudgeUsage: host.Usage{Calls: 1, PromptTokens: 7, CompletionTokens: 3, CostUSD: 0.02},
	})
	u = addUsage(u, &host.AttemptResult{UserUsage: host.Usage{Calls: 2, PromptTokens: 4, CompletionTokens: 1}})
	want := &evalv1.Usage{
		Agent:         evalv1.TokenUsage{Calls: 1, PromptTokens: 10, CompletionTokens: 5, ReasoningTokens: 2, CostUSD: 0.1},
		UserSimulator: evalv1.TokenUsage{Calls: 2, PromptTokens: 4, CompletionTokens: 1},
		Judge:         evalv1.TokenUsage{Calls: 1, PromptTokens: 7, CompletionTokens: 3, CostUSD: 0.02},
		TotalTokens:   30, TotalCostUSD: 0.12,
	}
	if diff := cmp.Diff(want, u, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-12 })); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
}
