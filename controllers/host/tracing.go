package host

import (
	"context"
	"tolokaforge.io/operator/api/telemetry"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// TracerName is the instrumentation scope of the host's spans.
const TracerName = "tolokaforge.io/operator/controllers/host"

// Span names. An attempt is one trace: its root "attempt", under it
// "register", one "turn" per agent turn and "user turn" per user message
// (each holding its "chat <model>" LLM span from api/llm and an
// "execute_tool <name>" span per tool call), "grade" and "cleanup". The
// runner's server spans hang under the register, tool, grade and cleanup
// spans: their context goes to the runner in the call's metadata.
const (
	SpanAttempt  = "attempt"
	SpanRegister = "register"
	SpanTurn     = "turn"
	SpanUserTurn = "user turn"
	SpanTool     = "execute_tool"
	SpanGrade    = "grade"
	SpanCleanup  = "cleanup"
)

// Span attribute keys: the GenAI conventions' for tools, the project's for
// the rest.
const (
	AttrTrialID     = attribute.Key("tolokaforge.trial.id")
	AttrTaskID      = attribute.Key("tolokaforge.task.id")
	AttrAttempt     = attribute.Key("tolokaforge.attempt.number")
	AttrOutcome     = attribute.Key("tolokaforge.attempt.outcome")
	AttrReason      = attribute.Key("tolokaforge.attempt.reason")
	AttrTermination = attribute.Key("tolokaforge.termination_reason")
	AttrTurns       = attribute.Key("tolokaforge.turns")
	AttrTurn        = attribute.Key("tolokaforge.turn")
	AttrToolName    = attribute.Key("gen_ai.tool.name")
	AttrToolCallID  = attribute.Key("gen_ai.tool.call.id")
	AttrExecutor    = attribute.Key("tolokaforge.tool.executor")
	AttrToolStatus  = attribute.Key("tolokaforge.tool.status")
)

// propagator carries the span context to the runner: W3C trace context,
// whatever the process's global propagator is (the default one is a no-op).
var propagator = propagation.TraceContext{}

// startAttempt opens the attempt's root span: a new trace whatever ctx
// carries (a reconcile's span), so one attempt is one trace. With tracing
// off (no provider installed) the span records nothing and costs one
// context.
func (r *run) startAttempt(ctx context.Context) (context.Context, trace.Span) {
	tp := r.cfg.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	attrs := []attribute.KeyValue{AttrTrialID.String(r.trialID), AttrAttempt.Int(r.cfg.AttemptNumber)}
	if r.cfg.Spec.Task != nil {
		attrs = append(attrs, AttrTaskID.String(r.cfg.Spec.Task.TaskID))
	}
	return tp.Tracer(TracerName).Start(ctx, SpanAttempt, trace.WithNewRoot(), trace.WithAttributes(attrs...))
}

// endAttempt records how the attempt ended.
func endAttempt(span trace.Span, res *AttemptResult) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(AttrOutcome.String(string(res.Outcome)), AttrReason.String(res.Reason),
		AttrTermination.String(string(res.TerminationReason)), AttrTurns.Int(res.Turns))
	if res.Outcome == evalv1.OutcomeInfraFailed || res.Outcome == evalv1.OutcomeInvalid ||
		res.Outcome == evalv1.OutcomeGradingFailed || res.Outcome == evalv1.OutcomeProtocolSkew {
		span.SetStatus(codes.Error, res.Message)
	}
	span.End()
}

// traceID is the span's trace in hex, empty when it records nothing.
func traceID(span trace.Span) string {
	if sc := span.SpanContext(); sc.IsValid() && span.IsRecording() {
		return sc.TraceID().String()
	}
	return ""
}

// child opens a span under ctx's, with its provider; with tracing off it
// returns ctx and a nil span, so the untraced path allocates nothing.
func child(ctx context.Context, name string) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, nil
	}
	return parent.TracerProvider().Tracer(TracerName).Start(ctx, name)
}

// startTurn opens an agent turn's span (or the user's, SpanUserTurn).
func startTurn(ctx context.Context, name string, turn int) (context.Context, trace.Span) {
	ctx, span := child(ctx, name)
	if span != nil {
		span.SetAttributes(AttrTurn.Int(turn))
	}
	return ctx, span
}

// startTool opens one tool call's span, named as the GenAI conventions name
// it ("execute_tool <tool>").
func startTool(ctx context.Context, name, callID, executor string) (context.Context, trace.Span) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, nil
	}
	ctx, span := child(ctx, SpanTool+" "+name)
	span.SetAttributes(AttrToolName.String(name), AttrToolCallID.String(callID), AttrExecutor.String(executor))
	return ctx, span
}

// endTool closes a tool call's span with the runner's status.
func endTool(span trace.Span, st string, err error) {
	if span == nil {
		return
	}
	span.SetAttributes(AttrToolStatus.String(st))
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// endSpan closes a span from child (nil: untraced), marking the ending e as a
// failure unless it is one of the planned ends or none.
func endSpan(span trace.Span, e *ending) {
	if span == nil {
		return
	}
	if e != nil && e.outcome != "" && e.outcome != evalv1.OutcomePassed && e.outcome != evalv1.OutcomeFailed {
		span.SetStatus(codes.Error, e.message)
	}
	if e != nil && e.termination != "" {
		span.SetAttributes(AttrTermination.String(string(e.termination)))
	}
	span.End()
}

// outgoing is ctx with its span's context in the gRPC metadata the runner
// reads (its otelgrpc server handler makes its spans children of it).
func outgoing(ctx context.Context) context.Context {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx
	}
	md, _ := metadata.FromOutgoingContext(ctx)
	md = md.Copy()
	propagator.Inject(ctx, telemetry.MetadataCarrier(md))
	return metadata.NewOutgoingContext(ctx, md)
}
