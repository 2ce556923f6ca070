package grading

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"

	"tolokaforge.io/operator/api/canonical"
	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner/grading/gradefmt"
)

// Bounds of one custom-check expression.
const (
	// defaultCELCostLimit caps CEL's own cost units per expression: ample for a few
	// passes over a long timeline and a shop-sized database, far below what a runaway
	// nested comprehension would need.
	defaultCELCostLimit = 10_000_000
	// defaultCELTimeout bounds one expression's wall time, beside the cost limit, for
	// work the cost model undercounts.
	defaultCELTimeout = 2 * time.Second
	// celInterruptEvery is how many comprehension iterations pass between checks of the
	// expression's deadline.
	celInterruptEvery = 100
)

// withCELLimits sets the cost limit and the timeout of each custom-check expression; a
// zero value keeps the default.
func withCELLimits(cost uint64, timeout time.Duration) Option {
	return func(o *options) {
		if cost > 0 {
			o.celCost = cost
		}
		if timeout > 0 {
			o.celTimeout = timeout
		}
	}
}

// The CustomCheckResult statuses.
const (
	checkPassed  = "passed"
	checkFailed  = "failed"
	checkSkipped = "skipped"
	checkError   = "error"
)

// customEvaluator runs custom_checks: CEL expressions (cel-go) over db, timeline,
// termination_reason and task, compiled by the same function that validated them at
// RegisterTrial. Score = weighted mean of passed over the checks that reached a verdict
// (passed or failed). A check that errors fails the RPC under fail_on_error (the
// default); under fail_on_error: false it is excluded from the mean and named in the
// segment, and the checks that ran are scored; only when no check reached a verdict
// is the component left unscored, the errors its segment. A check over its cost limit
// is not an error but a failed check: the agent decides how large the state it reads
// is, so an error there would let it remove a check it was about to fail.
type customEvaluator struct{ programs *celPrograms }

func (customEvaluator) Name() string      { return evalCustomChecks }
func (customEvaluator) Component() string { return task.ComponentCustomChecks }

// celPrograms caches compiled programs by expression: the grader's limits are fixed, so
// a program is valid for every trial that writes the same expression.
type celPrograms struct {
	mu    sync.Mutex
	progs map[string]celProgram
}

type celProgram struct {
	prog cel.Program
	// What the expression reads, so variables nobody reads are never built: db costs a
	// read of the stable state, and events' parsed args and results are most of the
	// cost of timeline.
	readsDB, readsTimeline, readsEventJSON bool
}

func (p celProgram) or(o celProgram) celProgram {
	p.readsDB = p.readsDB || o.readsDB
	p.readsTimeline = p.readsTimeline || o.readsTimeline
	p.readsEventJSON = p.readsEventJSON || o.readsEventJSON
	return p
}

func (c *celPrograms) get(expr string, o *options) (celProgram, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.progs[expr]; ok {
		return p, nil
	}
	ast, err := task.CompileCustomCheck(expr)
	if err != nil {
		return celProgram{}, err
	}
	env, err := task.CustomCheckEnv()
	if err != nil {
		return celProgram{}, err
	}
	prog, err := env.Program(ast, cel.CostLimit(o.celCost), cel.InterruptCheckFrequency(celInterruptEvery))
	if err != nil {
		return celProgram{}, fmt.Errorf("CEL expression %q: %w", expr, err)
	}
	p := celProgram{prog: prog}
	for _, ref := range ast.NativeRep().ReferenceMap() {
		switch ref.Name {
		case task.CELVarDB:
			p.readsDB = true
		case task.CELVarTimeline:
			p.readsTimeline = true
		}
	}
	// Textual, so it over-approximates (a literal "result" counts) and never misses
	// e.args, e["result"] or a macro over either.
	p.readsEventJSON = p.readsTimeline && (strings.Contains(expr, "args") || strings.Contains(expr, "result"))
	if c.progs == nil {
		c.progs = map[string]celProgram{}
	}
	c.progs[expr] = p
	return p, nil
}

type compiledCheck struct {
	check      *task.CustomCheck
	expr, when celProgram
	hasWhen    bool
}

