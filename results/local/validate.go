package local

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"tolokaforge.io/operator/api/result"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/api/task/pack"
	"tolokaforge.io/operator/controllers/host"
	"tolokaforge.io/operator/runner/pyenv"
)

// Verdict is one task's validation result.
type Verdict struct {
	Dir, TaskID string
	Pass        bool
	// Score is the grade's score, StateScore the state checks' (nil when
	// the task has none or the trial was not graded).
	Score      float64
	StateScore *float64
	// Components is every component the task configures, in component order, with
	// what grading it on the oracle's transcript gave.
	Components []componentResult
	Outcome    string
	Why        string
	// Skipped: the task cannot run on this machine (a terminal task, whose
	// container only a cluster starts); not a failure of the pack.
	Skipped bool
}

// componentResult is one configured component's grade in a validation run.
type componentResult struct {
	Name string
	// Score is nil when the component was not scored (Problem says why).
	Score   *float64
	Problem string
}

func (c componentResult) String() string {
	if c.Score == nil {
		return c.Name + " not scored (" + c.Problem + ")"
	}
	return fmt.Sprintf("%s=%.4g", c.Name, *c.Score)
}

// ValidatePack converts the pack in dir and runs its golden path with the oracle on s,
// graded by every component the task configures: the state checks decide whether the
// golden path reaches the expected state, and the oracle's episode is the synthetic
// golden transcript that transcript rules, trace checks, custom checks and the judge
// must grade (no pack format carries a golden transcript of its own). Diagnostics go
// to diag.
func ValidatePack(ctx context.Context, s *Stack, dir string, opts pack.Options, run OracleRun, strict bool, diag io.Writer) Verdict {
	v := Verdict{Dir: dir, TaskID: "?"}
	if opts.Describe == nil {
		opts.Describe = pyenv.Describer(s.Python, 0)
	}
	conv, err := pack.Convert(dir, opts)
	if err != nil {
		v.Why = err.Error()
		return v
	}
	v.TaskID = conv.Description.TaskID
	for _, d := range conv.Diagnostics {
		fmt.Fprintln(diag, d.String())
	}
	maxTurns := 0
	if conv.MaxTurns != nil {
		maxTurns = int(*conv.MaxTurns)
	}
	return ValidateTask(ctx, s, v, conv.Description, conv.InitialUserMessage, maxTurns, run, strict)
}

// ValidateTask is ValidatePack's run and verdict for a TaskDescription: the oracle's
// trial graded by every component desc configures. v carries Dir for the verdict.
//
// desc is validated first, with the validation RegisterTrial runs: a grading block that
// could only fail after a trial spent its budget is refused before the oracle (or its
// judge) starts, naming the key, whether desc came from a pack or was built in Go.
func ValidateTask(ctx context.Context, s *Stack, v Verdict, desc *task.TaskDescription, initialUserMessage string, maxTurns int, run OracleRun, strict bool) Verdict {
	v.TaskID = desc.TaskID
	if err := desc.Validate(); err != nil {
		v.Why = "refused before any trial runs: " + err.Error()
		return v
	}
	if err := CheckLocal(desc); err != nil {
		v.Skipped, v.Why = true, "not run here: "+err.Error()
		return v
	}
	if err := s.CheckPython(ctx, desc); err != nil {
		v.Why = "refused before any trial runs: " + err.Error()
		return v
	}
	run.AllComponents = true
	res := s.RunOracle(ctx, desc, initialUserMessage, maxTurns, 0, run)
	return judge(v, res.Outcome, res.Reason, res.Message, res.Grade, strict, configuredComponents(desc), hasGoldenPath(desc))
}

// OracleVerdict is ValidateTask's verdict on an oracle trial of desc that ran
// elsewhere (`trial run --agent oracle`, with its own artifacts and attempts) and
// was graded with OracleComponents: the golden path must reach the expected state
// and every component desc configures must grade the oracle's episode.
func OracleVerdict(desc *task.TaskDescription, res host.AttemptResult, strict bool) Verdict {
	return judge(Verdict{TaskID: desc.TaskID}, res.Outcome, res.Reason, res.Message, res.Grade, strict, configuredComponents(desc), hasGoldenPath(desc))
}

// hasGoldenPath reports whether desc declares golden actions for the oracle to
// replay. Many upstream packs declare none (an answer file to write, a
// Terminal-Bench task without its solution): the oracle cannot solve those, so
// their validation proves that the task registers, runs and that every configured
// component grades it, and only --strict asks the oracle's run to score 1. A
// refusal task (hash_enabled with golden_actions: []) has a golden path: nothing.
func hasGoldenPath(td *task.TaskDescription) bool {
	g := td.Grading
	if g == nil || g.StateChecks == nil {
		return false
	}
	sc := g.StateChecks
	// golden_actions: [] under an enabled hash is a golden path too: a refusal
	// task, which the oracle solves by changing nothing.
	return len(sc.GoldenActions) > 0 || (sc.HashEnabled && sc.GoldenActions != nil)
}

// configuredComponents is what a validation run must see graded: nothing for
// test_execution, whose verifier replaces the components.
func configuredComponents(td *task.TaskDescription) []string {
	g := td.Grading
	if g == nil || g.GradingMethod == task.GradingTestExecution {
		return nil
	}
	return g.ConfiguredComponents()
}

