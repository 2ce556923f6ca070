package grading

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"tolokaforge.io/operator/api/canonical"
	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner/grading/gradefmt"
)

// skipUnbound is the recorded skip of a require tree a binding never entered.
const skipUnbound = "the binding yielded no assignment"

// traceKeyPrefix is the ledger key family of trace_checks.constraints: one key per
// constraint kind written there, top level or inside a require tree.
const traceKeyPrefix = "trace_checks.constraints."

// traceEvaluator scores trace_checks: temporal constraints over the timeline
// (grading-config.md, "Trace checks"). Each route (the top-level constraints, or those
// plus one alternative's) is the weighted mean of its decided scored constraints; a
// failed gate fails the trial outright whatever the score.
//
// Decisions the spec leaves open: with alternatives the top-level constraints are
// common to every route; an alternative's constraint results carry the id
// "<alternative id>/<constraint id>" so ids stay unique within the block; a route with
// no decided scored constraint has no score (the component is then unscored, never a
// made-up 1.0); when no route's gates hold the highest-scoring route is reported as
// the winner beside gate_failed; first, last and between with no event to anchor them
// are undecided; a failed gate zeroes the trial's score and binary_pass while the
// component and each route keep their own score.
type traceEvaluator struct{}

func (traceEvaluator) Name() string      { return evalTraceChecks }
func (traceEvaluator) Component() string { return task.ComponentTraceChecks }

// traceAccount tracks which kinds took a verdict and which sat in a require tree a
// binding never entered, for the ledger.
type traceAccount struct {
	evaluated map[task.TraceKind]bool
	unentered map[task.TraceKind]bool
}

func newTraceAccount() *traceAccount {
	return &traceAccount{evaluated: map[task.TraceKind]bool{}, unentered: map[task.TraceKind]bool{}}
}

// traceResult is one top-level constraint's verdict.
type traceResult struct {
	id  string
	c   *task.TraceConstraint
	out traceOutcome
}

func (r *traceResult) severity() task.TraceSeverity {
	if r.c.Severity == "" {
		return task.SeverityScored
	}
	return r.c.Severity
}

func (r *traceResult) weight() float64 {
	if r.c.Weight == nil {
		return task.DefaultTraceWeight
	}
	return *r.c.Weight
}

func (r *traceResult) failed() bool { return !r.out.passed && !r.out.undecided }

// message is the author's message on a failure when given, else what the evaluator
// found; empty on a pass.
func (r *traceResult) message() string {
	switch {
	case r.out.passed:
		return ""
	case r.failed() && r.c.Message != "":
		return r.c.Message
	}
	return r.out.msg
}

func (r *traceResult) proto() *runnerpb.TraceConstraintResult {
	var pos []int32
	for _, p := range r.out.positions {
		pos = append(pos, int32(p))
	}
	return &runnerpb.TraceConstraintResult{
		Id: r.id, Kind: string(r.c.Kind), Passed: r.out.passed, Weight: r.weight(), Message: r.message(),
		MatchedPositions: pos, Severity: string(r.severity()), Undecided: r.out.undecided,
	}
}

// route is one scored path through the block.
type route struct {
	id          string
	results     []*traceResult
	scored      bool
	score       float64
	failedGates []string
}

func newRoute(id string, results []*traceResult) *route {
	r := &route{id: id, results: results}
	var weights, scores []float64
	for _, res := range results {
		if res.severity() == task.SeverityGate {
			if res.failed() {
				r.failedGates = append(r.failedGates, res.id)
			}
			continue
		}
		if res.out.undecided {
			continue
		}
		weights = append(weights, res.weight())
		if res.out.passed {
			scores = append(scores, 1)
		} else {
			scores = append(scores, 0)
		}
	}
	// An error is a weight validation refuses (not finite, negative): the route takes no
	// score rather than a NaN one.
	if mean, ok, err := task.WeightedMean(weights, scores); err == nil && ok {
		r.scored, r.score = true, gradefmt.Round6(mean)
	}
	return r
}

// better reports whether r outranks o: a score beats none, then the higher score; a tie
// keeps declaration order.
func (r *route) better(o *route) bool {
	if r.scored != o.scored {
		return r.scored
	}
	return r.scored && r.score > o.score
}

