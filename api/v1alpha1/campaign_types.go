package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// CampaignSpec is tasks x trialsPerTask x agents, run under caps.
type CampaignSpec struct {
	Tasks CampaignTasks `json:"tasks"`
	// TrialsPerTask is k: trials per (task, agent), and the k of the status's
	// pass@k and pass^k. Raising it mid-run adds only the new indexes.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	TrialsPerTask int32 `json:"trialsPerTask"`
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=50
	// +listType=map
	// +listMapKey=name
	Agents []NamedAgent `json:"agents"`
	// +optional
	UserSimulator *UserSimulatorSpec `json:"userSimulator,omitempty"`
	// +optional
	Judge *ModelSpec `json:"judge,omitempty"`
	// MaxParallel caps the non-terminal Trials at any moment.
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxParallel int32 `json:"maxParallel,omitempty"`
	// +optional
	Budget *Budget `json:"budget,omitempty"`
	// +optional
	RetryPolicy RetryPolicy `json:"retryPolicy,omitempty"`
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	MaxTurns *int32 `json:"maxTurns,omitempty"`
	// +optional
	Timeouts Timeouts `json:"timeouts,omitempty"`
	// Runner and DBService adjust the pods of every Trial.
	// +optional
	Runner PodOverrides `json:"runner,omitempty"`
	// +optional
	DBService PodOverrides `json:"dbService,omitempty"`
	// TTLSecondsAfterFinished deletes the Campaign (and its Trials with it)
	// this many seconds after it completed, as a JobSet's does; unset keeps
	// it. It is not passed down to the Trials: a Trial deleted under a live
	// Campaign would be re-created.
	// +kubebuilder:validation:Minimum=0
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
	// KeepPodsAfterFinished is passed down to every Trial: ended attempts'
	// pods stay until the Trial is deleted, for debugging.
	// +optional
	KeepPodsAfterFinished bool `json:"keepPodsAfterFinished,omitempty"`
	// Suspend, as on a Job or JobSet: while true no new Trial is created;
	// Trials already created run to their end. Setting it back to false
	// resumes creating.
	// +optional
	Suspend *bool `json:"suspend,omitempty"`
	// TrialManagedBy is passed down as every Trial's spec.managedBy:
	// "kueue.x-k8s.io/multikueue" has Kueue's MultiKueue run the Campaign's
	// Trials in worker clusters (their status mirrored back here; each
	// worker needs the Campaign's Tasks and Secrets in the same namespace).
	// +kubebuilder:validation:MaxLength=63
	// +optional
	TrialManagedBy *string `json:"trialManagedBy,omitempty"`
	// Rerun deletes and re-creates, once per campaign generation, the Trials
	// that ended in these phases and were created under an earlier
	// generation. A Trial re-created by a rerun is not rerun again until the
	// spec changes (a new generation) with rerun still set.
	// +kubebuilder:validation:MaxItems=6
	// +kubebuilder:validation:XValidation:rule="self.all(p, p in ['Passed', 'Failed', 'GradingFailed', 'InfraFailed', 'Invalid', 'ProtocolSkew'])",message="rerun takes terminal phases only: Passed, Failed, GradingFailed, InfraFailed, Invalid, ProtocolSkew"
	// +listType=set
	// +optional
	Rerun []TrialPhase `json:"rerun,omitempty"`
	// Slots is passed down as every Trial's spec.slots: whether its
	// attempts run on the Campaign's warm slots. Unset, they do (mode
	// Enabled, maxReuses 50, idleSeconds 30), unless keepPodsAfterFinished
	// asks for each Trial's pods to be kept; mode Disabled gives every
	// attempt pods of its own.
	// +optional
	Slots *SlotPolicy `json:"slots,omitempty"`
}

// CampaignTasks selects Tasks by label selector or by name.
// +kubebuilder:validation:XValidation:rule="has(self.selector) != has(self.names)",message="exactly one of selector and names must be set"
type CampaignTasks struct {
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
	// +kubebuilder:validation:MinItems=1
	// +listType=set
	// +optional
	Names []string `json:"names,omitempty"`
}

// NamedAgent is one agent configuration under evaluation.
type NamedAgent struct {
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=40
	Name  string    `json:"name"`
	Model ModelSpec `json:"model"`
}

