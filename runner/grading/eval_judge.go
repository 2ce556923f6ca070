package grading

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"tolokaforge.io/operator/api/llm"
	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner/grading/gradefmt"
)

// judgeOptions configure the LLM rubric judge.
type judgeOptions struct {
	models     JudgeModelFactory
	secretsDir string
	timeout    time.Duration
}

func defaultJudgeOptions() judgeOptions {
	return judgeOptions{secretsDir: DefaultSecretsDir, timeout: DefaultJudgeTimeout}
}

// WithJudgeModels sets how the judge's model is built from TrialSpec.judge (default
// LLMJudgeModels with the grader's logger).
func WithJudgeModels(f JudgeModelFactory) Option { return func(o *options) { o.judge.models = f } }

// WithSecretsDir sets the directory the judge's key files are read from (default
// DefaultSecretsDir); TrialSpec.judge.api_key_env names a file in it.
func WithSecretsDir(dir string) Option { return func(o *options) { o.judge.secretsDir = dir } }

// WithJudgeTimeout bounds one trial's whole judge run; d <= 0 keeps the default.
func WithJudgeTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.judge.timeout = d
		}
	}
}

func (o *options) judgeModels() JudgeModelFactory {
	if o.judge.models != nil {
		return o.judge.models
	}
	return LLMJudgeModels(llm.Options{Log: o.log.WithName("judge")})
}

// judgeEvaluator runs the rubric judge (grading-config.md, "LLM judge").
type judgeEvaluator struct{}

func (judgeEvaluator) Name() string      { return evalLLMJudge }
func (judgeEvaluator) Component() string { return task.ComponentLLMJudge }

// judgeOutcome is what the judge run leaves for the Grade beside its verdict.
type judgeOutcome struct {
	status  runnerpb.JudgeStatus
	results []*runnerpb.CriterionResult
	report  *runnerpb.JudgeReport
}

// apply writes the judge's fields into the Grade.
func (o *judgeOutcome) apply(g *runnerpb.Grade) {
	if o == nil {
		return
	}
	g.JudgeStatus = o.status
	g.CriterionResults = o.results
	g.JudgeReport = o.report
}

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
	out, score, err := runJudge(ctx, g, j)
	g.judge = out
	if err != nil {
		g.opts.log.Info("judge errored", "trial", g.id, "error", err.Error(),
			"calls", out.report.Calls, "cost_usd", out.report.CostUsd)
		if g.judgeHasShare() {
			// Fail loud: the component is incomplete, and a grade without it would be
			// a score the trial never earned (or lost).
			return verdict{}, &Error{Msg: "Grading error: llm_judge: JUDGE_STATUS_ERRORED (no score; llm_judge carries a weight share, so the grade cannot be computed without it): " + err.Error(), Cause: err}
		}
		return verdict{segment: "Judge: errored, no score (llm_judge carries no weight share): " + err.Error()}, nil
	}
	return verdict{scored: true, score: score, segment: judgeSegment(score, out.results)}, nil
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

