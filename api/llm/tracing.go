package llm

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// TracerName is the instrumentation scope of this package's spans.
const TracerName = "tolokaforge.io/operator/api/llm"

// Span attribute keys, from the OpenTelemetry GenAI semantic conventions
// where they name one, this project's otherwise.
const (
	AttrOperation       = attribute.Key("gen_ai.operation.name")
	AttrRequestModel    = attribute.Key("gen_ai.request.model")
	AttrServerAddress   = attribute.Key("server.address")
	AttrInputTokens     = attribute.Key("gen_ai.usage.input_tokens")
	AttrOutputTokens    = attribute.Key("gen_ai.usage.output_tokens")
	AttrCachedTokens    = attribute.Key("gen_ai.usage.cache_read.input_tokens")
	AttrReasoningTokens = attribute.Key("gen_ai.usage.reasoning.output_tokens")
	AttrErrorType       = attribute.Key("error.type")
	AttrRole            = attribute.Key("tolokaforge.llm.role")
	AttrRetries         = attribute.Key("tolokaforge.llm.retries")
	AttrCostUSD         = attribute.Key("tolokaforge.llm.cost_usd")
)

// startSpan opens the call's span under ctx's span, with that span's
// provider. A call outside a traced attempt (or with tracing off) gets no
// span (nil) and costs one context lookup.
func (m *Client) startSpan(ctx context.Context) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, nil
	}
	return parent.TracerProvider().Tracer(TracerName).Start(ctx, "chat "+m.model,
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(AttrOperation.String("chat"), AttrRequestModel.String(m.model),
			AttrServerAddress.String(m.server), AttrRole.String(m.role)))
}

// endSpan records the call's spend and failure on span (nil: untraced).
func endSpan(span trace.Span, u Usage, err error) {
	if span == nil {
		return
	}
	span.SetAttributes(AttrInputTokens.Int64(u.PromptTokens), AttrOutputTokens.Int64(u.CompletionTokens),
		AttrCachedTokens.Int64(u.CachedTokens), AttrReasoningTokens.Int64(u.ReasoningTokens),
		AttrRetries.Int64(u.Retries), AttrCostUSD.Float64(u.CostUSD))
	if err != nil {
		typ := "canceled"
		var le *Error
		if errors.As(err, &le) {
			typ = string(le.Termination)
		}
		span.SetAttributes(AttrErrorType.String(typ))
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
