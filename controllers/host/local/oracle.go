package local

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/controllers/host"
	"tolokaforge.io/operator/controllers/host/agents"
)

// DefaultOracleTimeout bounds an oracle trial when OracleRun gives no bound.
const DefaultOracleTimeout = 2 * time.Minute

// OracleRun says how RunOracle runs a task.
type OracleRun struct {
	// ArtifactsDir, when set, receives the trial's artifacts.
	ArtifactsDir string
	// TrialTimeout bounds the trial (0: DefaultOracleTimeout).
	TrialTimeout time.Duration
	Log          logr.Logger
}

// RunOracle runs one trial of desc with the oracle agent and the task's
// default user (its scripted flow, else the initial user message then
// ###STOP###).
func (s *Stack) RunOracle(ctx context.Context, desc *task.TaskDescription, initialUserMessage string, maxTurns int, trialIndex int, o OracleRun) host.AttemptResult {
	if o.TrialTimeout <= 0 {
		o.TrialTimeout = DefaultOracleTimeout
	}
	if o.Log.GetSink() == nil {
		o.Log = logr.Discard()
	}
	spec := &task.TrialSpec{
		TrialID:      fmt.Sprintf("%s:%d", desc.TaskID, trialIndex),
		RunID:        "oracle",
		AttemptID:    fmt.Sprintf("oracle-%s-%d", desc.TaskID, trialIndex),
		Task:         desc,
		Agent:        &task.ModelConfig{Provider: task.ProviderOracle},
		EnvEndpoints: &task.EnvEndpoints{DBServiceURL: s.DBServiceURL},
	}
	return host.RunAttempt(ctx, host.AttemptConfig{
		Runner:             s.Runner,
		Spec:               spec,
		InitialUserMessage: initialUserMessage,
		MaxTurns:           maxTurns,
		TrialTimeout:       o.TrialTimeout,
		Agent:              agents.NewOracle(desc),
		ArtifactsDir:       o.ArtifactsDir,
		TrialIndex:         trialIndex,
		AttemptNumber:      1,
		Log:                o.Log.WithName("host"),
	})
}
