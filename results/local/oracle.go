package local

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"

	"tolokaforge.io/operator/api/result"
	"tolokaforge.io/operator/api/task"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/host"
	"tolokaforge.io/operator/controllers/host/agents"
)

// defaultOracleTimeout bounds an oracle trial when OracleRun gives no bound.
const defaultOracleTimeout = 2 * time.Minute

// OracleRun says how RunOracle runs a task.
type OracleRun struct {
	// ArtifactsDir, when set, receives the trial's artifacts.
	ArtifactsDir string
	// TrialTimeout bounds the trial (0: DefaultOracleTimeout).
	TrialTimeout time.Duration
	// AllComponents grades the oracle's trial with every configured component, not
	// only the state checks: the oracle's episode is the synthetic golden transcript
	// trace checks, custom checks, transcript rules and the judge are exercised on.
	AllComponents bool
	// JudgeFor gives the judge model config (TrialSpec.judge) of a task that grades
	// with llm_judge; nil leaves the trial without one (RegisterTrial refuses it).
	JudgeFor func(desc *task.TaskDescription) (*task.ModelConfig, error)
	Log      logr.Logger
}

// OracleComponents is what an oracle trial of pack validate and `trial run
// --agent oracle` is graded on: every component. The oracle's episode is the
// synthetic golden transcript, and a component that cannot grade it (a trace
// check naming a tool the golden path never calls, a CEL check that errors, a
// judge that cannot run) is a pack defect found before any model is paid for.
func OracleComponents() []string { return task.ComponentNames() }

// RunOracle runs one trial of desc with the oracle agent and the task's
// default user (its scripted flow, else the initial user message then
// ###STOP###).
func (s *Stack) RunOracle(ctx context.Context, desc *task.TaskDescription, initialUserMessage string, maxTurns int, trialIndex int, o OracleRun) host.AttemptResult {
	if o.TrialTimeout <= 0 {
		o.TrialTimeout = defaultOracleTimeout
	}
	if o.Log.GetSink() == nil {
		o.Log = logr.Discard()
	}
	var judge *task.ModelConfig
	if g := desc.Grading; g != nil && g.LLMJudge != nil && o.JudgeFor != nil {
		j, err := o.JudgeFor(desc)
		if err != nil {
			return host.AttemptResult{Outcome: evalv1.OutcomeInvalid, Reason: evalv1.ReasonInvalidConfig,
				Message: fmt.Sprintf("judge model of task %s: %v", desc.TaskID, err)}
		}
		judge = j
	}
	var components []string
	if o.AllComponents {
		components = OracleComponents()
	}
	spec := task.NewTrialSpec(task.TrialSpecParams{
		Task:         desc,
		TrialIndex:   trialIndex,
		RunID:        "oracle",
		AttemptID:    fmt.Sprintf("oracle-%s-%d", desc.TaskID, trialIndex),
		Agent:        &task.ModelConfig{Provider: task.ProviderOracle},
		DBServiceURL: s.DBServiceURL,
	})
	spec.Judge = judge
	return host.RunAttempt(ctx, host.AttemptConfig{
		Runner:             s.Runner,
		Spec:               spec,
		InitialUserMessage: initialUserMessage,
		MaxTurns:           maxTurns,
		TrialTimeout:       o.TrialTimeout,
		GradingComponents:  components,
		Agent:              agents.NewOracle(desc),
		ArtifactsDir:       o.ArtifactsDir,
		Record:             result.Record{Agent: string(evalv1.ProviderOracle)},
		TrialIndex:         trialIndex,
		AttemptNumber:      1,
		Log:                o.Log.WithName("host"),
	})
}
