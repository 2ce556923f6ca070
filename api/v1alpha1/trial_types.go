package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TrialSpec is one agent run on one task. It is immutable: a different run is a
// different Trial.
// +kubebuilder:validation:XValidation:rule="has(self.taskRef) != has(self.task)",message="exactly one of taskRef and task must be set"
// +kubebuilder:validation:XValidation:rule="(has(self.taskRef) == has(oldSelf.taskRef) && (!has(self.taskRef) || self.taskRef == oldSelf.taskRef)) && (has(self.task) == has(oldSelf.task) && (!has(self.task) || self.task == oldSelf.task)) && (has(self.trialIndex) == has(oldSelf.trialIndex) && (!has(self.trialIndex) || self.trialIndex == oldSelf.trialIndex)) && (has(self.agent) == has(oldSelf.agent) && (!has(self.agent) || self.agent == oldSelf.agent)) && (has(self.userSimulator) == has(oldSelf.userSimulator) && (!has(self.userSimulator) || self.userSimulator == oldSelf.userSimulator)) && (has(self.judge) == has(oldSelf.judge) && (!has(self.judge) || self.judge == oldSelf.judge)) && (has(self.maxTurns) == has(oldSelf.maxTurns) && (!has(self.maxTurns) || self.maxTurns == oldSelf.maxTurns)) && (has(self.timeouts) == has(oldSelf.timeouts) && (!has(self.timeouts) || self.timeouts == oldSelf.timeouts)) && (has(self.retryPolicy) == has(oldSelf.retryPolicy) && (!has(self.retryPolicy) || self.retryPolicy == oldSelf.retryPolicy)) && (has(self.runner) == has(oldSelf.runner) && (!has(self.runner) || self.runner == oldSelf.runner)) && (has(self.dbService) == has(oldSelf.dbService) && (!has(self.dbService) || self.dbService == oldSelf.dbService)) && (has(self.ttlSecondsAfterFinished) == has(oldSelf.ttlSecondsAfterFinished) && (!has(self.ttlSecondsAfterFinished) || self.ttlSecondsAfterFinished == oldSelf.ttlSecondsAfterFinished)) && (has(self.keepPodsAfterFinished) == has(oldSelf.keepPodsAfterFinished) && (!has(self.keepPodsAfterFinished) || self.keepPodsAfterFinished == oldSelf.keepPodsAfterFinished)) && (has(self.managedBy) == has(oldSelf.managedBy) && (!has(self.managedBy) || self.managedBy == oldSelf.managedBy)) && (has(self.slots) == has(oldSelf.slots) && (!has(self.slots) || self.slots == oldSelf.slots))",message="spec is immutable (only spec.suspend may change)"
type TrialSpec struct {
	// The immutability rule above names every field but suspend, one clause
	// each: a new field must get its clause (TestTrialSpecImmutableRuleCoversFields).

	// TaskRef names a Task in the Trial's namespace.
	// +optional
	TaskRef *TaskReference `json:"taskRef,omitempty"`
	// Task is an inline TaskDescription in wire form (see TaskSpec.Description).
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +optional
	Task *apiextensionsv1.JSON `json:"task,omitempty"`
	// TrialIndex distinguishes repeated trials of one task (the k of pass^k).
	// +kubebuilder:validation:Minimum=0
	// +optional
	TrialIndex int32 `json:"trialIndex,omitempty"`
	// Agent is the model under evaluation.
	Agent ModelSpec `json:"agent"`
	// UserSimulator plays the user.
	// +optional
	UserSimulator *UserSimulatorSpec `json:"userSimulator,omitempty"`
	// Judge is the model the runner uses for the task's LLM rubric, if any.
	// +optional
	Judge *ModelSpec `json:"judge,omitempty"`
	// MaxTurns bounds agent LLM calls; defaults to the task's, else 30.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	MaxTurns *int32 `json:"maxTurns,omitempty"`
	// +optional
	Timeouts Timeouts `json:"timeouts,omitempty"`
	// +optional
	RetryPolicy RetryPolicy `json:"retryPolicy,omitempty"`
	// +optional
	Runner PodOverrides `json:"runner,omitempty"`
	// +optional
	DBService PodOverrides `json:"dbService,omitempty"`
	// TTLSecondsAfterFinished is what it is on a Job: the Trial is deleted
	// this many seconds after it finished (status.completionTime), its pods
	// with it; 0 deletes it as soon as it finished; unset keeps it. A Trial a
	// Campaign controls is never deleted this way (the Campaign would
	// re-create it): the Campaign's own ttlSecondsAfterFinished deletes it.
	// +kubebuilder:validation:Minimum=0
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
	// KeepPodsAfterFinished keeps the runner and DB service pods of every
	// ended attempt until the Trial is deleted, for debugging (logs, exec).
	// By default an attempt's pods are deleted as soon as it ends.
	// +optional
	KeepPodsAfterFinished bool `json:"keepPodsAfterFinished,omitempty"`
	// Suspend holds the Trial back, as a Job's suspend does: while true no
	// attempt starts, and an attempt that is running ends (InfraFailed,
	// reason TrialSuspended) and is retried once it is false again; such an
	// attempt does not count against retryPolicy.maxAttempts. It is the one
	// field of the spec that may change. A Trial that names a Kueue queue
	// (label kueue.x-k8s.io/queue-name) in a manager running the Kueue
	// integration is also held while its Workload is not admitted (or is
	// evicted): Kueue's admission is its gate, without a write to suspend
	// (status condition Admitted says where it stands).
	// +optional
	Suspend *bool `json:"suspend,omitempty"`
	// ManagedBy names the controller that runs the Trial, as a Job's
	// managedBy does. Unset (or ManagedByTrialController): this manager.
	// ManagedByMultiKueue ("kueue.x-k8s.io/multikueue"): Kueue's MultiKueue
	// copies the Trial to a worker cluster, whose manager runs it, and
	// mirrors its status back here; this manager creates no pod and writes
	// no status for it (its Kueue integration still queues its Workload).
	// Immutable.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	ManagedBy *string `json:"managedBy,omitempty"`
	// Slots, copied from the Campaign, runs the Trial's attempts on the
	// Campaign's warm slots when its mode is Enabled; unset (a bare Trial)
	// or Disabled keeps per-attempt pods. Immutable.
	// +optional
	Slots *SlotPolicy `json:"slots,omitempty"`
}

