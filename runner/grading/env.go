package grading

import (
	"context"
	"encoding/json"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/dbservice/client"
	"tolokaforge.io/operator/runner/proc"
)

// Env is what GradeTrial needs from the runner's registration of one trial. The
// runner implements it; grading never reaches into the runner's internals, so the
// evaluators can be tested against a real DB service and plain Go tools.
type Env interface {
	// TrialID is the registered trial's id.
	TrialID() string
	// Spec is the decoded TrialSpec the trial was registered with.
	Spec() *task.TrialSpec
	// AgentTools and UserTools are the registered tool names, in declaration
	// order (golden actions resolve against AgentTools only).
	AgentTools() []string
	UserTools() []string
	// AgentToolSchemas are the registered agent tools as RegisterTrial advertised
	// them (registered names, parameters, declared category); the judge is offered
	// the ones llm_judge.tools names.
	AgentToolSchemas() []*runnerpb.ToolSchema
	// Records is a copy of the trial's ordered tool-call record.
	Records() []task.RecordedToolCall
	// Replay executes one golden action through the same adapter ExecuteTool
	// uses, bounded by the tool's timeout, without recording it in the trial's
	// history. Any status but ToolCallSuccess is a failed replay; err is for
	// faults outside the tool (transport, DB).
	Replay(ctx context.Context, toolName string, args json.RawMessage) (status task.ToolCallStatus, output string, err error)
	// SyncFromTools writes the tables held by stateful tool servers (MCP) into
	// the DB service, so hashes see the truth.
	SyncFromTools(ctx context.Context) error
	// PushToTools loads the DB service's current tables into stateful tool
	// servers, after a reset or a restore changed the DB under them.
	PushToTools(ctx context.Context) error
	// DB is the trial's DB service client.
	DB() *client.Client
	// WorkDir is the trial's file-tool root (for path_glob checks, and the agent's
	// files a test_execution verifier judges).
	WorkDir() string
	// VerifierSite is where a test_execution verifier runs: outside every tool's
	// reach, so nothing the agent does changes the verifier or its verdict.
	VerifierSite() VerifierSite
	// PythonSite is how a Python custom-check suite runs for the trial.
	PythonSite() PythonSite
	// Environment is the trial's own container (a task with an
	// environment), reached through its exec agent; nil when it has none.
	// The agent's turn is over once grading asked for it.
	Environment() EnvironmentExec
}

// PythonSite is where and how a task's Python custom-check suite runs
// (runner/grading/pychecks).
type PythonSite struct {
	// Python is the interpreter (the runner's --python); empty: "python3" on PATH.
	Python string
	// ArtifactsDir holds the task's unpacked tool_artifacts: the suite's file and
	// its relative_imports resolve there.
	ArtifactsDir string
	// ScratchDir is a directory of the trial's own, outside every tool's root,
	// where each grade writes the check runner (and removes it after).
	ScratchDir string
	// Limits are the rlimits the suite runs under, as tool processes do.
	Limits proc.Limits
	// Env is what the suite's environment carries beside the minimal set: the
	// trial's tag, so the trial's teardown also finds what it left running.
	Env []string
	// Confine, when set, confines the suite's file system access (Landlock):
	// ArtifactsDir read-only, its scratch folder read-write, nothing else of
	// the runner's.
	Confine *proc.Confinement
}

// Request is GradeTrial's input after transport decoding.
type Request struct {
	// Transcript is llm_messages_json, verbatim (may be empty).
	Transcript []byte
	// TerminationReason is the raw string; Grade parses it against the enum.
	TerminationReason string
	// Components limits what is computed (empty: everything configured).
	Components []string
}

// Grader computes grades. Construct with New; safe for concurrent use across
// trials (the runner serializes grading of one trial).
type Grader interface {
	// Grade returns the grade, or an error whose Error() is exactly the
	// GradeTrialResponse.error text of the spec's GradeTrial error table.
	Grade(ctx context.Context, env Env, req Request) (*runnerpb.Grade, error)
}