// runJudge makes the judge's calls. The outcome is never nil; its report carries what
// was spent even when the run errored.
func runJudge(ctx context.Context, g *gradeCtx, j *task.LLMJudge) (*judgeOutcome, float64, error) {
	out := &judgeOutcome{status: runnerpb.JudgeStatus_JUDGE_STATUS_ERRORED, report: &runnerpb.JudgeReport{}}
	fail := func(err error) (*judgeOutcome, float64, error) { return out, 0, err }

	cfg := g.env.Spec().Judge
	if cfg == nil {
		return fail(fmt.Errorf("llm_judge.model_ref %q names TrialSpec.judge, but the trial was registered without a judge model config", j.ModelRef))
	}
	if len(j.Tools) > 0 {
		return fail(fmt.Errorf("llm_judge.tools %v: read-only judge tools are not supported by this runner; remove llm_judge.tools "+
			"(the judge already sees every tool call and its result in the transcript)", j.Tools))
	}
	key, err := readJudgeKey(g.opts.judge.secretsDir, cfg)
	if err != nil {
		return fail(err)
	}
	model, err := g.opts.judgeModels()(cfg, key)
	if err != nil {
		return fail(fmt.Errorf("build the judge model: %w", err))
	}

	conv := judgePrompt(g.timeline, j)
	maxCalls := task.DefaultJudgeMaxCalls
	if j.MaxCalls != nil {
		maxCalls = *j.MaxCalls
	}
	if maxCalls < 1 {
		return fail(fmt.Errorf("llm_judge.max_calls %d leaves the judge no call", maxCalls))
	}
	jctx, cancel := context.WithTimeout(ctx, g.opts.judge.timeout)
	defer cancel()

	// No tools are offered, so one answered call settles the judge and max_calls
	// (>= 1) is never the limit. An invalid answer is not asked again: that would
	// spend calls to hide a judge that cannot follow the schema.
	answer, calls, usage, err := model.Complete(jctx, conv, nil)
	addUsage(out.report, usage)
	if err != nil {
		out.report.TranscriptJson = transcriptJSON(conv)
		if jctx.Err() != nil && ctx.Err() == nil {
			return fail(fmt.Errorf("the judge did not answer within %s: %w", g.opts.judge.timeout, err))
		}
		return fail(fmt.Errorf("judge call failed: %w", err))
	}
	conv = append(conv, task.Message{Role: task.RoleAssistant, Content: answer, ToolCalls: calls})
	out.report.TranscriptJson = transcriptJSON(conv)
	if len(calls) > 0 {
		names := make([]string, len(calls))
		for i, c := range calls {
			names[i] = c.Function.Name
		}
		return fail(fmt.Errorf("the judge called tools %v, but none were offered", names))
	}

	results, score, err := parseJudgeAnswer(answer, j.Rubric.Criteria)
	if err != nil {
		return fail(err)
	}
	out.status = runnerpb.JudgeStatus_JUDGE_STATUS_COMPLETED
	out.results = results
	return out, score, nil
}

func addUsage(r *runnerpb.JudgeReport, u JudgeUsage) {
	r.Calls += int32(u.Calls)
	r.PromptTokens += int32(u.PromptTokens)
	r.CompletionTokens += int32(u.CompletionTokens)
	r.ReasoningTokens += int32(u.ReasoningTokens)
	r.CostUsd += u.CostUSD
}

// transcriptJSON is the judge's conversation for the audit channel.
func transcriptJSON(conv []task.Message) string {
	b, err := json.Marshal(conv)
	if err != nil {
		return ""
	}
	return string(b)
}

// judgeSegment is the llm_judge reasons segment: "Judge: score=… (…)", naming every
// criterion that was not met with its score and the judge's justification.
func judgeSegment(score float64, results []*runnerpb.CriterionResult) string {
	met := 0
	var unmet []string
	for _, r := range results {
		if r.Met {
			met++
			continue
		}
		s := fmt.Sprintf("%s not met (score %s)", r.Id, gradefmt.Score(r.Score))
		if j := strings.TrimSpace(r.Justification); j != "" {
			s += ": " + clipReason(j)
		}
		unmet = append(unmet, s)
	}
	detail := fmt.Sprintf("%d/%d criteria met", met, len(results))
	if len(unmet) > 0 {
		detail += "; " + strings.Join(unmet, "; ")
	}
	return fmt.Sprintf("Judge: score=%s (%s)", gradefmt.Score(score), detail)
}

func clipReason(s string) string {
	const max = 200
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}

// JudgeChecker is implemented by the Grader New returns: RegisterTrial asks it, so a
// trial whose judge could never run is refused before the agent spends a token.
type JudgeChecker interface {
	CheckJudge(spec *task.TrialSpec) error
}

// CheckJudge reports what keeps spec's llm_judge from running: no TrialSpec.judge,
// judge tools, no judge client, or a key file that is not there. The key is read and
// dropped; grading reads it again (a rotated Secret is picked up).
func (gr *grader) CheckJudge(spec *task.TrialSpec) error {
	if spec == nil || spec.Task == nil || spec.Task.Grading == nil {
		return nil
	}
	cfg := spec.Task.Grading
	j := cfg.LLMJudge
	if j == nil || cfg.GradingMethod == task.GradingTestExecution {
		return nil
	}
	switch {
	case spec.Judge == nil:
		return fmt.Errorf("task.grading.llm_judge.model_ref %q names TrialSpec.judge, but the trial spec carries no judge model config", j.ModelRef)
	case len(j.Tools) > 0:
		return fmt.Errorf("task.grading.llm_judge.tools %v: read-only judge tools are not supported by this runner", j.Tools)
	}
	if err := llm.CheckConfig("judge", spec.Judge); err != nil {
		return err
	}
	if _, err := readJudgeKey(gr.opts.judge.secretsDir, spec.Judge); err != nil {
		return err
	}
	return nil
}
