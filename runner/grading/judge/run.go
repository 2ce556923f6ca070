package judge

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
	"tolokaforge.io/operator/runner/grading/timeline"
)

// Options configure the LLM rubric judge; the grader's With* options set them.
type Options struct {
	// Models builds the judge's model; Run needs it set (the grader defaults it to
	// LLMModels with its logger).
	Models     ModelFactory
	SecretsDir string
	// Key is the judge's key the host gave for this one trial (RegisterTrial
	// metadata on a slot, where no per-Trial file can be mounted); when set it
	// is the key, whatever api_key_env names, and SecretsDir is not read.
	// Never logged, never in an error.
	Key     string
	Timeout time.Duration
}

// DefaultOptions are the judge's options before any grader option.
func DefaultOptions() Options {
	return Options{SecretsDir: DefaultSecretsDir, Timeout: defaultTimeout}
}

// Outcome is what the judge run leaves for the Grade beside its verdict.
type Outcome struct {
	Status  runnerpb.JudgeStatus
	Results []*runnerpb.CriterionResult
	// Report is what the provider billed; the grader attaches it to a failed grade.
	Report *runnerpb.JudgeReport
}

// Apply writes the judge's fields into the Grade.
func (o *Outcome) Apply(g *runnerpb.Grade) {
	if o == nil {
		return
	}
	g.JudgeStatus = o.Status
	g.CriterionResults = o.Results
	g.JudgeReport = o.Report
}

// Run makes the judge's calls over the trial's timeline. tools are the read-only agent
// tools llm_judge.tools offers (nil when it names none); the caller owns the trial's
// state around them. max_calls bounds the judge's LLM calls and tool calls together.
// The outcome is never nil; its report carries what was spent even when the run
// errored.
func Run(ctx context.Context, tl *timeline.Timeline, j *task.LLMJudge, cfg *task.ModelConfig, o Options, tools *Tools) (*Outcome, float64, error) {
	out := &Outcome{Status: runnerpb.JudgeStatus_JUDGE_STATUS_ERRORED, Report: &runnerpb.JudgeReport{}}
	fail := func(err error) (*Outcome, float64, error) { return out, 0, err }

	if cfg == nil {
		return fail(fmt.Errorf("llm_judge.model_ref %q names TrialSpec.judge, but the trial was registered without a judge model config", j.ModelRef))
	}
	if len(j.Tools) > 0 && tools == nil {
		return fail(fmt.Errorf("llm_judge.tools %v: the grader offered the judge none of them", j.Tools))
	}
	maxCalls := task.DefaultJudgeMaxCalls
	if j.MaxCalls != nil {
		maxCalls = *j.MaxCalls
	}
	if maxCalls < 1 {
		return fail(fmt.Errorf("llm_judge.max_calls %d leaves the judge no call", maxCalls))
	}
	if tools != nil && maxCalls < task.MinJudgeMaxCallsWithTools {
		return fail(fmt.Errorf("llm_judge.max_calls %d leaves no call for the judge's tools %v (a tool call and the answer each take one after the first call)",
			maxCalls, tools.names))
	}
	key := o.Key
	if key == "" {
		var err error
		if key, err = readJudgeKey(o.SecretsDir, cfg); err != nil {
			return fail(err)
		}
	}
	model, err := o.Models(cfg, key)
	if err != nil {
		return fail(fmt.Errorf("build the judge model: %w", err))
	}

	conv := judgePrompt(tl, j)
	if tools != nil {
		conv[0].Content += toolInstructions(tools.names, maxCalls)
	}
	jctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	callErr := func(err error) error {
		if jctx.Err() != nil && ctx.Err() == nil {
			return fmt.Errorf("the judge did not answer within %s: %w", o.Timeout, err)
		}
		return err
	}

	// used counts LLM calls and tool calls together. Tools are offered on a call only
	// while a tool call and the answer still fit after it, so the last call is offered
	// none and must be the answer. An invalid answer is not asked again: that would
	// spend calls to hide a judge that cannot follow the schema.
	var answer string
	for used := 0; ; {
		var offer json.RawMessage
		if tools != nil && used+3 <= maxCalls {
			offer = tools.encoded
		}
		content, calls, usage, err := model.Complete(jctx, conv, offer)
		used++
		addUsage(out.Report, usage)
		if err != nil {
			out.Report.TranscriptJson = transcriptJSON(conv)
			return fail(callErr(fmt.Errorf("judge call failed: %w", err)))
		}
		conv = append(conv, task.Message{Role: task.RoleAssistant, Content: content, ToolCalls: calls})
		out.Report.TranscriptJson = transcriptJSON(conv)
		if len(calls) == 0 {
			answer = content
			break
		}
		if offer == nil {
			names := toolNames(calls)
			if tools == nil {
				return fail(fmt.Errorf("the judge called tools %v, but none were offered", names))
			}
			return fail(fmt.Errorf("llm_judge.max_calls %d exhausted: the judge called tools %v on its last call, which is offered none and must be the answer",
				maxCalls, names))
		}
		for i, c := range calls {
			// The answer needs a call of its own after the tools.
			if used+2 > maxCalls {
				return fail(fmt.Errorf("llm_judge.max_calls %d exhausted before the judge answered (%d LLM calls, %d tool calls): "+
					"its tool calls %v were not run, the last call being kept for the answer",
					maxCalls, out.Report.Calls, out.Report.ToolCalls, toolNames(calls[i:])))
			}
			used++
			out.Report.ToolCalls++
			result, err := tools.run(jctx, c)
			if err != nil {
				out.Report.TranscriptJson = transcriptJSON(conv)
				return fail(callErr(err))
			}
			conv = append(conv, task.Message{Role: task.RoleTool, Content: result, ToolCallID: c.ID})
			out.Report.TranscriptJson = transcriptJSON(conv)
		}
	}

	results, score, err := parseJudgeAnswer(answer, j.Rubric.Criteria)
	if err != nil {
		return fail(err)
	}
	out.Status = runnerpb.JudgeStatus_JUDGE_STATUS_COMPLETED
	out.Results = results
	return out, score, nil
}

