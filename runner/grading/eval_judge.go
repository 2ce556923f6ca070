package grading

import (
	"context"
	"time"

	"tolokaforge.io/operator/api/llm"
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
	out, score, err := judge.Run(ctx, g.timeline, j, g.env.Spec().Judge, jo)
	g.judge = out
	if err != nil {
		g.opts.log.Info("judge errored", "trial", g.id, "error", err.Error(),
			"calls", out.Report.Calls, "cost_usd", out.Report.CostUsd)
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
	CheckJudge(spec *task.TrialSpec) error
}

// CheckJudge reports what keeps spec's llm_judge from running (judge.Check), reading
// key files from the grader's secrets directory.
func (gr *grader) CheckJudge(spec *task.TrialSpec) error {
	return judge.Check(spec, gr.opts.judge.SecretsDir)
}
