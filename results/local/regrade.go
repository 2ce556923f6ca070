package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
	"tolokaforge.io/operator/api/result"

	"github.com/go-logr/logr"
	"sigs.k8s.io/yaml"

	"tolokaforge.io/operator/api/artifacts"
	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/host"
)

// regradeDirPrefix names a regrade's output directory, regrade-<timestamp>,
// created beside the originals; the report skips such directories when it
// walks the originals.
const regradeDirPrefix = "regrade-"

// regradeSummaryFile is the regrade's own record in its directory.
const regradeSummaryFile = "regrade.yaml"

// recordedTrial is one trial read back from its artifacts directory.
type recordedTrial struct {
	// Dir is trials/<task_id>/<index> and Rel that path relative to the
	// regraded directory.
	Dir, Rel   string
	TaskID     string
	TrialIndex int
	// Record is who ran it, carried into the regrade's own artifacts.
	Record      result.Record
	Outcome     string
	Termination task.TerminationReason
	Turns       int
	// Messages is the transcript, leading system message included.
	Messages  []task.Message
	ToolCalls []task.RecordedToolCall
	// Original is the trial's grade (nil when it ended without one).
	Original *GradeSummary
}

// GradeSummary is what a regrade compares: the score, the verdict, the
// reasons and which components were evaluated.
type GradeSummary struct {
	Score      float64            `json:"score"`
	Pass       bool               `json:"binary_pass"`
	Reasons    string             `json:"reasons"`
	GradedBy   string             `json:"graded_by,omitempty"`
	Components map[string]float64 `json:"components,omitempty"`
	// JudgeStatus ERRORED marks a judge that ran without a score.
	JudgeStatus string `json:"judge_status,omitempty"`
	// grade is api/result's reading, which the summary is written from.
	grade *result.Grade
}

// summaryFrom is the regrade's record of a grade read by api/result.
func summaryFrom(g *result.Grade, gradedBy, judgeStatus string) *GradeSummary {
	return &GradeSummary{Score: g.Score, Pass: g.Pass, Reasons: g.Reasons, GradedBy: gradedBy,
		Components: g.Scores(), JudgeStatus: judgeStatus, grade: g}
}

// evaluated lists the components the grade evaluated, in the spec's order.
func (g *GradeSummary) evaluated() []string { return g.grade.Evaluated() }

type recordedTrajectory struct {
	result.Record
	TaskID            string                  `json:"task_id"`
	TrialIndex        int                     `json:"trial_index"`
	Outcome           string                  `json:"outcome"`
	TerminationReason string                  `json:"termination_reason"`
	Turns             int                     `json:"turns"`
	Messages          []task.Message          `json:"messages"`
	ToolCalls         []task.RecordedToolCall `json:"tool_calls"`
}

// findRecordedTrials reads every trial (trials/<task_id>/<index>/ holding a
// trajectory.yaml) at or below dir, earlier regrades and attempts/<n>/
// copies left out.
func findRecordedTrials(dir string) ([]recordedTrial, error) {
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("artifacts %s: %w", dir, err)
	}
	st, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("artifacts %s: %w", dir, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("artifacts %s: not a directory", dir)
	}
	var out []recordedTrial
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), regradeDirPrefix) || strings.HasPrefix(d.Name(), "."+regradeDirPrefix)) {
			return filepath.SkipDir
		}
		if d.IsDir() || d.Name() != artifacts.TrajectoryFile {
			return nil
		}
		parts := strings.Split(filepath.ToSlash(p), "/")
		n := len(parts)
		if n < 4 || parts[n-4] != "trials" {
			return nil
		}
		if _, err := strconv.Atoi(parts[n-2]); err != nil {
			return nil
		}
		rt, err := readRecordedTrial(filepath.Dir(p))
		if err != nil {
			return err
		}
		rt.Rel, _ = filepath.Rel(root, rt.Dir)
		rt.Rel = filepath.ToSlash(rt.Rel)
		out = append(out, rt)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("artifacts %s: %w", dir, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("artifacts %s: no trials/<task_id>/<index>/%s found", dir, artifacts.TrajectoryFile)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Rel < out[j].Rel })
	return out, nil
}