func (traceEvaluator) Evaluate(_ context.Context, g *gradeCtx) (verdict, error) {
	tc := g.cfg.TraceChecks
	keys := g.keysFor(evalTraceChecks)
	if tc == nil || len(keys) == 0 {
		return verdict{}, nil
	}
	if g.timeline.Empty() {
		g.ledger.skipped(skipEmptyTimeline, keys...)
		return verdict{}, nil
	}
	view := newTraceView(g.timeline, g.env.AgentTools(), g.env.UserTools())
	acct := newTraceAccount()
	common, err := view.evalList(g.id, "trace_checks.constraints", "", tc.Constraints, acct)
	if err != nil {
		return verdict{}, err
	}
	all := append([]*traceResult(nil), common...)
	var winner *route
	var paths []*runnerpb.TracePathResult
	if len(tc.Alternatives) == 0 {
		winner = newRoute("", common)
	} else {
		var best, bestOpen *route
		for i := range tc.Alternatives {
			alt := &tc.Alternatives[i]
			// An alternative's kinds are covered by the alternatives key, not their own.
			own, err := view.evalList(g.id, fmt.Sprintf("trace_checks.alternatives[%d].constraints", i), alt.ID+"/", alt.Constraints, newTraceAccount())
			if err != nil {
				return verdict{}, err
			}
			all = append(all, own...)
			r := newRoute(alt.ID, append(append([]*traceResult(nil), common...), own...))
			paths = append(paths, &runnerpb.TracePathResult{Id: r.id, Score: r.score, GateFailed: len(r.failedGates) > 0})
			if best == nil || r.better(best) {
				best = r
			}
			if len(r.failedGates) == 0 && (bestOpen == nil || r.better(bestOpen)) {
				bestOpen = r
			}
		}
		winner = bestOpen
		if winner == nil {
			winner = best
		}
	}
	g.accountTrace(keys, acct)

	results := make([]*runnerpb.TraceConstraintResult, len(all))
	for i, r := range all {
		results[i] = r.proto()
	}
	g.traceResults = results
	g.traceSummary = &runnerpb.TraceChecksSummary{
		WinningPath: winner.id, GateFailed: len(winner.failedGates) > 0,
		FailedGateIds: winner.failedGates, Paths: paths,
	}
	g.traceGateFailed = len(winner.failedGates) > 0

	parts := []string{"Trace checks: score=" + formatScore(winner.scored, winner.score)}
	if winner.id != "" {
		parts[0] += fmt.Sprintf(" (winning path %s)", winner.id)
	}
	if len(winner.failedGates) > 0 {
		parts = append(parts, "FAILED trace gates: "+strings.Join(winner.failedGates, ", "))
	}
	for _, r := range winner.results {
		if r.failed() {
			parts = append(parts, fmt.Sprintf("Trace check %s: %s", r.id, r.message()))
		}
	}
	return verdict{scored: winner.scored, score: winner.score, segment: strings.Join(parts, reasonSeparator)}, nil
}

func formatScore(scored bool, score float64) string {
	if !scored {
		return "n/a (no scored constraint reached a verdict)"
	}
	return fmt.Sprintf("%g", score)
}

// accountTrace files the ledger records: every kind that took a verdict is evaluated;
// a kind that sat only in require trees no binding entered is the recorded skip.
func (g *gradeCtx) accountTrace(keys []string, acct *traceAccount) {
	var skipped []string
	for _, k := range keys {
		kind, isKind := strings.CutPrefix(k, traceKeyPrefix)
		switch {
		case !isKind:
			g.ledger.evaluated(k) // trace_checks.alternatives: the routes were scored
		case acct.evaluated[task.TraceKind(kind)]:
			g.ledger.evaluated(k)
		case acct.unentered[task.TraceKind(kind)]:
			skipped = append(skipped, k)
		}
	}
	g.ledger.skipped(skipUnbound, skipped...)
}

