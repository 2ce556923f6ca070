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
	"tolokaforge.io/operator/runner/grading/pychecks"
	"tolokaforge.io/operator/runner/grading/timeline"
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
	failOnError := cc.FailOnError == nil || *cc.FailOnError
	var outs []customOutcome
	var st suiteState
	if len(cc.Checks) > 0 {
		results, errored, err := e.runCEL(ctx, g, cc)
		if err != nil {
			return verdict{}, err
		}
		if len(errored) > 0 && failOnError {
			return verdict{}, gradingError(fmt.Errorf("custom_checks failed to run (fail_on_error is true): %s", errored[0]))
		}
		st.excluded = errored
		for i, r := range results {
			w := task.DefaultCheckWeight
			if cc.Checks[i].Weight != nil {
				w = *cc.Checks[i].Weight
			}
			outs = append(outs, customOutcome{r: r, weight: w})
		}
	}
	if cc.File != "" {
		pyOuts, suiteErr, err := runPythonSuite(ctx, g, cc)
		if err != nil {
			return verdict{}, err
		}
		switch {
		case suiteErr != nil && suiteErr.Kind == "timeout":
			// A hang scores 0, like a crash, whatever fail_on_error says: the
			// agent's state decides whether a check hangs, and leaving it out
			// of the mean (or failing the RPC) would let a hang help. Its
			// unfinished checks are already error results scored 0.
			st.suiteErr = suiteErr.Error()
		case suiteErr != nil:
			if failOnError {
				return verdict{}, gradingError(fmt.Errorf("custom_checks failed to run (fail_on_error is true): %s", suiteErr))
			}
			st.suiteErr = suiteErr.Error()
			for _, name := range suiteErr.Unfinished {
				st.excluded = append(st.excluded, fmt.Sprintf("check %q: did not finish", name))
			}
		}
		outs = append(outs, pyOuts...)
	}
	g.ledger.evaluated(keys...)
	g.customResults = make([]*runnerpb.CustomCheckResult, len(outs))
	for i, o := range outs {
		g.customResults[i] = o.r
	}
	return scoreChecks(outs, st), nil
}