// Values of spec.managedBy.
const (
	ManagedByTrialController = "eval.tolokaforge.io/trial-controller"
	ManagedByMultiKueue      = "kueue.x-k8s.io/multikueue"
)

// ManagedElsewhere reports whether another controller runs the Trial
// (spec.managedBy names one other than this manager's).
func (t *Trial) ManagedElsewhere() bool {
	return t.Spec.ManagedBy != nil && *t.Spec.ManagedBy != "" && *t.Spec.ManagedBy != ManagedByTrialController
}

// TaskReference names a Task.
type TaskReference struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// TrialPhase is the one-word answer to "how is this trial doing".
// +kubebuilder:validation:Enum=Pending;Starting;Running;Grading;Passed;Failed;GradingFailed;InfraFailed;Invalid;ProtocolSkew
type TrialPhase string

const (
	PhasePending       TrialPhase = "Pending"
	PhaseStarting      TrialPhase = "Starting"
	PhaseRunning       TrialPhase = "Running"
	PhaseGrading       TrialPhase = "Grading"
	PhasePassed        TrialPhase = "Passed"
	PhaseFailed        TrialPhase = "Failed"
	PhaseGradingFailed TrialPhase = "GradingFailed"
	PhaseInfraFailed   TrialPhase = "InfraFailed"
	PhaseInvalid       TrialPhase = "Invalid"
	PhaseProtocolSkew  TrialPhase = "ProtocolSkew"
)

// Condition types of a Trial.
const (
	TrialPodsReady  = "PodsReady"
	TrialRegistered = "Registered"
	// TrialConfined says how the runner of the latest registered attempt
	// confines the pack's Python tools, MCP servers and checks: True (reason
	// Landlock, the ABI in the message) or False (reason
	// LandlockUnavailable: that kernel has no Landlock, so the pack's code
	// can read whatever the runner's user can). Absent until an attempt
	// registers with a runner that reports it.
	TrialConfined = "Confined"
	// TrialCompleted is terminal: True once the trial has its final outcome
	// (its reason says which), so `kubectl wait --for=condition=Completed` works.
	TrialCompleted = "Completed"
	// TrialSucceeded and TrialFailed answer pass/fail without reading the
	// phase, as a Job's Complete and Failed do: exactly one of them is True
	// once the trial has completed (Failed's reason says how: Failed,
	// GradingFailed, InfraFailed, Invalid or ProtocolSkew); neither exists
	// before. `kubectl wait --for=condition=Succeeded` waits for a pass.
	TrialSucceeded = "Succeeded"
	TrialFailed    = "Failed"
	// TrialNetworkPolicyReady appears only once a trial's network policies
	// could not be created (False, reason NetworkPolicyUnavailable, the
	// API server's refusal in the message): no pod is created without them.
	// It turns True once they exist.
	TrialNetworkPolicyReady = "NetworkPolicyReady"
	// TrialReferencesResolved says whether every object the Trial names
	// exists: its Task, the Task's initial-state ConfigMap and the Secrets of
	// its models. False (reason TaskNotFound, ConfigMapNotFound or
	// SecretNotFound, the message naming kind and name) ends the Trial as
	// Invalid before any pod is created and without using an attempt.
	TrialReferencesResolved = "ReferencesResolved"
	// TrialAdmitted appears only on a Trial that names a Kueue queue
	// (LabelQueueName) in a manager running the Kueue integration: False
	// (reason Queued, the LocalQueue and Kueue's own words in the message)
	// while its Workload waits for quota, True (reason Admitted, the
	// ClusterQueue in the message) once admitted, False (reason Evicted or
	// Preempted) after Kueue took the quota back. The Queue column shows
	// its reason, so `kubectl get trials` answers why a Trial is not running.
	TrialAdmitted = "Admitted"
)

