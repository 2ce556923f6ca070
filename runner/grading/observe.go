package grading

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"tolokaforge.io/operator/api/runnerpb"
)

// TracerName is the instrumentation scope of the grading spans.
const TracerName = "tolokaforge.io/operator/runner/grading"

// Grading units: the evaluators' names (hash, jsonpath, db_probes,
// transcript_rules, trace_checks, llm_judge, custom_checks), the golden
// replay (inside hash's time) and the two ways a grade by tests runs. The
// set is closed: Observer labels and span names never carry task data.
const (
	UnitGoldenReplay     = "golden_replay"
	UnitTestExecution    = "test_execution"    // the verifier in the runner's sandbox
	UnitEnvironmentTests = "environment_tests" // the verifier in the task's environment
)

// Units lists every grading unit name, in the order grading runs them.
func Units() []string {
	var out []string
	for _, ev := range registry() {
		out = append(out, ev.Name())
		if ev.Name() == evalHash {
			out = append(out, UnitGoldenReplay)
		}
	}
	return append(out, UnitTestExecution, UnitEnvironmentTests)
}

// Verifier outcomes: how a test_execution verifier run ended.
const (
	VerifierPassed  = "passed"  // a score at or above the pass threshold
	VerifierFailed  = "failed"  // a score below it
	VerifierTimeout = "timeout" // killed at test_execution.timeout_s
	VerifierError   = "error"   // no verdict: it could not start, or left no valid reward
)

// SpanPrefix starts every grading unit's span name ("grading llm_judge").
const SpanPrefix = "grading "

// Span attributes: the grading unit, and whether it evaluated anything
// (false: the task configures nothing it scores).
const (
	AttrUnit = attribute.Key("tolokaforge.grading.unit")
	AttrRan  = attribute.Key("tolokaforge.grading.evaluated")
)

// Observer learns how grading went; an Env that implements it is told about
// every unit it ran and every verifier run (the runner counts them).
type Observer interface {
	// GradingUnit reports one unit's wall time; err is what stopped it.
	GradingUnit(unit string, took time.Duration, err error)
	// VerifierRan reports a test_execution verifier's outcome.
	VerifierRan(outcome string)
}

// startUnit opens unit's span under ctx's span, with ctx's span's tracer
// provider (the gRPC server span's when the runner traces, a no-op
// otherwise), and returns the function that ends it. Ending it with ran
// reports the unit's time to env's observer: an evaluator with nothing
// configured to score leaves its span (it was considered) but no time, so
// the series describe the components trials use.
func startUnit(ctx context.Context, env Env, unit string) (context.Context, func(ran bool, err error)) {
	start := time.Now()
	ctx, span := trace.SpanFromContext(ctx).TracerProvider().Tracer(TracerName).Start(ctx, SpanPrefix+unit)
	return ctx, func(ran bool, err error) {
		if span.IsRecording() {
			span.SetAttributes(AttrUnit.String(unit), AttrRan.Bool(ran || err != nil))
			if err != nil {
				span.SetStatus(codes.Error, err.Error())
			}
		}
		span.End()
		if o, ok := env.(Observer); ok && (ran || err != nil) {
			o.GradingUnit(unit, time.Since(start), err)
		}
	}
}

// verifierRan tells env's observer how a verifier that ran ended.
func verifierRan(env Env, outcome string) {
	if o, ok := env.(Observer); ok {
		o.VerifierRan(outcome)
	}
}

// verifierOutcome is a verifier run's outcome from what it produced: a
// grade, or the error that left it without one.
func verifierOutcome(grade *runnerpb.Grade, err error) string {
	var te *verifierTimeoutError
	switch {
	case errors.As(err, &te):
		return VerifierTimeout
	case err != nil || grade == nil:
		return VerifierError
	case grade.GetBinaryPass():
		return VerifierPassed
	default:
		return VerifierFailed
	}
}

// verifierTimeoutError is a verifier killed at its timeout; its message is
// the RPC's, the type tells the outcome apart from other failures.
type verifierTimeoutError struct{ msg string }

func (e *verifierTimeoutError) Error() string { return e.msg }
