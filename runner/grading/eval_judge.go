package grading

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"tolokaforge.io/operator/api/llm"
	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner/grading/judge"
)

// WithJudgeModels sets how the judge's model is built from TrialSpec.judge (default
// judge.LLMModels with the grader's logger).
func WithJudgeModels(f judge.ModelFactory) Option { return func(o *options) { o.judge.Models = f } }

// WithSecretsDir sets the directory the judge's key files are read from (default
// judge.DefaultSecretsDir); TrialSpec.judge.api_key_env names a file in it.
func WithSecretsDir(dir string) Option { return func(o *options) { o.judge.SecretsDir = dir } }

// withJudgeTimeout bounds one trial's whole judge run; d <= 0 keeps the default.
func withJudgeTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.judge.Timeout = d
		}
	}
}

func (o *options) judgeModels() judge.ModelFactory {
	if o.judge.Models != nil {
		return o.judge.Models
	}
	return judge.LLMModels(llm.Options{Log: o.log.WithName("judge")})
}

// judgeEvaluator runs the rubric judge (grading-config.md, "LLM judge").
type judgeEvaluator struct{}

func (judgeEvaluator) Name() string      { return evalLLMJudge }
func (judgeEvaluator) Component() string { return task.ComponentLLMJudge }

func (judgeEvaluator) Evaluate(ctx context.Context, g *gradeCtx) (verdict, error) {
	j := g.cfg.LLMJudge
	keys := g.keysFor(evalLLMJudge)
	if j == nil || len(keys) == 0 {
		return verdict{}, nil
	}
	if g.transcriptEmpty {
		g.ledger.skipped(skipNoTranscript, keys...)
		return verdict{}, nil
	}
	g.ledger.evaluated(keys...)
	jo := g.opts.judge
	jo.Models = g.opts.judgeModels()
	if kh, ok := g.env.(JudgeKeyHolder); ok {
		// The host's key for this trial wins over the secrets directory's file:
		// on a slot the file is not there, or is another Trial's.
		jo.Key = kh.JudgeKey()
	}
	run := &judgeToolRun{g: g}
	defer func() {
		if p := recover(); p != nil {
			// The grader's caller turns the panic into an error; the trial's state must
			// still be the agent's.
			if rerr := run.restore(ctx); rerr != nil {
				g.opts.log.Error(rerr, "restoring the trial's state after the judge panicked failed", "trial", g.id)
			}
			panic(p)
		}
	}()
	tools, err := run.offer(j)
	var (
		out   *judge.Outcome
		score float64
	)
	if err != nil {
		out = &judge.Outcome{Status: runnerpb.JudgeStatus_JUDGE_STATUS_ERRORED, Report: &runnerpb.JudgeReport{}}
	} else {
		out, score, err = judge.Run(ctx, g.timeline, j, g.env.Spec().Judge, jo, tools)
	}
	// The judge's tool calls ran against the trial's own state: put it back before
	// anything else is graded, whatever the judge concluded.
	if rerr := run.restore(ctx); rerr != nil {
		out.Status, out.Results = runnerpb.JudgeStatus_JUDGE_STATUS_ERRORED, nil
		g.judge = out
		g.opts.log.Error(rerr, "restoring the trial's state after the judge's tool calls failed", "trial", g.id)
		return verdict{}, &Error{Msg: "Grading error: llm_judge: the trial's state after the judge's tool calls: " + rerr.Error(), Cause: errors.Join(err, rerr)}
	}
	g.judge = out
	if err != nil {
		g.opts.log.Info("judge errored", "trial", g.id, "error", err.Error(),
			"calls", out.Report.Calls, "tool_calls", out.Report.ToolCalls, "cost_usd", out.Report.CostUsd)
		if g.judgeHasShare() {
			// Fail loud: the component is incomplete, and a grade without it would be
			// a score the trial never earned (or lost).
			return verdict{}, &Error{Msg: "Grading error: llm_judge: JUDGE_STATUS_ERRORED (no score; llm_judge carries a weight share, so the grade cannot be computed without it): " + err.Error(), Cause: err}
		}
		return verdict{segment: "Judge: errored, no score (llm_judge carries no weight share): " + err.Error()}, nil
	}
	return verdict{scored: true, score: score, segment: judge.Segment(score, out.Results)}, nil
}

// judgeHasShare reports whether the fold would read llm_judge: it is weighted (a
// weight of 0 under the weighted mean is no share).
func (g *gradeCtx) judgeHasShare() bool {
	w, ok := g.cfg.Weights[task.ComponentLLMJudge]
	if !ok {
		return false
	}
	switch g.cfg.CombineMethod {
	case task.CombineWeighted, "":
		return w > 0
	default:
		return true
	}
}

// JudgeChecker is implemented by the Grader New returns: RegisterTrial asks it, so a
// trial whose judge could never run is refused before the agent spends a token.
type JudgeChecker interface {
	// CheckJudge checks spec's judge; key is the judge's key the host gave for
	// this trial ("" none: the secrets directory's file must be there).
	CheckJudge(spec *task.TrialSpec, key string) error
}

// JudgeKeyHolder is implemented by an Env whose trial was given its judge's key by
// the host (a slot's runner: RegisterTrial metadata); JudgeKey is "" when it was not,
// and the secrets directory's file is read as before.
type JudgeKeyHolder interface {
	JudgeKey() string
}

