package runner

import (
	"testing"
	"time"
)

// BenchmarkToolCallMetrics is what each executed tool call adds to the
// runner: one counter and one histogram child looked up and bumped.
func BenchmarkToolCallMetrics(b *testing.B) {
	m := newMetrics()
	b.ReportAllocs()
	for b.Loop() {
		m.toolCall("calculator", "agent", "success", 57*time.Microsecond)
	}
}