func readRecordedTrial(dir string) (recordedTrial, error) {
	rt := recordedTrial{Dir: dir}
	b, err := os.ReadFile(filepath.Join(dir, artifacts.TrajectoryFile))
	if err != nil {
		return rt, err
	}
	var tr recordedTrajectory
	if err := yaml.Unmarshal(b, &tr); err != nil {
		return rt, fmt.Errorf("%s: %w", filepath.Join(dir, artifacts.TrajectoryFile), err)
	}
	rt.TaskID, rt.TrialIndex, rt.Outcome, rt.Turns, rt.Record = tr.TaskID, tr.TrialIndex, tr.Outcome, tr.Turns, tr.Record
	rt.Termination = task.TerminationReason(tr.TerminationReason)
	rt.Messages, rt.ToolCalls = tr.Messages, tr.ToolCalls
	gb, err := os.ReadFile(filepath.Join(dir, artifacts.GradeFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return rt, err
	default:
		f, err := result.ParseFile(gb)
		if err != nil {
			return rt, fmt.Errorf("%s: %w", filepath.Join(dir, artifacts.GradeFile), err)
		}
		g, err := f.Grade()
		if err != nil {
			return rt, fmt.Errorf("%s: %w", filepath.Join(dir, artifacts.GradeFile), err)
		}
		rt.Original = summaryFrom(g, f.GradedBy, f.JudgeStatus)
	}
	return rt, nil
}

// LoadGradingFile reads a grading config (the TaskDescription's grading
// block, YAML or JSON) strictly, applies its defaults and validates it.
func LoadGradingFile(path string) (*task.GradingConfig, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("grading file: %w", err)
	}
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("grading file %s: neither JSON nor YAML: %w", path, err)
	}
	g, err := task.DecodeGradingConfig(js)
	if err != nil {
		return nil, fmt.Errorf("grading file %s: %w", path, err)
	}
	return g, nil
}

// RegradeOptions says what to regrade and how.
type RegradeOptions struct {
	// ArtifactsDir holds the trials to regrade; the results go to a new
	// regrade-<timestamp>/ directory in it.
	ArtifactsDir string
	// Task is the trials' task. Grading, when set, replaces its grading
	// config; GradingSource names where it came from (for the record).
	Task          *task.TaskDescription
	Grading       *task.GradingConfig
	GradingSource string
	// Components limits grading; nil grades what each original grade
	// evaluated (every configured component when it has no grade), and
	// AllComponents every configured one.
	Components    []string
	AllComponents bool
	// Now stamps the output directory (zero: the wall clock).
	Now   time.Time
	Stack StackConfig
	Log   logr.Logger
}

// regradedTrial is one trial's regrade.
type regradedTrial struct {
	Trial string `json:"trial"`
	// Components are the components asked for (empty: every configured).
	Components []string      `json:"components,omitempty"`
	Original   *GradeSummary `json:"original,omitempty"`
	Outcome    string        `json:"outcome"`
	Message    string        `json:"message,omitempty"`
	Regrade    *GradeSummary `json:"regrade,omitempty"`
	// Changed: the score or the verdict differs from the original's.
	Changed bool `json:"changed"`
	// Divergences are where the replay did not reproduce the recording
	// (a tool answering differently on the fresh state).
	Divergences []string `json:"divergences,omitempty"`
	// Skipped says why a trial was not regraded.
	Skipped string `json:"skipped,omitempty"`
}

// RegradeResult is the whole regrade, as regrade.yaml records it.
type RegradeResult struct {
	Dir        string          `json:"-"`
	RegradedAt time.Time       `json:"regraded_at"`
	Source     string          `json:"source"`
	TaskID     string          `json:"task_id"`
	Grading    string          `json:"grading"`
	Trials     []regradedTrial `json:"trials"`
}

// regradable are the terminations the runner grades: the others were
// scored by the host without a grade to replay.
func regradable(t task.TerminationReason) bool {
	return t == task.TerminationAgentDone || t == task.TerminationUserStop || t == task.TerminationMaxTurns
}

