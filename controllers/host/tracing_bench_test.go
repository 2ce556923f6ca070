package host_test

import (
	"context"
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/controllers/host"
	"tolokaforge.io/operator/controllers/host/agents"
	"tolokaforge.io/operator/results/local"
	"tolokaforge.io/operator/test/fakellm"
)

// BenchmarkTracingOverheadPerAttempt runs the same 10-turn attempt (one
// chat POST and one builtin ExecuteTool per turn, GradeTrial, CleanupTrial)
// twice per iteration on the same servers: traced (an SDK provider batching
// into an in-memory exporter: every host and chat span is built, attributed
// and exported, and the trace context goes to the runner) and untraced (the
// global no-op provider). The runner is untraced on both sides, so the
// difference is the manager's. The LLM series are recorded on both sides.
//
//	off-us/attempt, on-us/attempt      wall time of RunAttempt
//	off-cpu-us/attempt, on-cpu-us/attempt  process CPU (servers included, the
//	                                   same on both sides)
//	on/off, on/off-cpu                 their ratios
//	off-allocs/attempt, on-allocs/attempt  process-wide allocations
//	spans/attempt                      spans the traced side exported
func BenchmarkTracingOverheadPerAttempt(b *testing.B) {
	s := startStack(b, local.StackConfig{})
	f, err := fakellm.New(fakellm.Config{Responder: func(r fakellm.Request) fakellm.Reply {
		return fakellm.Reply{
			ToolCalls: []fakellm.ToolCall{{Name: "calculator", Arguments: fmt.Sprintf(`{"expression":"%d+1"}`, len(r.Messages))}},
			Usage:     fakellm.Usage{PromptTokens: 100, CompletionTokens: 10},
		}
	}})
	if err != nil {
		b.Fatal(err)
	}
	if err := f.Start(""); err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	td := calcTask(b)
	cfg := &task.ModelConfig{Provider: task.ProviderOpenAI, Model: "bench-trace", BaseURL: f.URL()}
	m, err := agents.NewChatModel("agent", cfg, agents.Options{})
	if err != nil {
		b.Fatal(err)
	}
	agent := agents.NewLLMAgent(m)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	ctx := context.Background()

	var ms runtime.MemStats
	mallocs := func() uint64 { runtime.ReadMemStats(&ms); return ms.Mallocs }
	cpu := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	var wall, cpuT [2]time.Duration
	var allocs [2]uint64
	spans := 0
	run := func(i, side int) {
		spec := specFor(s, td, cfg)
		spec.TrialID = fmt.Sprintf("bench-trace:%d:%d", i, side)
		ac := host.AttemptConfig{Runner: s.Runner, Spec: spec, InitialUserMessage: "compute", MaxTurns: benchTurns,
			Agent: agent, AttemptNumber: 1, Log: logr.Discard()}
		if side == 1 {
			ac.TracerProvider = tp
		}
		a0, c0, t0 := mallocs(), cpu(), time.Now()
		res := host.RunAttempt(ctx, ac)
		wall[side] += time.Since(t0)
		cpuT[side] += cpu() - c0
		allocs[side] += mallocs() - a0
		if res.GradedBy != host.GradedByRunner || res.Turns != benchTurns || (side == 1) != (res.TraceID != "") {
			b.Fatalf("attempt %d side %d: %s: %s (trace %q)", i, side, res, res.Message, res.TraceID)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// Alternate which side goes first, so neither always runs warm.
		first := i % 2
		run(i, first)
		run(i, 1-first)
		if err := tp.ForceFlush(ctx); err != nil {
			b.Fatal(err)
		}
		spans += len(exp.GetSpans())
		exp.Reset()
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(wall[0].Microseconds())/n, "off-us/attempt")
	b.ReportMetric(float64(wall[1].Microseconds())/n, "on-us/attempt")
	b.ReportMetric(float64(wall[1])/float64(wall[0]), "on/off")
	b.ReportMetric(float64(cpuT[0].Microseconds())/n, "off-cpu-us/attempt")
	b.ReportMetric(float64(cpuT[1].Microseconds())/n, "on-cpu-us/attempt")
	b.ReportMetric(float64(cpuT[1])/float64(cpuT[0]), "on/off-cpu")
	b.ReportMetric(float64(allocs[0])/n, "off-allocs/attempt")
	b.ReportMetric(float64(allocs[1])/n, "on-allocs/attempt")
	b.ReportMetric(float64(spans)/n, "spans/attempt")
}
