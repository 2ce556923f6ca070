package grading

import (
	"context"

	"tolokaforge.io/operator/api/task"
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
// trace_checks and custom_checks are placeholders that file only the spec's
// recorded skips; a real evaluator replaces its placeholder here (same Name and
// Component) and nothing else changes: the ledger and the fold already know the keys.
func registry() []evaluator {
	return []evaluator{
		hashEvaluator{},
		jsonPathEvaluator{},
		dbProbesEvaluator{},
		transcriptEvaluator{},
		pendingEvaluator{name: evalTraceChecks, component: task.ComponentTraceChecks, skip: func(g *gradeCtx) string {
			if g.timeline.empty() {
				return skipEmptyTimeline
			}
			return ""
		}},
		judgeEvaluator{},
		pendingEvaluator{name: evalCustomChecks, component: task.ComponentCustomChecks, skip: func(g *gradeCtx) string {
			if cc := g.cfg.CustomChecks; cc != nil && !cc.Enabled {
				return skipCustomDisabled
			}
			return ""
		}},
	}
}

// pendingEvaluator stands in for an evaluator this runner does not implement yet. It
// never scores; when the spec's skip condition holds it records the skip, otherwise it
// leaves its keys unaccounted so the ledger fails the RPC naming them.
type pendingEvaluator struct {
	name, component string
	skip            func(*gradeCtx) string
}

func (p pendingEvaluator) Name() string      { return p.name }
func (p pendingEvaluator) Component() string { return p.component }

// implemented reports false: the ledger says "not implemented yet" for its keys.
func (pendingEvaluator) implemented() bool { return false }

func (p pendingEvaluator) Evaluate(_ context.Context, g *gradeCtx) (verdict, error) {
	if reason := p.skip(g); reason != "" {
		var keys []string
		for _, k := range g.populated {
			if k.evaluator == p.name {
				keys = append(keys, k.key)
			}
		}
		g.ledger.skipped(reason, keys...)
	}
	return verdict{}, nil
}
