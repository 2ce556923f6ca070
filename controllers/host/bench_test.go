package host_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/controllers/host"
	"tolokaforge.io/operator/controllers/host/agents"
	"tolokaforge.io/operator/results/local"
	"tolokaforge.io/operator/test/fakellm"
)

// benchTurns is the length of one benchmarked attempt: every turn is one
// chat-completions POST and one ExecuteTool of a builtin tool.
const benchTurns = 10

// BenchmarkHostOverheadPerTurn runs whole attempts (RegisterTrial, 10 turns,
// GradeTrial, CleanupTrial) with an instant fake LLM and the builtin
// calculator, and beside each one the raw round trips it made: the same
// RegisterTrial, the same POST bodies to the fake, the same ExecuteTool
// calls, the same GradeTrial and CleanupTrial, sent bare. Both run on the
// same servers in the same loop, so the ratio is robust to a noisy machine.
//
//	host-us/turn  wall time of RunAttempt per turn
//	raw-us/turn   wall time of the bare round trips per turn
//	host/raw      their ratio (target < 1.20)
//	host-allocs/turn, raw-allocs/turn  process-wide allocations (servers
//	              included, the same on both sides), so the difference is the host's
func BenchmarkHostOverheadPerTurn(b *testing.B) {
	s := startStack(b, local.StackConfig{})
	f, err := fakellm.New(fakellm.Config{Responder: func(r fakellm.Request) fakellm.Reply {
		// Distinct arguments per turn, or the stuck detector would end it.
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
	cfg := &task.ModelConfig{Provider: task.ProviderOpenAI, Model: "bench", BaseURL: f.URL()}
	m, err := agents.NewChatModel("agent", cfg, agents.Options{})
	if err != nil {
		b.Fatal(err)
	}
	agent := agents.NewLLMAgent(m)
	ctx := context.Background()
	rawHTTP := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	url := f.URL() + "/chat/completions"

	var hostNs, rawNs time.Duration
	var hostAllocs, rawAllocs uint64
	var ms runtime.MemStats
	mallocs := func() uint64 { runtime.ReadMemStats(&ms); return ms.Mallocs }

	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		spec := specFor(s, td, cfg)
		spec.TrialID = fmt.Sprintf("bench:%d", i)
		ac := host.AttemptConfig{Runner: s.Runner, Spec: spec, InitialUserMessage: "compute", MaxTurns: benchTurns,
			Agent: agent, AttemptNumber: 1, Log: logr.Discard()}

		a0 := mallocs()
		t0 := time.Now()
		res := host.RunAttempt(ctx, ac)
		hostNs += time.Since(t0)
		hostAllocs += mallocs() - a0
		if res.GradedBy != host.GradedByRunner || res.Turns != benchTurns || len(res.ToolCalls) != benchTurns {
			b.Fatalf("attempt %d: %s: %s", i, res, res.Message)
		}

		// The same round trips, bare.
		reqs := f.RequestsFor("bench")
		bodies := reqs[len(reqs)-benchTurns:]
		rawSpec := *spec
		rawSpec.TrialID = spec.TrialID + "-raw"
		specJSON, err := task.Encode(&rawSpec)
		if err != nil {
			b.Fatal(err)
		}
		wire, err := task.EncodeTranscriptWire(res.Transcript)
		if err != nil {
			b.Fatal(err)
		}
		a0 = mallocs()
		t0 = time.Now()
		if r, err := s.Runner.RegisterTrial(ctx, &runnerpb.RegisterTrialRequest{TrialId: rawSpec.TrialID, TrialSpecJson: string(specJSON),
			EngineProtocolVersion: task.EngineProtocolVersion}); err != nil || !r.GetSuccess() {
			b.Fatalf("raw register: %v %v", r, err)
		}
		for j, rc := range res.ToolCalls {
			resp, err := rawHTTP.Post(url, "application/json", bytes.NewReader(bodies[j].Raw))
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if r, err := s.Runner.ExecuteTool(ctx, &runnerpb.ExecuteToolRequest{TrialId: rawSpec.TrialID, ToolName: rc.ToolName,
				ArgumentsJson: string(rc.Arguments), Executor: rc.Executor, CallId: rc.CallID}); err != nil ||
				r.GetStatus() != runnerpb.ExecutionStatus_EXECUTION_STATUS_SUCCESS {
				b.Fatalf("raw execute: %v %v", r, err)
			}
		}
		if r, err := s.Runner.GradeTrial(ctx, &runnerpb.GradeTrialRequest{TrialId: rawSpec.TrialID, LlmMessagesJson: string(wire),
			TerminationReason: string(task.TerminationMaxTurns)}); err != nil || !r.GetSuccess() {
			b.Fatalf("raw grade: %v %v", r, err)
		}
		if _, err := s.Runner.CleanupTrial(ctx, &runnerpb.CleanupTrialRequest{TrialId: rawSpec.TrialID}); err != nil {
			b.Fatal(err)
		}
		rawNs += time.Since(t0)
		rawAllocs += mallocs() - a0
	}
	b.StopTimer()
	turns := float64(b.N * benchTurns)
	b.ReportMetric(float64(hostNs.Microseconds())/turns, "host-us/turn")
	b.ReportMetric(float64(rawNs.Microseconds())/turns, "raw-us/turn")
	b.ReportMetric(float64(hostNs)/float64(rawNs), "host/raw")
	b.ReportMetric(float64(hostAllocs)/turns, "host-allocs/turn")
	b.ReportMetric(float64(rawAllocs)/turns, "raw-allocs/turn")
}
