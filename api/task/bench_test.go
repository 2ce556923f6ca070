package task

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// benchSpec is the Tau example with a table of n rows, so the figures show
// how strict decoding scales with the state a task provisions.
func benchSpec(b *testing.B, n int) []byte {
	b.Helper()
	var rows []string
	for i := range n {
		rows = append(rows, fmt.Sprintf(`{"id":"F%05d","origin":"JFK","destination":"SEA","price":%d.5,"seats":%d}`, i, 100+i, i%7))
	}
	var task map[string]any
	if err := json.Unmarshal(readTestdata(b, "tau_example.json"), &task); err != nil {
		b.Fatal(err)
	}
	task["initial_state"].(map[string]any)["tables"].(map[string]any)["flights"] = json.RawMessage("[" + strings.Join(rows, ",") + "]")
	spec, err := json.Marshal(map[string]any{"trial_id": "t:0", "task": task, "agent": map[string]any{"provider": "oracle"}})
	if err != nil {
		b.Fatal(err)
	}
	return spec
}

// BenchmarkDecodeTrialSpec reports strict decode+defaults+validation time as a
// ratio to plain json.Unmarshal of the same bytes into the same type, both
// measured in this run (the machine is shared, so absolute ns/op drift).
func BenchmarkDecodeTrialSpec(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			data := benchSpec(b, n)
			b.SetBytes(int64(len(data)))
			var strict, plain time.Duration
			for b.Loop() {
				start := time.Now()
				if _, err := DecodeTrialSpec(data); err != nil {
					b.Fatal(err)
				}
				mid := time.Now()
				var s TrialSpec
				if err := json.Unmarshal(data, &s); err != nil {
					b.Fatal(err)
				}
				strict += mid.Sub(start)
				plain += time.Since(mid)
			}
			b.ReportMetric(float64(strict)/float64(plain), "strict/unmarshal")
		})
	}
}

func BenchmarkDecodeTranscriptWire(b *testing.B) {
	var msgs []Message
	for i := range 200 {
		id := fmt.Sprintf("call_%d", i)
		msgs = append(msgs,
			Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: id, Function: FunctionCall{Name: "get", Arguments: `{"order_id":"O-001"}`}}}},
			Message{Role: RoleTool, Content: strings.Repeat("x", 200), ToolCallID: id})
	}
	data, err := EncodeTranscriptWire(msgs)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	var wire, plain time.Duration
	for b.Loop() {
		start := time.Now()
		if _, err := DecodeTranscriptWire(data); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		var m []Message
		if err := json.Unmarshal(data, &m); err != nil {
			b.Fatal(err)
		}
		wire += mid.Sub(start)
		plain += time.Since(mid)
	}
	b.ReportMetric(float64(wire)/float64(plain), "wire/unmarshal")
}
