package grading

import (
	"context"
)

// Evaluator names, as the ledger's manifest refers to them.
const (
	evalHash         = "hash"
	evalJSONPath     = "jsonpath"
	evalDBProbes     = "db_probes"
	evalTranscript   = "transcript_rules"
	evalTraceChecks  = "trace_checks"
	evalLLMJudge     = "llm_judge"
	evalCustomChecks = "custom_checks"
)

// The recorded skips of the spec, verbatim after "skipped: ".
const (
	skipEmptyTimeline  = "the trial's timeline carries no events"
	skipNoTranscript   = "no transcript messages"
	skipHashDisabled   = "hash grading not enabled"
	skipCustomDisabled = "custom checks not enabled"
)

// verdict is what one evaluator concluded.
type verdict struct {
	scored  bool
	score   float64
	segment string // its Grade.reasons segment; "" when it has nothing to say
}

// evaluator is one grading unit. Evaluate runs only when its component is requested; it
// records in g.ledger every scored key it evaluated or deliberately skipped, and returns
// an *Error (a table row) when grading must stop.
type evaluator interface {
	Name() string
	Component() string
	Evaluate(ctx context.Context, g *gradeCtx) (verdict, error)
}

// registry is the registration point: evaluators in the order the component phase runs
// them. state_checks has three sources folded by stateComponent (state.go); every other
// component has exactly one evaluator.
//
// An evaluator added later may report implemented() == false while it only files the
// spec's recorded skips; the ledger then names its keys as not implemented.
func registry() []evaluator {
	return []evaluator{
		hashEvaluator{},
		jsonPathEvaluator{},
		dbProbesEvaluator{},
		transcriptEvaluator{},
		traceEvaluator{},
		judgeEvaluator{},
		customEvaluator{programs: &celPrograms{}},
	}
}
