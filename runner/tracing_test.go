package runner_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"tolokaforge.io/operator/api/telemetry"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/grpc/metadata"

	"tolokaforge.io/operator/api/llm"
	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner"
	"tolokaforge.io/operator/runner/grading"
	"tolokaforge.io/operator/runner/grading/judge"
	"tolokaforge.io/operator/test/fakellm"
)

// TestTracedRunnerJoinsTheCallersTrace: a traced runner's GradeTrial span
// is the child of the span whose context the call's metadata carries, the
// judge's model call is under GradeTrial's llm_judge grading span with its tokens and
// retry, and the runner's series count the judge's tries.
func TestTracedRunnerJoinsTheCallersTrace(t *testing.T) {
	const key = "sk-runner-judge"
	llmSrv, err := fakellm.New(fakellm.Config{APIKey: key})
	if err != nil {
		t.Fatal(err)
	}
	if err := llmSrv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = llmSrv.Close() })
	secrets := t.TempDir()
	if err := os.WriteFile(filepath.Join(secrets, "judge-api-key"), []byte(key), 0o400); err != nil {
		t.Fatal(err)
	}
	g := grading.New(grading.WithSecretsDir(secrets), grading.WithJudgeModels(judge.LLMModels(llm.Options{
		Retry: &llm.RetryPolicy{MaxRetries: 1, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond},
	})))
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	h := startRunner(t, nil, withGrader(g), func(c *runner.Config) { c.TracerProvider = tp })
	// startRunner waited on grpc.health.v1 probes, as a kubelet does: untraced.
	for _, s := range exp.GetSpans() {
		if strings.HasPrefix(s.Name, "grpc.health.v1.") {
			t.Fatalf("a health probe was traced: %s", s.Name)
		}
	}

	// A model name of this test's own: the judge's series are process-wide.
	spec := strings.ReplaceAll(judgeSpec(t, "tr", llmSrv.URL(), "judge-api-key"), `"judge-m"`, `"judge-traced"`)
	if r := h.registerRaw(t, &runnerpb.RegisterTrialRequest{TrialId: "tr", TrialSpecJson: spec, EngineProtocolVersion: task.EngineProtocolVersion}); !r.GetSuccess() {
		t.Fatalf("register: %s", r.GetError())
	}
	if err := llmSrv.Enqueue("judge-traced",
		fakellm.Reply{Status: 429, ErrorMessage: "slow down"},
		fakellm.Reply{Content: `{"criteria":[{"id":"greets","met":true,"score":1,"justification":"says hello"}]}`,
			Usage: fakellm.Usage{PromptTokens: 500, CompletionTokens: 50}},
	); err != nil {
		t.Fatal(err)
	}
	exp.Reset()
	ctx, host := tp.Tracer("test").Start(ctxT(t), "host grade")
	md := metadata.MD{}
	propagation.TraceContext{}.Inject(ctx, telemetry.MetadataCarrier(md))
	resp, err := h.c.GradeTrial(metadata.NewOutgoingContext(ctx, md), &runnerpb.GradeTrialRequest{TrialId: "tr", TerminationReason: "agent_done",
		LlmMessagesJson: `[{"role":"system","content":"be helpful"},{"role":"user","content":"hi"},{"role":"assistant","content":"Hello!"}]`})
	host.End()
	if err != nil || !resp.GetSuccess() {
		t.Fatalf("grade: %v %s", err, resp.GetError())
	}

	byName := map[string]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		byName[s.Name] = s
	}
	server, ok := byName[runnerpb.RunnerService_ServiceDesc.ServiceName+"/GradeTrial"]
	if !ok {
		t.Fatalf("no GradeTrial server span among %d spans", len(exp.GetSpans()))
	}
	if server.Parent.SpanID() != host.SpanContext().SpanID() || server.SpanContext.TraceID() != host.SpanContext().TraceID() {
		t.Errorf("GradeTrial's span is not the child of the caller's")
	}
	chat, ok := byName["chat judge-traced"]
	if !ok {
		t.Fatal("no span of the judge's model call")
	}
	judgeUnit := byName[grading.SpanPrefix+"llm_judge"]
	if chat.Parent.SpanID() != judgeUnit.SpanContext.SpanID() || judgeUnit.Parent.SpanID() != server.SpanContext.SpanID() {
		t.Errorf("the judge's model call is not under the llm_judge grading span under GradeTrial's")
	}
	attrs := map[string]int64{}
	for _, kv := range chat.Attributes {
		attrs[string(kv.Key)] = kv.Value.AsInt64()
	}
	if attrs[string(llm.AttrInputTokens)] != 500 || attrs[string(llm.AttrOutputTokens)] != 50 || attrs[string(llm.AttrRetries)] != 1 {
		t.Errorf("chat span attributes %v", chat.Attributes)
	}

	_, fams := scrapeRunner(t, h.srv.MetricsHandler(), "")
	judgeSeries := func(extra ...string) map[string]string {
		l := map[string]string{llm.LabelModel: "judge-traced", llm.LabelServer: llm.ServerAddress(llmSrv.URL()), llm.LabelRole: "judge"}
		for i := 0; i+1 < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		return l
	}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"tolokaforge_llm_requests_total", judgeSeries(llm.LabelOutcome, llm.OutcomeOK), 1},
		{"tolokaforge_llm_requests_total", judgeSeries(llm.LabelOutcome, llm.Outcome429), 1},
		{"tolokaforge_llm_retries_total", judgeSeries(), 1},
		{"gen_ai_client_token_usage_total", judgeSeries(llm.LabelTokenType, llm.TokenInput), 500},
		{"tolokaforge_llm_cost_usd_total", judgeSeries(), 500*2/1e6 + 50*8/1e6},
	} {
		if got := metricValue(fams, tc.name, tc.labels); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
}