func (e customEvaluator) Evaluate(ctx context.Context, g *gradeCtx) (verdict, error) {
	cc := g.cfg.CustomChecks
	keys := g.keysFor(evalCustomChecks)
	if cc == nil || len(keys) == 0 {
		return verdict{}, nil
	}
	if !cc.Enabled {
		g.ledger.skipped(skipCustomDisabled, keys...)
		return verdict{}, nil
	}
	checks := make([]compiledCheck, len(cc.Checks))
	var reads celProgram
	for i := range cc.Checks {
		ch := &cc.Checks[i]
		cp := compiledCheck{check: ch}
		var err error
		if cp.expr, err = e.programs.get(ch.Expr, g.opts); err != nil {
			return verdict{}, notAsAuthored(g.id, fmt.Sprintf("custom_checks.checks[%d] (name %q): %v", i, ch.Name, err))
		}
		if ch.When != "" {
			cp.hasWhen = true
			if cp.when, err = e.programs.get(ch.When, g.opts); err != nil {
				return verdict{}, notAsAuthored(g.id, fmt.Sprintf("custom_checks.checks[%d].when (name %q): %v", i, ch.Name, err))
			}
		}
		reads = reads.or(cp.expr).or(cp.when)
		checks[i] = cp
	}
	vars, err := celVars(ctx, g, reads)
	if err != nil {
		return verdict{}, err
	}

	results := make([]*runnerpb.CustomCheckResult, len(checks))
	var errored []string
	for i, cp := range checks {
		r := e.run(ctx, g.opts, cp, vars)
		results[i] = r
		if r.Status == checkError {
			errored = append(errored, fmt.Sprintf("check %q: %s", r.CheckName, r.Message))
		}
	}
	g.ledger.evaluated(keys...)
	g.customResults = results

	if len(errored) > 0 && (cc.FailOnError == nil || *cc.FailOnError) {
		return verdict{}, gradingError(fmt.Errorf("custom_checks failed to run (fail_on_error is true): %s", errored[0]))
	}
	return scoreChecks(cc.Checks, results, errored), nil
}

// run decides one check: its when guard first, then its expression.
func (e customEvaluator) run(ctx context.Context, o *options, cp compiledCheck, vars map[string]any) *runnerpb.CustomCheckResult {
	r := &runnerpb.CustomCheckResult{CheckName: cp.check.Name}
	if cp.hasWhen {
		ok, msg, overCost := evalBool(ctx, o, cp.when.prog, vars)
		switch {
		case overCost:
			r.Status, r.Message = checkFailed, "when: "+msg
			return r
		case msg != "":
			r.Status, r.Message = checkError, "when: "+msg
			return r
		case !ok:
			r.Status, r.Message = checkSkipped, "the when guard evaluated to false"
			return r
		}
	}
	ok, msg, overCost := evalBool(ctx, o, cp.expr.prog, vars)
	switch {
	case overCost:
		r.Status, r.Message = checkFailed, msg
	case msg != "":
		r.Status, r.Message = checkError, msg
	case ok:
		r.Status, r.Score = checkPassed, 1
	default:
		r.Status, r.Message = checkFailed, "the expression evaluated to false"
		if cp.check.Description != "" {
			r.Message += ": " + cp.check.Description
		}
	}
	return r
}

// evalBool evaluates one program under its cost limit and timeout; msg is non-empty
// when the evaluation did not yield a bool, and overCost says the cost limit stopped it.
func evalBool(ctx context.Context, o *options, prog cel.Program, vars map[string]any) (value bool, msg string, overCost bool) {
	ctx, cancel := context.WithTimeout(ctx, o.celTimeout)
	defer cancel()
	out, _, err := prog.ContextEval(ctx, vars)
	if err != nil {
		switch {
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			return false, fmt.Sprintf("evaluation exceeded its timeout of %s", o.celTimeout), false
		case strings.Contains(err.Error(), "cost limit exceeded"):
			return false, fmt.Sprintf("evaluation exceeded its cost limit of %d over the trial's state: counted as failed, not as an error, "+
				"since the agent decides how large that state is", o.celCost), true
		}
		return false, "evaluation error: " + err.Error(), false
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, fmt.Sprintf("the expression yielded %s (%s), not a bool", out.Type().TypeName(), show(fromCEL(out.Value()))), false
	}
	return bool(b), "", false
}

func fromCEL(v any) canonical.Value {
	c, err := canonical.FromAny(v)
	if err != nil {
		return canonical.String(fmt.Sprint(v))
	}
	return c
}