// toolInstructions tells a judge with tools what they are for and what they cost.
func toolInstructions(names []string, maxCalls int) string {
	return fmt.Sprintf("\nYou may call the tools offered (%s) to look at the trial's final state before you answer; "+
		"they are read-only and what they return is evidence, like the transcript. You have at most %d calls in all: "+
		"each reply of yours and each tool call counts one, and your last call is offered no tools and must be the answer.\n",
		strings.Join(names, ", "), maxCalls)
}

func toolNames(calls []task.ToolCall) []string {
	names := make([]string, len(calls))
	for i, c := range calls {
		names[i] = c.Function.Name
	}
	return names
}

func addUsage(r *runnerpb.JudgeReport, u Usage) {
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

// Segment is the llm_judge reasons segment: "Judge: score=… (…)", naming every
// criterion that was not met with its score and the judge's justification.
func Segment(score float64, results []*runnerpb.CriterionResult) string {
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

// Check reports what keeps spec's llm_judge from running: no TrialSpec.judge, no judge
// client, or, when the host gave no key for the trial (key ""), a key file that is not
// in secretsDir (llm_judge.tools is checked against the task's agent tools when the
// spec decodes, and against the registered tools when the judge runs). The key is read
// and dropped; grading reads it again (a rotated Secret is picked up).
func Check(spec *task.TrialSpec, secretsDir, key string) error {
	if spec == nil || spec.Task == nil || spec.Task.Grading == nil {
		return nil
	}
	cfg := spec.Task.Grading
	j := cfg.LLMJudge
	if j == nil || cfg.GradingMethod == task.GradingTestExecution {
		return nil
	}
	if spec.Judge == nil {
		return fmt.Errorf("task.grading.llm_judge.model_ref %q names TrialSpec.judge, but the trial spec carries no judge model config", j.ModelRef)
	}
	if err := llm.CheckConfig("judge", spec.Judge); err != nil {
		return err
	}
	if key != "" {
		return nil
	}
	if _, err := readJudgeKey(secretsDir, spec.Judge); err != nil {
		return err
	}
	return nil
}