// Budget stops creating Trials once reached; running Trials finish.
type Budget struct {
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxUSD *float64 `json:"maxUSD,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxTokens *int64 `json:"maxTokens,omitempty"`
}

// Condition types of a Campaign.
const (
	// CampaignProgressing is True while Trials remain to be created or to finish.
	CampaignProgressing = "Progressing"
	// CampaignBudgetExceeded is True once the spend reached spec.budget.
	CampaignBudgetExceeded = "BudgetExceeded"
	// CampaignTasksResolved is False while a named Task does not exist.
	CampaignTasksResolved = "TasksResolved"
	// CampaignCompleted is True when nothing is left to create or to wait for.
	CampaignCompleted = "Completed"
	// CampaignSuspended is True while spec.suspend holds back the creation
	// of Trials (reason Suspended), False once resumed (reason Resumed).
	CampaignSuspended = "Suspended"
	// CampaignReferencesResolved is False while an object the Campaign names
	// is missing (a Task of spec.tasks.names, a model's Secret): no Trial is
	// created until it exists.
	CampaignReferencesResolved = "ReferencesResolved"
)

// Annotations and labels the Campaign controller puts on its Trials.
const (
	// LabelCampaign, LabelAgent, LabelTask and LabelTrialIndex select a
	// campaign's Trials (values longer than 63 characters are shortened with
	// a hash).
	LabelCampaign   = "eval.tolokaforge.io/campaign"
	LabelAgent      = "eval.tolokaforge.io/agent"
	LabelTask       = "eval.tolokaforge.io/task"
	LabelTrialIndex = "eval.tolokaforge.io/trial-index"
	// AnnotationCampaignGeneration is the campaign generation a Trial was
	// created under; a rerun only retires Trials created under an earlier one.
	AnnotationCampaignGeneration = "eval.tolokaforge.io/campaign-generation"
	// AnnotationTaskName is the Task's full name (the label may be shortened).
	AnnotationTaskName = "eval.tolokaforge.io/task-name"
)

// TrialCounts counts a campaign's Trials by state: one per Trial, never per
// attempt, over the Trials of the current plan (agents x tasks x indexes < k).
// Zero counts are omitted (the status is written by merge patch, and an
// absent key reads as 0).
type TrialCounts struct {
	// Total is the planned number of Trials.
	// +optional
	Total int32 `json:"total,omitempty"`
	// Queued Trials are planned but not created yet (held by maxParallel or
	// the budget).
	// +optional
	Queued int32 `json:"queued,omitempty"`
	// Pending Trials exist but have not started running (no phase, Pending,
	// Starting), including creations the cache has not shown yet.
	// +optional
	Pending int32 `json:"pending,omitempty"`
	// Running counts phases Running and Grading.
	// +optional
	Running int32 `json:"running,omitempty"`
	// +optional
	Passed int32 `json:"passed,omitempty"`
	// Failed counts phases Failed and GradingFailed: both are measured
	// outcomes that did not pass.
	// +optional
	Failed int32 `json:"failed,omitempty"`
	// +optional
	InfraFailed int32 `json:"infraFailed,omitempty"`
	// Invalid counts phases Invalid and ProtocolSkew: the trial never ran.
	// +optional
	Invalid int32 `json:"invalid,omitempty"`
}

// Aggregate is a pass/score/cost summary over a set of Trials.
//
// The unit of the estimators is a (task, agent) cell with n measured Trials
// (Passed, Failed, GradingFailed) of which c passed; InfraFailed and Invalid
// Trials are not measurements of the agent and are left out of n. PassAt1,
// PassAtK and PassHatK are means over the cells with n >= k (pass@1 over
// cells with n >= 1); absent when no cell qualifies.
type Aggregate struct {
	// Trials counts the measured Trials and Passes those that passed.
	// +optional
	Trials int32 `json:"trials,omitempty"`
	// +optional
	Passes int32 `json:"passes,omitempty"`
	// MeanScore is the mean grade score over the measured Trials that have
	// a grade (a GradingFailed Trial without one has no score to average).
	// +optional
	MeanScore *float64 `json:"meanScore,omitempty"`
	// +optional
	PassAt1 *float64 `json:"passAt1,omitempty"`
	// PassAtK = mean over cells of 1 - C(n-c,k)/C(n,k).
	// +optional
	PassAtK *float64 `json:"passAtK,omitempty"`
	// PassHatK = mean over cells of C(c,k)/C(n,k) (tau-bench's pass^k).
	// +optional
	PassHatK *float64 `json:"passHatK,omitempty"`
	// KCells is the number of cells with n >= k that PassAtK and PassHatK
	// average over.
	// +optional
	KCells int32 `json:"kCells,omitempty"`
	// Tokens and CostUSD sum every attempt of every Trial (what was billed),
	// measured or not.
	// +optional
	Tokens int64 `json:"tokens,omitempty"`
	// +optional
	CostUSD float64 `json:"costUSD,omitempty"`
}

// KeyedAggregate is an Aggregate for one agent or one task.
type KeyedAggregate struct {
	Name      string `json:"name"`
	Aggregate `json:",inline"`
}

// Spend is tokens and money.
type Spend struct {
	// +optional
	Tokens int64 `json:"tokens,omitempty"`
	// +optional
	CostUSD float64 `json:"costUSD,omitempty"`
}

// RetiredTrial is a Trial a rerun deleted; its spend stays in status.spent.
type RetiredTrial struct {
	Name string    `json:"name"`
	UID  types.UID `json:"uid"`
}

// RerunStatus records the last rerun, so a rerun happens once per generation.
type RerunStatus struct {
	// Generation is the campaign generation the rerun was made for.
	Generation int64 `json:"generation"`
	// Phases are the phases that were rerun.
	// +optional
	Phases []TrialPhase `json:"phases,omitempty"`
	// Retired counts the Trials this rerun deleted.
	// +optional
	Retired int32 `json:"retired,omitempty"`
	// Deleting are retired Trials not confirmed gone yet; they are not
	// re-created until they are.
	// +optional
	Deleting []RetiredTrial `json:"deleting,omitempty"`
}

// CampaignStatus is rebuilt from the campaign's Trials.
type CampaignStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// K is the k of PassAtK and PassHatK (spec.trialsPerTask when observed).
	// +optional
	K int32 `json:"k,omitempty"`
	// +optional
	Counts TrialCounts `json:"counts,omitempty"`
	// +optional
	Overall Aggregate `json:"overall,omitempty"`
	// +optional
	PerAgent []KeyedAggregate `json:"perAgent,omitempty"`
	// +optional
	PerTask []KeyedAggregate `json:"perTask,omitempty"`
	// Spent is what the budget is compared with: every current Trial's usage
	// plus the usage of Trials retired by reruns.
	// +optional
	Spent Spend `json:"spent,omitempty"`
	// RetiredSpend is the part of Spent that belonged to retired Trials.
	// +optional
	RetiredSpend Spend `json:"retiredSpend,omitempty"`
	// +optional
	Rerun *RerunStatus `json:"rerun,omitempty"`
	// Display fields for printer columns.
	// +optional
	AgentCount int32 `json:"agentCount,omitempty"`
	// +optional
	TaskCount int32 `json:"taskCount,omitempty"`
	// Progress is "done/total": terminal Trials of the plan over planned ones.
	// +optional
	Progress string `json:"progress,omitempty"`
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=tolokaforge,shortName=camp
// +kubebuilder:printcolumn:name="Agents",type=integer,JSONPath=`.status.agentCount`
// +kubebuilder:printcolumn:name="Tasks",type=integer,JSONPath=`.status.taskCount`
// +kubebuilder:printcolumn:name="Done/Total",type=string,JSONPath=`.status.progress`
// +kubebuilder:printcolumn:name="Pass@1",type=number,JSONPath=`.status.overall.passAt1`
// +kubebuilder:printcolumn:name="Pass^k",type=number,JSONPath=`.status.overall.passHatK`
// +kubebuilder:printcolumn:name="Cost",type=number,JSONPath=`.status.spent.costUSD`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Campaign runs many Trials and aggregates their results.
type Campaign struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   CampaignSpec   `json:"spec"`
	Status CampaignStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// CampaignList is a list of Campaigns.
type CampaignList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Campaign `json:"items"`
}
