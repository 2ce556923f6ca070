package host_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"tolokaforge.io/operator/api/artifacts"
	"tolokaforge.io/operator/api/llm"
	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/controllers/host"
	"tolokaforge.io/operator/results/local"
	"tolokaforge.io/operator/test/fakellm"
)

// spanTree indexes finished spans by id and name.
type spanTree struct {
	byID   map[trace.SpanID]tracetest.SpanStub
	byName map[string][]tracetest.SpanStub
}

func treeOf(spans tracetest.SpanStubs) spanTree {
	t := spanTree{byID: map[trace.SpanID]tracetest.SpanStub{}, byName: map[string][]tracetest.SpanStub{}}
	for _, s := range spans {
		t.byID[s.SpanContext.SpanID()] = s
		t.byName[s.Name] = append(t.byName[s.Name], s)
	}
	return t
}

// parentName is the name of s's parent span, "" for a root.
func (t spanTree) parentName(s tracetest.SpanStub) string {
	if !s.Parent.IsValid() {
		return ""
	}
	p, ok := t.byID[s.Parent.SpanID()]
	if !ok {
		return "<missing parent>"
	}
	return p.Name
}

func attr(s tracetest.SpanStub, k attribute.Key) attribute.Value {
	for _, kv := range s.Attributes {
		if kv.Key == k {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// TestAttemptTrace runs a traced LLM attempt against a traced runner: one
// trace, the host's spans under "attempt", the model calls under their turn
// with their tokens, and the runner's server spans under the host's call
// spans (the context crossed gRPC).
func TestAttemptTrace(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	s := startStack(t, local.StackConfig{TracerProvider: tp})
	f := fakeLLM(t, map[string][]fakellm.Reply{"traced": {
		{ToolCalls: []fakellm.ToolCall{call("c1", "calculator", `{"expression":"2+3"}`)},
			Usage: fakellm.Usage{PromptTokens: 120, CompletionTokens: 12, CachedTokens: 20, ReasoningTokens: 4}},
		{Content: "5 " + host.StopMarker, Usage: fakellm.Usage{PromptTokens: 150, CompletionTokens: 7}},
	}})
	agent, cfg := llmActor(t, f, "traced", nil)
	ac := attempt(s, specFor(s, calcTask(t), cfg), agent, nil)
	ac.TracerProvider = tp
	ac.ArtifactsDir = t.TempDir()
	exp.Reset()
	res := host.RunAttempt(ctxT(t), ac)
	if res.GradedBy != host.GradedByRunner || res.Turns != 2 {
		t.Fatalf("attempt: %s: %s", res, res.Message)
	}
	if len(res.TraceID) != 32 {
		t.Fatalf("TraceID = %q, want 32 hex digits", res.TraceID)
	}
	spans := exp.GetSpans()
	tree := treeOf(spans)
	for _, sp := range spans {
		if got := sp.SpanContext.TraceID().String(); got != res.TraceID {
			t.Errorf("span %q is in trace %s, not the attempt's %s", sp.Name, got, res.TraceID)
		}
	}
	rpc := func(m string) string { return runnerpb.RunnerService_ServiceDesc.ServiceName + "/" + m }
	for _, tc := range []struct {
		span, parent string
		count        int
	}{
		{host.SpanAttempt, "", 1},
		{host.SpanRegister, host.SpanAttempt, 1},
		{host.SpanUserTurn, host.SpanAttempt, 1},
		{host.SpanTurn, host.SpanAttempt, 2},
		{"chat traced", host.SpanTurn, 2},
		{host.SpanTool + " calculator", host.SpanTurn, 1},
		{host.SpanGrade, host.SpanAttempt, 1},
		{host.SpanCleanup, host.SpanAttempt, 1},
		{rpc("RegisterTrial"), host.SpanRegister, 1},
		{rpc("ExecuteTool"), host.SpanTool + " calculator", 1},
		{rpc("GradeTrial"), host.SpanGrade, 1},
		{rpc("CleanupTrial"), host.SpanCleanup, 1},
	} {
		got := tree.byName[tc.span]
		if len(got) != tc.count {
			t.Errorf("%d %q spans, want %d", len(got), tc.span, tc.count)
			continue
		}
		for _, sp := range got {
			if p := tree.parentName(sp); p != tc.parent {
				t.Errorf("span %q has parent %q, want %q", tc.span, p, tc.parent)
			}
		}
	}
	root := tree.byName[host.SpanAttempt][0]
	if v := attr(root, host.AttrOutcome).AsString(); v != string(res.Outcome) {
		t.Errorf("attempt outcome attribute %q, want %q", v, res.Outcome)
	}
	if v := attr(root, host.AttrTurns).AsInt64(); v != 2 {
		t.Errorf("attempt turns attribute %d, want 2", v)
	}
	turns := tree.byName[host.SpanTurn]
	if attr(turns[0], host.AttrTurn).AsInt64() != 1 || attr(turns[1], host.AttrTurn).AsInt64() != 2 {
		t.Errorf("turn numbers %v, %v; want 1, 2", attr(turns[0], host.AttrTurn), attr(turns[1], host.AttrTurn))
	}
	// The first call's tokens on its span; it sits under turn 1.
	for _, c := range tree.byName["chat traced"] {
		if tree.byID[c.Parent.SpanID()].SpanContext.SpanID() != turns[0].SpanContext.SpanID() {
			continue
		}
		for k, want := range map[attribute.Key]int64{llm.AttrInputTokens: 120, llm.AttrOutputTokens: 12, llm.AttrCachedTokens: 20, llm.AttrReasoningTokens: 4} {
			if got := attr(c, k).AsInt64(); got != want {
				t.Errorf("turn 1's chat span %s = %d, want %d", k, got, want)
			}
		}
		if got := attr(c, llm.AttrRequestModel).AsString(); got != "traced" {
			t.Errorf("chat span model %q", got)
		}
	}
	tool := tree.byName[host.SpanTool+" calculator"][0]
	if attr(tool, host.AttrToolName).AsString() != "calculator" || attr(tool, host.AttrToolCallID).AsString() == "" ||
		attr(tool, host.AttrToolStatus).AsString() != runnerpb.ExecutionStatus_EXECUTION_STATUS_SUCCESS.String() {
		t.Errorf("tool span attributes %v", tool.Attributes)
	}
	if k := tree.byName[rpc("ExecuteTool")][0].SpanKind; k != trace.SpanKindServer {
		t.Errorf("runner's ExecuteTool span kind %v, want server", k)
	}
	traj, err := os.ReadFile(filepath.Join(res.ArtifactsPath, artifacts.TrajectoryFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(traj), "trace_id: "+res.TraceID+"\n") {
		t.Errorf("trajectory.yaml lacks trace_id %s", res.TraceID)
	}
}

// TestUntracedAttemptHasNoTraceID: with no provider installed (the global
// no-op), nothing is recorded and the result names no trace.
func TestUntracedAttemptHasNoTraceID(t *testing.T) {
	s := startStack(t, local.StackConfig{})
	f := fakeLLM(t, map[string][]fakellm.Reply{"plain": {{Content: "done " + host.StopMarker}}})
	agent, cfg := llmActor(t, f, "plain", nil)
	ac := attempt(s, specFor(s, calcTask(t), cfg), agent, nil)
	ac.ArtifactsDir = t.TempDir()
	res := host.RunAttempt(ctxT(t), ac)
	if res.GradedBy != host.GradedByRunner {
		t.Fatalf("attempt: %s: %s", res, res.Message)
	}
	if res.TraceID != "" {
		t.Fatalf("TraceID = %q with tracing off", res.TraceID)
	}
	traj, err := os.ReadFile(filepath.Join(res.ArtifactsPath, artifacts.TrajectoryFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(traj), "trace_id") {
		t.Error("trajectory.yaml names a trace of an untraced attempt")
	}
}