// Regrade replays the recorded tool calls of every trial of opts.Task under
// opts.ArtifactsDir on a fresh DB state, through a runner and a DB service
// started for it, and grades each with the task's (or the given) grading
// config; no model is called. The results go to
// <ArtifactsDir>/regrade-<timestamp>/ in the artifacts layout, with
// regrade.yaml beside them. Bad input (no such directory, no trial of the
// task, a grading config or task the runner refuses, a replay that did not
// reach grading) is an error and leaves nothing behind.
func Regrade(ctx context.Context, opts RegradeOptions) (*RegradeResult, error) {
	log := opts.Log
	if log.GetSink() == nil {
		log = logr.Discard()
	}
	desc, gradingName, err := regradeTask(opts)
	if err != nil {
		return nil, err
	}
	trials, err := trialsOfTask(opts.ArtifactsDir, desc.TaskID)
	if err != nil {
		return nil, err
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	now = now.UTC()
	res := &RegradeResult{RegradedAt: now, Source: opts.ArtifactsDir, TaskID: desc.TaskID, Grading: gradingName}
	todo := 0
	for _, rt := range trials {
		rg := regradedTrial{Trial: rt.Rel, Original: rt.Original}
		if !regradable(rt.Termination) {
			rg.Skipped = fmt.Sprintf("the trial ended with termination_reason %q, which the runner never grades (only agent_done, user_stop and max_turns replay to a grade)", rt.Termination)
		} else {
			todo++
		}
		res.Trials = append(res.Trials, rg)
	}
	if todo == 0 {
		return nil, fmt.Errorf("regrade: no trial of task %q under %s can be regraded: %s", desc.TaskID, opts.ArtifactsDir, res.Trials[0].Skipped)
	}

	// Everything goes to a hidden directory first and is renamed into place
	// only when every trial was graded, so a failed regrade leaves nothing.
	tmp, err := os.MkdirTemp(opts.ArtifactsDir, "."+regradeDirPrefix+"tmp-")
	if err != nil {
		return nil, fmt.Errorf("regrade: %w", err)
	}
	done := false
	defer func() {
		if !done {
			_ = os.RemoveAll(tmp)
		}
	}()
	cfg := opts.Stack
	if cfg.Log.GetSink() == nil {
		cfg.Log = log
	}
	stack, err := StartStack(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("regrade: %w", err)
	}
	defer func() {
		if err := stack.Stop(); err != nil {
			log.Error(err, "stopping the regrade's runner and DB service")
		}
	}()
	runID := regradeDirPrefix + now.Format("20060102T150405Z")
	for i, rt := range trials {
		if res.Trials[i].Skipped != "" {
			continue
		}
		if err := regradeTrial(ctx, stack, &desc, rt, &res.Trials[i], opts, tmp, runID, log); err != nil {
			return nil, err
		}
	}
	if res.Dir, err = publishRegrade(res, tmp, opts.ArtifactsDir, runID); err != nil {
		return nil, err
	}
	done = true
	return res, nil
}

// regradeTask is the task as the regrade grades it (opts.Grading in place
// of its own), refused before anything starts when the runner would refuse
// it or when it needs a model.
func regradeTask(opts RegradeOptions) (_ task.TaskDescription, gradingName string, _ error) {
	if opts.Task == nil {
		return task.TaskDescription{}, "", errors.New("regrade: no task")
	}
	desc := *opts.Task
	gradingName = "the task's"
	if opts.Grading != nil {
		g := *opts.Grading
		desc.Grading = &g
		gradingName = opts.GradingSource
	}
	if err := desc.Validate(); err != nil {
		return desc, "", fmt.Errorf("regrade: task %q with %s grading config: %w", desc.TaskID, gradingName, err)
	}
	if g := desc.Grading; g != nil && g.LLMJudge != nil && g.GradingMethod != task.GradingTestExecution {
		// The runner refuses a judge without a judge model, and a regrade
		// calls no model: say so before anything starts.
		return desc, "", fmt.Errorf("regrade: task %q: %s grading config has an llm_judge, which needs a model, and regrade calls none; "+
			"pass --grading with a config without llm_judge to regrade the other components", desc.TaskID, gradingName)
	}
	for i, c := range opts.Components {
		if !contains(task.ComponentNames(), c) {
			return desc, "", fmt.Errorf("regrade: components[%d]: %q is not one of %s", i, c, strings.Join(task.ComponentNames(), ", "))
		}
	}
	return desc, gradingName, nil
}

// trialsOfTask is every recorded trial of taskID under dir; none is an
// error naming the tasks that are there.
func trialsOfTask(dir, taskID string) ([]recordedTrial, error) {
	found, err := findRecordedTrials(dir)
	if err != nil {
		return nil, fmt.Errorf("regrade: %w", err)
	}
	var trials []recordedTrial
	var others []string
	for _, rt := range found {
		if rt.TaskID == taskID {
			trials = append(trials, rt)
		} else if !contains(others, rt.TaskID) {
			others = append(others, rt.TaskID)
		}
	}
	if len(trials) == 0 {
		return nil, fmt.Errorf("regrade: no trial of task %q under %s (found tasks: %s)", taskID, dir, strings.Join(others, ", "))
	}
	return trials, nil
}

// regradeTrial replays one trial into out and records its new grade in rg;
// a replay that does not reach grading is an error.
func regradeTrial(ctx context.Context, stack *Stack, desc *task.TaskDescription, rt recordedTrial, rg *regradedTrial,
	opts RegradeOptions, out, runID string, log logr.Logger) error {
	components := opts.Components
	switch {
	case opts.AllComponents:
		components = task.ComponentNames()
	case components == nil && rt.Original != nil && rt.Original.GradedBy != host.GradedByHost:
		components = rt.Original.evaluated()
	}
	if len(components) == 0 {
		components = task.ComponentNames()
	}
	rg.Components = components
	r := replayTrial(ctx, stack, desc, rt, components, out, runID, log)
	rg.Outcome, rg.Message = string(r.Outcome), r.Message
	rg.Divergences = divergences(rt, r)
	switch r.Outcome {
	case evalv1.OutcomePassed, evalv1.OutcomeFailed, evalv1.OutcomeGradingFailed:
	default:
		return fmt.Errorf("regrade: trial %s: the replay ended %s (%s): %s", rt.Rel, r.Outcome, r.Reason, r.Message)
	}
	switch {
	case r.Grade != nil && r.GradedBy == host.GradedByRunner:
		rg.Regrade = summaryOf(r.Grade)
		rg.Changed = rt.Original == nil || rt.Original.Score != rg.Regrade.Score || rt.Original.Pass != rg.Regrade.Pass
	case r.Outcome != evalv1.OutcomeGradingFailed:
		return fmt.Errorf("regrade: trial %s: the replay did not reach grading (termination %s): %s; divergences: %s",
			rt.Rel, r.TerminationReason, r.Message, strings.Join(rg.Divergences, "; "))
	default:
		rg.Changed = rt.Original != nil
	}
	return nil
}

// publishRegrade writes regrade.yaml into tmp and renames tmp into place
// as <artifactsDir>/<runID>[-N], returning that directory.
func publishRegrade(res *RegradeResult, tmp, artifactsDir, runID string) (string, error) {
	b, err := yaml.Marshal(res)
	if err != nil {
		return "", fmt.Errorf("regrade: render %s: %w", regradeSummaryFile, err)
	}
	if err := artifacts.WriteFileAtomic(filepath.Join(tmp, regradeSummaryFile), b); err != nil {
		return "", fmt.Errorf("regrade: %w", err)
	}
	// Never over an earlier regrade: a second one in the same second gets a
	// suffix.
	dir := filepath.Join(artifactsDir, runID)
	for n := 2; ; n++ {
		if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
			break
		}
		dir = filepath.Join(artifactsDir, runID+"-"+strconv.Itoa(n))
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", fmt.Errorf("regrade: %w", err)
	}
	return dir, nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func summaryOf(g *runnerpb.Grade) *GradeSummary {
	js := ""
	if g.GetJudgeStatus() != runnerpb.JudgeStatus_JUDGE_STATUS_UNSPECIFIED {
		js = g.GetJudgeStatus().String()
	}
	return summaryFrom(result.FromWire(g), host.GradedByRunner, js)
}

// replayTrial runs one recorded trial again with actors that say what the
// recording says, turn for turn, so the runner executes the same tool calls
// on a fresh state and grades the same transcript.
func replayTrial(ctx context.Context, s *Stack, desc *task.TaskDescription, rt recordedTrial, components []string, out, runID string, log logr.Logger) host.AttemptResult {
	agent, user := &replayActor{who: "agent"}, &replayActor{who: "user"}
	for _, m := range rt.Messages {
		turn := host.Turn{Content: m.Content, ToolCalls: m.ToolCalls}
		switch m.Role {
		case task.RoleAssistant:
			agent.turns = append(agent.turns, turn)
		case task.RoleUser:
			user.turns = append(user.turns, turn)
		}
	}
	maxTurns := rt.Turns + 1
	if rt.Termination == task.TerminationMaxTurns {
		maxTurns = max(rt.Turns, 1)
	}
	spec := task.NewTrialSpec(task.TrialSpecParams{
		Task:       desc,
		TrialIndex: rt.TrialIndex,
		RunID:      runID,
		AttemptID:  fmt.Sprintf("%s-%s-%d", runID, desc.TaskID, rt.TrialIndex),
		// The runner needs an agent config; the replay actor stands in for it.
		Agent:        &task.ModelConfig{Provider: task.ProviderOracle},
		DBServiceURL: s.DBServiceURL,
	})
	return host.RunAttempt(ctx, host.AttemptConfig{
		Runner:            s.Runner,
		Spec:              spec,
		MaxTurns:          maxTurns,
		TrialTimeout:      defaultOracleTimeout,
		Agent:             agent,
		User:              user,
		ArtifactsDir:      out,
		GradingComponents: components,
		Record:            rt.Record,
		TrialIndex:        rt.TrialIndex,
		AttemptNumber:     1,
		Log:               log.WithName("regrade"),
	})
}

// replayActor says its recorded turns in order; running out is an error
// that ends the replay (it diverged from the recording).
type replayActor struct {
	who   string
	turns []host.Turn
	next  int
}

func (a *replayActor) Next(_ context.Context, _ []task.Message, _ []*runnerpb.ToolSchema) (host.Turn, error) {
	if a.next >= len(a.turns) {
		return host.Turn{}, &host.ActorError{Termination: task.TerminationError,
			Err: fmt.Errorf("replay: the recording has no %s turn %d", a.who, a.next+1)}
	}
	t := a.turns[a.next]
	a.next++
	return t, nil
}

// divergences compares the replay's tool calls and termination with the
// recording's.
func divergences(rt recordedTrial, r host.AttemptResult) []string {
	var out []string
	if r.TerminationReason != rt.Termination {
		out = append(out, fmt.Sprintf("termination: recorded %s, replay %s", rt.Termination, r.TerminationReason))
	}
	if len(r.ToolCalls) != len(rt.ToolCalls) {
		out = append(out, fmt.Sprintf("tool calls: recorded %d, replay %d", len(rt.ToolCalls), len(r.ToolCalls)))
	}
	for i := 0; i < min(len(r.ToolCalls), len(rt.ToolCalls)); i++ {
		was, now := rt.ToolCalls[i], r.ToolCalls[i]
		switch {
		case was.ToolName != now.ToolName:
			out = append(out, fmt.Sprintf("tool call %d: recorded %s, replay %s", i, was.ToolName, now.ToolName))
		case was.Status != now.Status:
			out = append(out, fmt.Sprintf("tool call %d (%s): recorded status %s, replay %s", i, was.ToolName, was.Status, now.Status))
		case was.Output != now.Output:
			out = append(out, fmt.Sprintf("tool call %d (%s): the output differs", i, was.ToolName))
		}
	}
	return out
}