// CheckJudge reports what keeps spec's llm_judge from running (judge.Check), reading
// key files from the grader's secrets directory unless key is given.
func (gr *grader) CheckJudge(spec *task.TrialSpec, key string) error {
	return judge.Check(spec, gr.opts.judge.SecretsDir, key)
}

// judgeSnapshotName holds the trial's state while the judge's tools run.
const judgeSnapshotName = "pre_judge"

// judgeToolRun offers the judge its tools and runs them against the trial's state,
// putting the state back afterwards. Read-only is guaranteed twice: validation admits
// only agent tools declared category read and no writing builtin, and the grader
// snapshots the trial's DB before the judge's first tool call and restores it after the
// judge on every path, then checks the stable hash is the one it snapshotted (the
// stateful tool servers get the restored tables pushed, which also undoes what a tool
// changed only in its server). What lives outside the DB service (a file an MCP server
// writes, a call to the outside world) is not restored: that is why only tools declared
// read may be named.
type judgeToolRun struct {
	g     *gradeCtx
	taken bool
	hash  string // the trial's stable hash when the snapshot was taken
}

// offer resolves llm_judge.tools against the registered agent tools the way golden
// actions resolve (the exact name, else the single "<prefix>_<name>"); nil when the
// judge has no tools. Validation already refused names that match no agent tool of
// the task; a name that does not resolve here is a registration that differs from the
// task, and the judge errors before any call, naming it.
func (r *judgeToolRun) offer(j *task.LLMJudge) (*judge.Tools, error) {
	if len(j.Tools) == 0 {
		return nil, nil
	}
	schemas := r.g.env.AgentToolSchemas()
	registered := make([]string, len(schemas))
	byName := make(map[string]*runnerpb.ToolSchema, len(schemas))
	for i, s := range schemas {
		registered[i] = s.GetName()
		byName[s.GetName()] = s
	}
	offered := make([]*runnerpb.ToolSchema, 0, len(j.Tools))
	for i, name := range j.Tools {
		resolved, matches := resolveTool(name, registered)
		if resolved == "" {
			return nil, fmt.Errorf("llm_judge.tools[%d] (%s) %s; registered agent tools: [%s]", i, name,
				unresolvedReason(name, matches, "agent"), strings.Join(registered, ", "))
		}
		offered = append(offered, byName[resolved])
	}
	tools, err := judge.NewTools(offered, r.call)
	if err != nil {
		return nil, fmt.Errorf("llm_judge.tools: %w", err)
	}
	return tools, nil
}

// call runs one judge tool call through Env.Replay (the adapter ExecuteTool uses,
// within the tool's budget, never recorded), after snapshotting the trial's state.
func (r *judgeToolRun) call(ctx context.Context, name string, args json.RawMessage) (task.ToolCallStatus, string, error) {
	if err := r.snapshot(ctx); err != nil {
		return "", "", err
	}
	return r.g.env.Replay(ctx, name, args)
}

// snapshot saves the trial's state before the judge's first tool call, after the tool
// servers' tables are in the DB service, so the snapshot is the whole truth.
func (r *judgeToolRun) snapshot(ctx context.Context) error {
	if r.taken {
		return nil
	}
	g := r.g
	if err := g.syncState(ctx); err != nil {
		return err
	}
	db := g.env.DB()
	h, err := db.Hash(ctx, g.id)
	if err != nil {
		return fmt.Errorf("hash the trial's state before the judge's tool calls: %w", err)
	}
	if _, err := db.Snapshot(ctx, g.id, judgeSnapshotName); err != nil {
		return fmt.Errorf("snapshot the trial's state as %s before the judge's tool calls: %w", judgeSnapshotName, err)
	}
	r.taken, r.hash = true, h.StableHash
	return nil
}

// restore puts the snapshotted state back, on a context detached from the caller's
// cancellation (a cancelled grade must still leave the trial as the agent left it),
// and checks its stable hash. Nothing to do when no tool ran.
func (r *judgeToolRun) restore(ctx context.Context) error {
	if !r.taken {
		return nil
	}
	g := r.g
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.opts.restoreTimeout)
	defer cancel()
	db := g.env.DB()
	if _, err := db.Restore(rctx, g.id, judgeSnapshotName); err != nil {
		return fmt.Errorf("restoring %s (the trial's database may hold what the judge's tools changed): %w", judgeSnapshotName, err)
	}
	if err := g.env.PushToTools(rctx); err != nil {
		return fmt.Errorf("loading the state restored from %s into the tool servers: %w", judgeSnapshotName, err)
	}
	h, err := db.Hash(rctx, g.id)
	if err != nil {
		return fmt.Errorf("hashing the state restored from %s: %w", judgeSnapshotName, err)
	}
	if h.StableHash != r.hash {
		return fmt.Errorf("after restoring %s the trial's stable state hashes to %s, not the %s it held before the judge's tool calls",
			judgeSnapshotName, h.StableHash, r.hash)
	}
	if err := db.DeleteSnapshot(rctx, g.id, judgeSnapshotName); err != nil {
		// The state is back; a leftover snapshot only costs memory and is replaced by
		// the next grade.
		g.opts.log.V(1).Info("deleting the pre_judge snapshot failed", "trial", g.id, "error", err.Error())
	}
	return nil
}