// runCEL runs the CEL checks; errored names each check that errored.
func (e customEvaluator) runCEL(ctx context.Context, g *gradeCtx, cc *task.CustomChecks) ([]*runnerpb.CustomCheckResult, []string, error) {
	checks := make([]compiledCheck, len(cc.Checks))
	var reads celProgram
	for i := range cc.Checks {
		ch := &cc.Checks[i]
		cp := compiledCheck{check: ch}
		var err error
		if cp.expr, err = e.programs.get(ch.Expr, g.opts); err != nil {
			return nil, nil, notAsAuthored(g.id, fmt.Sprintf("custom_checks.checks[%d] (name %q): %v", i, ch.Name, err))
		}
		if ch.When != "" {
			cp.hasWhen = true
			if cp.when, err = e.programs.get(ch.When, g.opts); err != nil {
				return nil, nil, notAsAuthored(g.id, fmt.Sprintf("custom_checks.checks[%d].when (name %q): %v", i, ch.Name, err))
			}
		}
		reads = reads.or(cp.expr).or(cp.when)
		checks[i] = cp
	}
	vars, err := celVars(ctx, g, reads)
	if err != nil {
		return nil, nil, err
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
	return results, errored, nil
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

// customOutcome is one check's result as the fold reads it.
type customOutcome struct {
	r      *runnerpb.CustomCheckResult
	weight float64
	// errorScoresZero: a Python check that raised (or returned no result) is a
	// verdict of 0, as upstream's aggregate counts it, not an exclusion: the agent
	// shapes the state a check reads, and a state that makes the check crash must
	// not take the check out of the mean.
	errorScoresZero bool
}

// suiteState is what the fold names beside the results: errors excluded under
// fail_on_error: false (CEL checks that errored, Python checks a suite failure
// left unfinished) and the Python suite's own failure.
type suiteState struct {
	excluded []string
	suiteErr string
}

// scoreChecks folds the checks that reached a verdict: the weighted mean of their
// scores (a CEL check scores 1 or 0, a Python check its CheckPassed/CheckFailed score,
// upstream's partial credit). Errors excluded under fail_on_error: false are counted
// and named, and when nothing reached a verdict they, with the suite's failure, are
// the segment.
func scoreChecks(outs []customOutcome, st suiteState) verdict {
	var weights, scores []float64
	var passed, failed, skipped, zeroed int
	var notes []string
	for _, o := range outs {
		r := o.r
		switch {
		case r.Status == checkPassed:
			passed++
			weights, scores = append(weights, o.weight), append(scores, r.Score)
		case r.Status == checkFailed:
			failed++
			weights, scores = append(weights, o.weight), append(scores, r.Score)
		case r.Status == checkSkipped:
			skipped++
		case r.Status == checkError && o.errorScoresZero:
			zeroed++
			weights, scores = append(weights, o.weight), append(scores, 0)
		}
		if r.Status != checkPassed {
			notes = append(notes, fmt.Sprintf("%s: %s: %s", r.CheckName, r.Status, r.Message))
		}
	}
	if st.suiteErr != "" {
		notes = append(notes, st.suiteErr)
	}
	counts := fmt.Sprintf("%d passed, %d failed, %d skipped", passed, failed, skipped)
	if zeroed > 0 {
		counts += fmt.Sprintf(", %d errored and scored 0", zeroed)
	}
	if len(st.excluded) > 0 {
		counts += fmt.Sprintf(", %d errored and excluded under fail_on_error: false", len(st.excluded))
	}
	mean, ok, err := task.WeightedMean(weights, scores)
	switch {
	case err != nil:
		// A weight validation refuses (not finite, negative): no score beats a NaN one.
		return verdict{segment: "Custom checks: no score — " + err.Error()}
	case !ok && (len(st.excluded) > 0 || st.suiteErr != ""):
		failures := st.excluded
		if st.suiteErr != "" {
			failures = append(append([]string(nil), failures...), st.suiteErr)
		}
		return verdict{segment: "Custom checks: the suite failed to run — " + strings.Join(failures, "; ")}
	case !ok:
		seg := "Custom checks: no check reached a verdict — " + counts
		if len(outs) == 0 {
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
		keys := dictTableKeys(g.task)
		for name, v := range st.tables {
			if key := keys[name]; key != "" {
				// Every table the pack wrote as a dict is the author's dict, as
				// JSONPath reads it: db.orders['#W2378156'].status.
				v = authorTable(v, key)
			}
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

// runPythonSuite runs custom_checks.file over the trial. suiteErr is a suite that
// did not run to the end (its finished checks are still returned); err is a fault
// outside the suite (the DB service, the runner's own files, cancellation).
func runPythonSuite(ctx context.Context, g *gradeCtx, cc *task.CustomChecks) ([]customOutcome, *pychecks.SuiteError, error) {
	cctx, err := pythonContext(ctx, g)
	if err != nil {
		return nil, nil, err
	}
	site := g.env.PythonSite()
	timeout := pychecks.DefaultTimeout
	if cc.TimeoutSeconds > 0 {
		timeout = time.Duration(cc.TimeoutSeconds * float64(time.Second))
	}
	rep, err := pychecks.Run(ctx, pychecks.Site{Python: site.Python, ArtifactsDir: site.ArtifactsDir, ScratchDir: site.ScratchDir,
		Limits: site.Limits, Env: site.Env, Confine: site.Confine}, pychecks.Suite{File: cc.File, RelativeImports: cc.RelativeImports, Timeout: timeout}, cctx)
	var suiteErr *pychecks.SuiteError
	if err != nil && !errors.As(err, &suiteErr) {
		return nil, nil, gradingError(err)
	}
	var outs []customOutcome
	if rep != nil {
		unfinished := map[string]bool{}
		if suiteErr != nil {
			for _, n := range suiteErr.Unfinished {
				unfinished[n] = true
			}
		}
		timedOut := suiteErr != nil && suiteErr.Kind == "timeout"
		for _, r := range rep.Results {
			outs = append(outs, customOutcome{r: r, weight: task.DefaultCheckWeight, errorScoresZero: timedOut || !unfinished[r.CheckName]})
		}
		if timedOut && len(rep.Checks) == 0 {
			// It hung before its checks loaded (its @init over the state):
			// the suite as a whole scores 0.
			outs = append(outs, customOutcome{weight: task.DefaultCheckWeight, errorScoresZero: true, r: &runnerpb.CustomCheckResult{
				CheckName: cc.File, Status: checkError, DetailsJson: "{}",
				Message: fmt.Sprintf("did not finish within the suite's timeout_seconds (%s) before its checks loaded", timeout)}})
		}
	}
	g.opts.log.V(1).Info("python custom checks ran", "trial", g.id, "file", cc.File, "results", len(outs), "suite_failed", suiteErr != nil)
	return outs, suiteErr, nil
}

// pythonContext is the suite's CheckContext. The states are upstream's: the whole
// tables, unstable fields included (a check may compare updated_at, and a stable
// final state beside a full initial one would make every unstable field look
// changed), with dict-shaped pack tables rebuilt as dicts. The initial state is the
// registered tables; the final one the DB service's current state, after the tool
// servers' tables are synced into it.
func pythonContext(ctx context.Context, g *gradeCtx) (*pychecks.Context, error) {
	keys := dictTableKeys(g.task)
	var initial map[string]json.RawMessage
	if st := g.task.InitialState; st != nil {
		initial = st.Tables
	}
	if err := g.syncState(ctx); err != nil {
		return nil, err
	}
	resp, err := g.env.DB().State(ctx, g.id, nil)
	if err != nil {
		return nil, hashFailed("StableStateError: reading the trial's state for the Python custom checks", err)
	}
	if g.trialHash != "" && resp.StableHash != g.trialHash {
		return nil, hashFailed(fmt.Sprintf("RestoreMismatch: after restoring %s the trial's stable state hashes to %s, not the %s it held before golden replay",
			snapshotName, resp.StableHash, g.trialHash), nil)
	}
	meta := map[string]json.RawMessage{}
	var tags []string
	for k, v := range g.task.Metadata {
		meta[k] = v
	}
	if raw, ok := g.task.Metadata["tags"]; ok {
		_ = json.Unmarshal(raw, &tags) // tags that are not a list of strings stay in extra only
	}
	return &pychecks.Context{
		InitialState: pychecks.Tables(initial, keys),
		FinalState:   pychecks.Tables(resp.Data, keys),
		Transcript:   pychecks.Transcript{Messages: pythonMessages(g.timeline)},
		Task: pychecks.Task{TaskID: g.task.TaskID, TaskName: g.task.Name, TaskDescription: g.task.Description,
			Domain: g.task.Category, Tags: tags, Extra: meta},
	}, nil
}

// dictTableKeys is every table a pack wrote as a dict, with its key field: the
// importer records them on the Python tool sources (extra.dict_tables, table ->
// key field, "" when unknown); an unknown key falls back to the table's declared
// primary key, and a table whose primary key is task.DictKeyField is one too.
func dictTableKeys(t *task.TaskDescription) map[string]string {
	keys := map[string]string{}
	for _, list := range [][]task.ToolSchema{t.AgentTools, t.UserTools} {
		for _, tool := range list {
			if tool.Source == nil {
				continue
			}
			raw, ok := tool.Source.Extra["dict_tables"]
			if !ok {
				continue
			}
			var m map[string]string
			if json.Unmarshal(raw, &m) != nil {
				continue // RegisterTrial's tool planning refuses it; grading has nothing to add
			}
			for table, key := range m {
				if keys[table] == "" {
					keys[table] = key
				}
			}
		}
	}
	if st := t.InitialState; st != nil {
		for _, s := range st.Schemas {
			if k, ok := keys[s.TableName]; (ok && k == "" && s.PrimaryKey != "") || s.PrimaryKey == task.DictKeyField {
				// A table keyed by the synthetic key column is a dict whose records
				// do not carry their key, whether or not a Python tool names it.
				keys[s.TableName] = s.PrimaryKey
			}
		}
	}
	return keys
}

// pythonMessages is the timeline as upstream's transcript: the policy as the system
// message, each turn with the tool calls it declared, and after them one tool
// message per call carrying its output. A call the transcript did not declare (a
// timeline from the runner's record alone) gets a turn of its own.
func pythonMessages(tl *timeline.Timeline) []pychecks.Message {
	var out []pychecks.Message
	if tl.Policy != "" {
		out = append(out, pychecks.Message{Role: task.RoleSystem, Content: tl.Policy})
	}
	var results []pychecks.Message // tool messages of the open turn
	open := -1                     // index in out of the turn whose calls are being read
	flush := func() {
		out = append(out, results...)
		results, open = nil, -1
	}
	for i := range tl.Events {
		e := &tl.Events[i]
		if e.Kind == task.EventMessage {
			flush()
			out = append(out, pychecks.Message{Role: e.Role, Content: e.Content, ToolCalls: []pychecks.ToolCall{}})
			open = len(out) - 1
			continue
		}
		if open < 0 || out[open].Role != e.Role {
			flush()
			out = append(out, pychecks.Message{Role: e.Role, ToolCalls: []pychecks.ToolCall{}})
			open = len(out) - 1
		}
		args := json.RawMessage(`{}`)
		var probe map[string]json.RawMessage
		if json.Unmarshal(e.Args, &probe) == nil && probe != nil {
			args = e.Args
		}
		tc := pychecks.ToolCall{Name: e.Tool, Arguments: args, Status: "success"}
		if e.Status != "" {
			output := e.Output
			tc.Result = &output
			if e.Status != task.ToolCallSuccess {
				tc.Status = "error"
			}
		}
		out[open].ToolCalls = append(out[open].ToolCalls, tc)
		if tc.Result != nil {
			results = append(results, pychecks.Message{Role: task.RoleTool, Content: *tc.Result, Name: e.Tool, ToolCallID: e.CallID, ToolCalls: []pychecks.ToolCall{}})
		}
	}
	flush()
	return out
}