// evalList decides a list of top-level constraints; idPrefix qualifies their ids.
func (v *traceView) evalList(trialID, path, idPrefix string, list []task.TraceConstraint, acct *traceAccount) ([]*traceResult, error) {
	out := make([]*traceResult, 0, len(list))
	for i := range list {
		c := &list[i]
		o, err := v.evalConstraint(c, bindings{}, acct)
		if err != nil {
			return nil, notAsAuthored(trialID, fmt.Sprintf("%s[%d] (id %q): %v", path, i, c.ID, err))
		}
		out = append(out, &traceResult{id: idPrefix + c.ID, c: c, out: o})
	}
	return out, nil
}

// evalConstraint decides c under env: directly, or through its binding.
func (v *traceView) evalConstraint(c *task.TraceConstraint, env bindings, acct *traceAccount) (traceOutcome, error) {
	acct.evaluated[c.Kind] = true
	if c.Bind == nil {
		if c.Require != nil {
			return traceOutcome{}, errors.New("require without bind")
		}
		return v.evalKind(c, env)
	}
	return v.evalBinding(c, env, acct)
}

// assignment is one value a binding bound, with the event it came from.
type assignment struct {
	value canonical.Value
	from  int
}

// evalBinding binds c.Bind.Var to every distinct value the events matching from
// carry, and passes when the require tree passes under every assignment.
func (v *traceView) evalBinding(c *task.TraceConstraint, env bindings, acct *traceAccount) (traceOutcome, error) {
	b := c.Bind
	if c.Require == nil {
		return traceOutcome{}, errors.New("bind without require")
	}
	froms, err := v.positions(&b.From, env)
	if err != nil {
		return traceOutcome{}, err
	}
	var values []assignment
	for _, p := range froms {
		val, ok := v.field(p, b.Value)
		if !ok {
			continue
		}
		dup := false
		for _, a := range values {
			if canonical.Equal(a.value, val) {
				dup = true
				break
			}
		}
		if !dup {
			values = append(values, assignment{value: val, from: p})
		}
	}
	if len(values) == 0 {
		requireKinds(c.Require, acct.unentered)
		why := fmt.Sprintf("no event matches bind.from %s", describeSelector(&b.From))
		if len(froms) > 0 {
			why = fmt.Sprintf("%d event(s) match bind.from %s but none carries %s", len(froms), describeSelector(&b.From), b.Value)
		}
		switch c.OnUnbound {
		case task.OnUnboundPass:
			return passedAt(froms), nil
		case task.OnUnboundUndecided:
			return undecided(froms, "%s: %s", skipUnbound, why), nil
		}
		return failed(froms, "%s: %s", skipUnbound, why), nil
	}
	var decided []int
	var firstFail, firstUndecided *traceOutcome
	var failAt assignment
	fails := 0
	for _, a := range values {
		inner := make(bindings, len(env)+1)
		for k, x := range env {
			inner[k] = x
		}
		inner[b.Var] = a.value
		o, err := v.evalConstraint(c.Require, inner, acct)
		if err != nil {
			return traceOutcome{}, err
		}
		switch {
		case o.passed:
			decided = append(decided, a.from)
			decided = append(decided, o.positions...)
		case o.undecided:
			if firstUndecided == nil {
				o.msg = fmt.Sprintf("with %s=%s: %s", b.Var, show(a.value), o.msg)
				firstUndecided = &o
			}
		default:
			fails++
			if firstFail == nil {
				firstFail, failAt = &o, a
			}
		}
	}
	switch {
	case firstFail != nil:
		return failed(sortedUnion([]int{failAt.from}, firstFail.positions), "with %s=%s (bound at position %d): %s%s",
			b.Var, show(failAt.value), failAt.from, firstFail.msg, andMore(fails-1, "failing assignment")), nil
	case firstUndecided != nil:
		return traceOutcome{undecided: true, msg: firstUndecided.msg, positions: sortedUnion(firstUndecided.positions)}, nil
	}
	return passedAt(sortedUnion(decided)), nil
}

// requireKinds adds every kind of a require tree (nested requires included).
func requireKinds(c *task.TraceConstraint, into map[task.TraceKind]bool) {
	for ; c != nil; c = c.Require {
		into[c.Kind] = true
	}
}