// AttemptOutcome is how one attempt ended.
// +kubebuilder:validation:Enum=Running;Passed;Failed;GradingFailed;InfraFailed;Invalid;ProtocolSkew
type AttemptOutcome string

// AttemptStatus records one attempt.
type AttemptStatus struct {
	Number int32 `json:"number"`
	// ID is the opaque attempt_id sent in the TrialSpec.
	ID string `json:"id"`
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// +optional
	EndTime *metav1.Time   `json:"endTime,omitempty"`
	Outcome AttemptOutcome `json:"outcome"`
	// +optional
	Reason string `json:"reason,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
	// +optional
	RunnerPod string `json:"runnerPod,omitempty"`
	// +optional
	DBServicePod string `json:"dbServicePod,omitempty"`
	// EnvironmentPod runs a terminal task's image (absent for other tasks).
	// +optional
	EnvironmentPod string `json:"environmentPod,omitempty"`
	// Slot is the slot pod the attempt ran on (a Trial on warm slots; then
	// RunnerPod and DBServicePod are absent).
	// +optional
	Slot string `json:"slot,omitempty"`
	// TraceID is the attempt's OpenTelemetry trace (32 hex digits), set once
	// its runner accepted it when the manager exports traces
	// (OTEL_EXPORTER_OTLP_ENDPOINT); also trajectory.yaml's trace_id.
	// +optional
	TraceID string `json:"traceID,omitempty"`
}

// GradeComponents are the component scores; a component that was not evaluated
// is absent, never 0.
type GradeComponents struct {
	// +optional
	StateChecks *float64 `json:"stateChecks,omitempty"`
	// +optional
	TranscriptRules *float64 `json:"transcriptRules,omitempty"`
	// +optional
	LLMJudge *float64 `json:"llmJudge,omitempty"`
	// +optional
	CustomChecks *float64 `json:"customChecks,omitempty"`
	// +optional
	TraceChecks *float64 `json:"traceChecks,omitempty"`
}

// GradeSummary is the grade of the attempt that earned it.
type GradeSummary struct {
	Score      float64 `json:"score"`
	BinaryPass bool    `json:"binaryPass"`
	// +optional
	Components GradeComponents `json:"components,omitempty"`
	// +optional
	Reasons string `json:"reasons,omitempty"`
	// DiffSummary is the state diff's one-line summary when hashes differed.
	// +optional
	DiffSummary string `json:"diffSummary,omitempty"`
	// Attempt is the number of the attempt that earned this grade.
	Attempt int32 `json:"attempt"`
	// JudgeStatus is the LLM rubric judge's outcome; absent when no judge ran.
	// Errored appears only when llm_judge carries no weight share (otherwise
	// the grade fails and the trial is GradingFailed).
	// +optional
	JudgeStatus JudgeStatus `json:"judgeStatus,omitempty"`
}

// JudgeStatus is the LLM rubric judge's outcome in a grade.
// +kubebuilder:validation:Enum=Completed;Errored
type JudgeStatus string

const (
	JudgeCompleted JudgeStatus = "Completed"
	JudgeErrored   JudgeStatus = "Errored"
)

// TokenUsage is one actor's spend.
type TokenUsage struct {
	// +optional
	Calls int64 `json:"calls,omitempty"`
	// +optional
	PromptTokens int64 `json:"promptTokens,omitempty"`
	// +optional
	CompletionTokens int64 `json:"completionTokens,omitempty"`
	// +optional
	ReasoningTokens int64 `json:"reasoningTokens,omitempty"`
	// CachedTokens are the prompt tokens served from the provider's cache
	// (part of PromptTokens).
	// +optional
	CachedTokens int64 `json:"cachedTokens,omitempty"`
	// +optional
	CostUSD float64 `json:"costUSD,omitempty"`
}

// Usage sums spend per actor over all attempts (what the providers billed).
type Usage struct {
	// +optional
	Agent TokenUsage `json:"agent,omitempty"`
	// +optional
	UserSimulator TokenUsage `json:"userSimulator,omitempty"`
	// +optional
	Judge TokenUsage `json:"judge,omitempty"`
	// +optional
	TotalTokens int64 `json:"totalTokens,omitempty"`
	// +optional
	TotalCostUSD float64 `json:"totalCostUSD,omitempty"`
}

// TrialProgress is how far the running attempt has got.
type TrialProgress struct {
	// Attempt is the number of the attempt these figures are of.
	Attempt int32 `json:"attempt"`
	// Turn is the agent turns (LLM calls) taken so far.
	// +optional
	Turn int32 `json:"turn,omitempty"`
	// ToolCalls is the tool calls executed so far, by agent and user.
	// +optional
	ToolCalls int32 `json:"toolCalls,omitempty"`
	// Usage is the agent's and the user simulator's spend so far (the
	// judge has not run yet).
	// +optional
	Usage Usage `json:"usage,omitempty"`
	// UpdateTime is when these figures were written.
	// +optional
	UpdateTime *metav1.Time `json:"updateTime,omitempty"`
}

// TrialStatus is rebuilt from the world on every reconcile.
type TrialStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +optional
	Phase TrialPhase `json:"phase,omitempty"`
	// TaskID and Agent are resolved for display.
	// +optional
	TaskID string `json:"taskID,omitempty"`
	// +optional
	Agent string `json:"agent,omitempty"`
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// +optional
	Attempts []AttemptStatus `json:"attempts,omitempty"`
	// +optional
	AttemptCount int32 `json:"attemptCount,omitempty"`
	// +optional
	Grade *GradeSummary `json:"grade,omitempty"`
	// +optional
	TerminationReason string `json:"terminationReason,omitempty"`
	// +optional
	Turns int32 `json:"turns,omitempty"`
	// +optional
	Usage *Usage `json:"usage,omitempty"`
	// Progress is the running attempt's live figures, absent when no
	// attempt runs: once an attempt ends its figures are in turns and usage.
	// It is written at most once per progress interval (15 s) on its own;
	// a status write that happens anyway carries the latest figures.
	// +optional
	Progress *TrialProgress `json:"progress,omitempty"`
	// ArtifactsPath is where trajectory.yaml, grade.yaml and metrics.yaml are.
	// +optional
	ArtifactsPath string `json:"artifactsPath,omitempty"`
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// ArtifactsURL is the folder of this Trial's artifacts in the manager's
	// store (--artifacts-url): attempt-<n>/trials/<task_id>/<index>/ under
	// it for each attempt that wrote any. `tolokaforge results pull` follows it.
	// +optional
	ArtifactsURL string `json:"artifactsURL,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=tolokaforge,shortName=tr
// +kubebuilder:printcolumn:name="Task",type=string,JSONPath=`.status.taskID`
// +kubebuilder:printcolumn:name="Agent",type=string,JSONPath=`.status.agent`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Turn",type=integer,JSONPath=`.status.progress.turn`
// +kubebuilder:printcolumn:name="Queue",type=string,JSONPath=`.status.conditions[?(@.type=="Admitted")].reason`
// +kubebuilder:printcolumn:name="Score",type=number,JSONPath=`.status.grade.score`
// +kubebuilder:printcolumn:name="Pass",type=boolean,JSONPath=`.status.grade.binaryPass`
// +kubebuilder:printcolumn:name="Judge",type=string,JSONPath=`.status.grade.judgeStatus`
// +kubebuilder:printcolumn:name="Turns",type=integer,JSONPath=`.status.turns`
// +kubebuilder:printcolumn:name="Attempts",type=integer,JSONPath=`.status.attemptCount`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Artifacts",type=string,JSONPath=`.status.artifactsURL`,priority=1

// Trial is one agent run on one task, graded by the runner.
type Trial struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   TrialSpec   `json:"spec"`
	Status TrialStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// TrialList is a list of Trials.
type TrialList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Trial `json:"items"`
}
