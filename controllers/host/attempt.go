package host

import (
	"context"
	"time"
	"tolokaforge.io/operator/api/result"

	"tolokaforge.io/operator/api/llm"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel/trace"

	"tolokaforge.io/operator/api/artifacts"
	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
)

// Who graded an attempt (AttemptResult.GradedBy).
const (
	// GradedByRunner: GradeTrial graded the episode.
	GradedByRunner = "runner"
	// GradedByHost: the loop ended in a way that never reaches GradeTrial
	// (stuck_detected, error, timeout); the host scored it 0 with a reason
	// naming the termination. Final, not retried.
	GradedByHost = "host"
)

// AttemptConfig is everything one attempt needs.
type AttemptConfig struct {
	// Runner is a connected client of the attempt's runner.
	Runner runnerpb.RunnerServiceClient
	// Spec is the TrialSpec sent in RegisterTrial (trial_id, attempt_id, task,
	// agent model config, env_endpoints pointing at the attempt's DB service).
	Spec *task.TrialSpec
	// InitialUserMessage opens the conversation (host-side only).
	InitialUserMessage string
	// MaxTurns bounds agent LLM calls (0: DefaultMaxTurns); TrialTimeout bounds
	// the loop's wall clock (0: no bound beyond ctx).
	MaxTurns     int
	TrialTimeout time.Duration
	// DefaultToolTimeout is RegisterTrialRequest.default_tool_timeout_s
	// (0: the runner's default).
	DefaultToolTimeout time.Duration
	// GradingTimeout bounds GradeTrial (0: DefaultGradingTimeout).
	GradingTimeout time.Duration
	// RegisterTimeout bounds RegisterTrial (0: DefaultRegisterTimeout) and
	// CleanupTimeout the final CleanupTrial (0: DefaultCleanupTimeout).
	RegisterTimeout time.Duration
	CleanupTimeout  time.Duration
	// Agent and User are the actors; nil User means DefaultUser: the task's
	// scripted_flow when its user simulator is scripted, else a scripted user
	// that says InitialUserMessage and then ###STOP###.
	Agent Actor
	User  Actor
	// ArtifactsDir, when set, receives trajectory.yaml, grade.yaml and
	// metrics.yaml for this attempt under trials/<task_id>/<TrialIndex>/.
	ArtifactsDir string
	// ArtifactsSink, when set, receives them instead of ArtifactsDir (a
	// blob store: blobstore.Store.Sink).
	ArtifactsSink artifacts.Sink
	// GradingComponents limits what GradeTrial computes. Nil means every
	// configured component, except for the oracle agent: see
	// OracleGradingComponents.
	GradingComponents []string
	// Record is who runs the trial (namespace, Trial, campaign, agent),
	// written into trajectory.yaml so readers never guess it from paths.
	Record result.Record
	// TrialIndex places the artifacts (the k of pass^k).
	TrialIndex int
	// AttemptNumber is recorded in the artifacts.
	AttemptNumber int
	// Progress, when set, is called after every turn (for CLI progress lines).
	Progress func(TurnEvent)
	// Log receives structured progress; the zero value discards. Never given
	// a secret: actors redact provider messages before they reach it.
	Log logr.Logger
	// TracerProvider traces the attempt (tracing.go); nil means the
	// process's global one, a no-op unless the program installed one.
	TracerProvider trace.TracerProvider
}

// Actor produces the next message of one side of the conversation.
type Actor interface {
	// Next returns the actor's next turn given the conversation so far (from
	// that actor's point of view) and the tools offered to it. conv must not
	// be modified. The agent's view starts with the system prompt and holds
	// every message of the trial except the user's tool traffic; the user's
	// view is mirrored (the agent's words as role "user", its own as
	// "assistant") and holds no agent tool traffic.
	//
	// An error ends the trial: *ActorError says how (rate_limit, api_error,
	// error); any other error ends it as error; a context error as timeout or
	// cancellation.
	Next(ctx context.Context, conv []task.Message, tools []*runnerpb.ToolSchema) (Turn, error)
}

// Turn is one message an actor produced, with what it cost.
type Turn struct {
	Content   string
	ToolCalls []task.ToolCall
	Usage     Usage
}

// Usage is token spend of one or more LLM calls. Calls and tokens count what
// the provider billed: a call retried after a 429 or 5xx counts once, with
// the usage of the response that succeeded; Retries counts the refused ones.
type Usage = llm.Usage

// TurnEvent reports loop progress: one per agent turn and one per user
// message. Turn is the agent turn count so far.
type TurnEvent struct {
	Turn      int
	Actor     string // "agent" | "user"
	Content   string
	ToolCalls []string
	// ToolStatuses is the runner's status per tool call, in order ("success",
	// "error", ...), once the calls were executed.
	ToolStatuses []string
	// ToolCallCount is the tool calls executed so far in the attempt, by
	// either actor; AgentUsage and UserUsage are the spend so far. They are
	// running totals, so a reader that skips events loses nothing.
	ToolCallCount int
	AgentUsage    Usage
	UserUsage     Usage
}

// AttemptResult is how the attempt ended and what it produced.
type AttemptResult struct {
	// Outcome is Passed or Failed for a graded attempt (GradedBy says by
	// whom); GradingFailed, Invalid and ProtocolSkew are final; InfraFailed
	// is retried by the attempt policy, and with Reason Canceled means the
	// caller's context ended (Trial deleted, manager stopping).
	Outcome evalv1.AttemptOutcome
	// GradedBy is GradedByRunner or GradedByHost when the attempt has a grade.
	GradedBy string
	// Reason is a short CamelCase cause for conditions/events (one of the
	// Reason* constants).
	Reason string
	// Message is the human sentence (the runner's error text, the fault).
	Message           string
	Grade             *runnerpb.Grade
	TerminationReason task.TerminationReason
	Turns             int
	AgentUsage        Usage
	UserUsage         Usage
	JudgeUsage        Usage
	// Transcript is the wire transcript (leading system message included) and
	// ToolCalls the host's mirror of the runner's tool-call record.
	Transcript    []task.Message
	ToolCalls     []task.RecordedToolCall
	ArtifactsPath string
	// ArtifactsURL is the folder of the Trial's artifacts in the store (set
	// by the caller that chose the store; RunAttempt leaves it empty).
	ArtifactsURL string
	// ArtifactsError is why the artifacts could not be written (the attempt's
	// outcome stands regardless).
	ArtifactsError error
	// CleanupError is why the final CleanupTrial did not succeed ("": it
	// did): a slot whose runner is not back to its baseline is replaced.
	CleanupError string
	StartTime    time.Time
	EndTime      time.Time
	// TraceID is the attempt's trace (32 hex digits; empty when it was not
	// traced), also in trajectory.yaml, so a slow Trial leads to its trace.
	TraceID string
}
