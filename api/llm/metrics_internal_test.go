package llm

import (
	"testing"
	"time"
)

// BenchmarkCallSeries is what one successful chat call adds to the
// client: a try counted and timed, and its usage billed.
func BenchmarkCallSeries(b *testing.B) {
	s := newSeries(NewMetrics(), "m", "api.example", "agent")
	u := Usage{Calls: 1, PromptTokens: 1000, CompletionTokens: 100, CachedTokens: 10, ReasoningTokens: 5, CostUSD: 0.01}
	b.ReportAllocs()
	for b.Loop() {
		s.try(OutcomeOK, 300*time.Millisecond)
		s.billed(u)
	}
}