// scoreChecks folds the checks that reached a verdict. errored names the checks that
// errored (only under fail_on_error: false): they are excluded from the mean and named,
// and when nothing else reached a verdict their errors are the segment.
func scoreChecks(checks []task.CustomCheck, results []*runnerpb.CustomCheckResult, errored []string) verdict {
	var weights, scores []float64
	var passed, failed, skipped int
	var notes []string
	for i, r := range results {
		w := task.DefaultCheckWeight
		if checks[i].Weight != nil {
			w = *checks[i].Weight
		}
		switch r.Status {
		case checkPassed:
			passed++
			weights, scores = append(weights, w), append(scores, 1)
		case checkFailed:
			failed++
			weights, scores = append(weights, w), append(scores, 0)
		case checkSkipped:
			skipped++
		}
		if r.Status != checkPassed {
			notes = append(notes, fmt.Sprintf("%s: %s: %s", r.CheckName, r.Status, r.Message))
		}
	}
	counts := fmt.Sprintf("%d passed, %d failed, %d skipped", passed, failed, skipped)
	if len(errored) > 0 {
		counts += fmt.Sprintf(", %d errored and excluded under fail_on_error: false", len(errored))
	}
	mean, ok, err := task.WeightedMean(weights, scores)
	switch {
	case err != nil:
		// A weight validation refuses (not finite, negative): no score beats a NaN one.
		return verdict{segment: "Custom checks: no score — " + err.Error()}
	case !ok && len(errored) > 0:
		return verdict{segment: "Custom checks: the suite failed to run — " + strings.Join(errored, "; ")}
	case !ok:
		seg := "Custom checks: no check reached a verdict — " + counts
		if len(checks) == 0 {
			seg = "Custom checks: no check reached a verdict — the suite declares none"
		}
		return verdict{segment: seg}
	}
	score := gradefmt.Round6(mean)
	seg := fmt.Sprintf("Custom checks: score=%g (%s)", score, counts)
	if len(notes) > 0 {
		seg += "; " + strings.Join(notes, "; ")
	}
	return verdict{scored: true, score: score, segment: seg}
}

// celVars builds the documented variables. db is read only when an expression names
// it, so a suite over the timeline never touches the DB service; an unread timeline
// is an empty list.
func celVars(ctx context.Context, g *gradeCtx, reads celProgram) (map[string]any, error) {
	db := map[string]any{}
	if reads.readsDB {
		st, err := g.trialState(ctx)
		if err != nil {
			return nil, err
		}
		for name, v := range st.tables {
			db[name] = celValue(v)
		}
	}
	events := make([]any, len(g.timeline.Events))
	if !reads.readsTimeline {
		events = nil
	}
	for i := range events {
		e := &g.timeline.Events[i]
		ev := map[string]any{
			"position": int64(e.Position), "event": string(e.Kind), "role": e.Role, "content": e.Content,
			"executor": e.Executor, "tool": e.Tool, "args": map[string]any{}, "status": string(e.Status),
			"output": e.Output, "result": nil,
		}
		if e.Kind == task.EventToolCall && reads.readsEventJSON {
			// encoding/json decodes numbers as float64: the double convention above, in
			// one pass over the bytes.
			var args map[string]any
			if json.Unmarshal(e.Args, &args) == nil && args != nil {
				ev["args"] = args
			}
			if out := strings.TrimSpace(e.Output); out != "" {
				var result any
				if json.Unmarshal([]byte(out), &result) == nil {
					ev["result"] = result
				}
			}
		}
		events[i] = ev
	}
	meta := map[string]any{}
	for k, raw := range g.task.Metadata {
		if v, err := canonical.Parse(raw); err == nil {
			meta[k] = celValue(v)
		}
	}
	return map[string]any{
		task.CELVarDB:                db,
		task.CELVarTimeline:          events,
		task.CELVarTerminationReason: string(g.timeline.Termination),
		task.CELVarTask:              map[string]any{"id": g.task.TaskID, "category": g.task.Category, "metadata": meta},
	}, nil
}

// celValue converts a JSON value for CEL. Numbers become doubles, CEL's convention for
// JSON (google.protobuf.Value), so arithmetic never trips over int versus double.
func celValue(v canonical.Value) any {
	switch x := v.(type) {
	case nil, canonical.Null:
		return types.NullValue
	case canonical.Bool:
		return bool(x)
	case canonical.String:
		return string(x)
	case canonical.Int:
		if n, ok := x.Int64(); ok {
			return float64(n)
		}
		f, _ := new(big.Float).SetInt(x.Big()).Float64()
		return f
	case canonical.Float:
		return float64(x)
	case canonical.Array:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = celValue(e)
		}
		return out
	case canonical.Object:
		out := make(map[string]any, x.Len())
		for k, e := range x.All() {
			out[k] = celValue(e)
		}
		return out
	}
	return types.NullValue
}