// judge decides a task's verdict from its oracle trial. A golden replay proves the
// state checks; every other configured component must grade the oracle's transcript
// (a score, whatever it is), and only --strict requires the whole grade to be 1.
func judge(v Verdict, outcome evalv1.AttemptOutcome, reason, message string, g *runnerpb.Grade, strict bool, configured []string, golden bool) Verdict {
	v.Outcome = string(outcome)
	if outcome == evalv1.OutcomeGradingFailed {
		v.Why = fmt.Sprintf("a grading component cannot grade the oracle's transcript (%s): %s", failingComponent(message), message)
		return v
	}
	if (outcome != evalv1.OutcomePassed && outcome != evalv1.OutcomeFailed) || g == nil {
		v.Why = fmt.Sprintf("the oracle's trial ended %s (%s): %s", outcome, reason, message)
		return v
	}
	v.Score = g.GetScore()
	read := result.FromWire(g)
	v.StateScore = read.ComponentScore(task.ComponentStateChecks)
	var unscored []string
	for _, name := range configured {
		cr := componentResult{Name: name}
		if s := read.ComponentScore(name); s != nil {
			cr.Score = s
		} else {
			cr.Problem = unscoredWhy(read, name)
			unscored = append(unscored, cr.String())
		}
		v.Components = append(v.Components, cr)
	}
	switch {
	case len(unscored) > 0:
		v.Why = "configured components did not grade the oracle's transcript: " + strings.Join(unscored, "; ") + "; reasons: " + g.GetReasons()
	case !golden && strict && v.Score != 1:
		v.Why = "--strict: no golden path to verify and the oracle's run scored below 1.0: " + g.GetReasons()
	case !golden:
		v.Pass = true
		v.Why = fmt.Sprintf("no golden path to verify (the task declares no golden_actions): the oracle's run registered, ran and was graded%s; it scored %s (only --strict requires 1): %s",
			gradedBy(v.Components), strconv.FormatFloat(v.Score, 'g', 6, 64), g.GetReasons())
	case v.StateScore == nil:
		v.Why = "the golden path decides nothing: the task has no state checks to replay it against; reasons: " + g.GetReasons()
	case *v.StateScore != 1:
		v.Why = "the golden path does not reach the expected state: " + g.GetReasons()
	case strict && v.Score != 1:
		v.Why = "--strict: the grade is below 1.0: " + g.GetReasons()
	default:
		v.Pass = true
		v.Why = "golden path verified"
		if len(v.Components) > 0 {
			parts := make([]string, len(v.Components))
			for i, c := range v.Components {
				parts[i] = c.String()
			}
			v.Why += "; every configured component graded: " + strings.Join(parts, ", ")
		}
		if v.Score != 1 {
			v.Why += "; below 1 on the oracle's transcript (only --strict requires 1): " + notStateReasons(g.GetReasons())
		}
	}
	return v
}

// gradedBy names the components that graded a run, for a verdict sentence.
func gradedBy(cs []componentResult) string {
	if len(cs) == 0 {
		return ""
	}
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = c.String()
	}
	return " by every configured component (" + strings.Join(parts, ", ") + ")"
}

// unscoredWhy says why a configured component has no score.
func unscoredWhy(g *result.Grade, name string) string {
	if c, ok := g.Component(name); ok && name == task.ComponentLLMJudge && c.Status == result.Errored {
		return "JUDGE_STATUS_ERRORED"
	}
	return "skipped or errored; see the reasons"
}

// componentMarkers find the component a grading error is about: the component's
// name, or the prefix of its reasons segment.
var componentMarkers = []struct{ marker, component string }{
	{task.ComponentStateChecks, task.ComponentStateChecks},
	{task.ComponentTranscriptRules, task.ComponentTranscriptRules},
	{task.ComponentTraceChecks, task.ComponentTraceChecks},
	{task.ComponentLLMJudge, task.ComponentLLMJudge},
	{task.ComponentCustomChecks, task.ComponentCustomChecks},
	{"golden", task.ComponentStateChecks},
	{"Hash grading", task.ComponentStateChecks},
	{"JSONPath", task.ComponentStateChecks},
	{"db_probes", task.ComponentStateChecks},
	{"Transcript", task.ComponentTranscriptRules},
	{"Trace check", task.ComponentTraceChecks},
	{"judge", task.ComponentLLMJudge},
	{"Judge", task.ComponentLLMJudge},
	{"Custom check", task.ComponentCustomChecks},
	{"custom check", task.ComponentCustomChecks},
}

// failingComponent names the component a grading error message is about (the
// earliest mention), or "component not named" when none is.
func failingComponent(message string) string {
	best, at := "component not named", -1
	for _, m := range componentMarkers {
		if i := strings.Index(message, m.marker); i >= 0 && (at < 0 || i < at) {
			best, at = m.component, i
		}
	}
	return best
}

// notStateReasons keeps the reasons that are not the state checks'.
func notStateReasons(reasons string) string {
	var keep []string
	for _, r := range strings.Split(reasons, " | ") {
		if !strings.HasPrefix(r, "State:") && !strings.HasPrefix(r, "JSONPath:") {
			keep = append(keep, r)
		}
	}
	sort.Strings(keep)
	return strings.Join(keep, " | ")
}
