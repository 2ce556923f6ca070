package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CampaignSpec is tasks x trialsPerTask x agents, run under caps.
type CampaignSpec struct {
	Tasks CampaignTasks `json:"tasks"`
	// TrialsPerTask is k: trials per (task, agent).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	TrialsPerTask int32 `json:"trialsPerTask"`
	// +kubebuilder:validation:MinItems=1
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
	// +optional
	MaxTurns *int32 `json:"maxTurns,omitempty"`
	// +optional
	Timeouts Timeouts `json:"timeouts,omitempty"`
	// Rerun re-creates the campaign's Trials that ended in these phases.
	// +optional
	Rerun []TrialPhase `json:"rerun,omitempty"`
}

// CampaignTasks selects Tasks by label selector or by name.
// +kubebuilder:validation:XValidation:rule="has(self.selector) != has(self.names)",message="exactly one of selector and names must be set"
type CampaignTasks struct {
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
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
	CampaignProgressing    = "Progressing"
	CampaignBudgetExceeded = "BudgetExceeded"
	CampaignCompleted      = "Completed"
)

// TrialCounts counts a campaign's Trials by state (one per Trial, never per attempt).
type TrialCounts struct {
	Total       int32 `json:"total"`
	Pending     int32 `json:"pending"`
	Running     int32 `json:"running"`
	Passed      int32 `json:"passed"`
	Failed      int32 `json:"failed"`
	InfraFailed int32 `json:"infraFailed"`
	Invalid     int32 `json:"invalid"`
}

// Aggregate is a pass/score/cost summary over a set of Trials.
type Aggregate struct {
	Trials int32 `json:"trials"`
	Passes int32 `json:"passes"`
	// +optional
	MeanScore float64 `json:"meanScore,omitempty"`
	// +optional
	PassAt1 float64 `json:"passAt1,omitempty"`
	// +optional
	PassAtK float64 `json:"passAtK,omitempty"`
	// +optional
	PassHatK float64 `json:"passHatK,omitempty"`
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

// CampaignStatus is rebuilt from the campaign's Trials.
type CampaignStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +optional
	Counts TrialCounts `json:"counts,omitempty"`
	// +optional
	Overall Aggregate `json:"overall,omitempty"`
	// +optional
	PerAgent []KeyedAggregate `json:"perAgent,omitempty"`
	// +optional
	PerTask []KeyedAggregate `json:"perTask,omitempty"`
	// Display fields for printer columns.
	// +optional
	AgentCount int32 `json:"agentCount,omitempty"`
	// +optional
	TaskCount int32 `json:"taskCount,omitempty"`
	// +optional
	Progress string `json:"progress,omitempty"`
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=tolokaforge
// +kubebuilder:printcolumn:name="Agents",type=integer,JSONPath=`.status.agentCount`
// +kubebuilder:printcolumn:name="Tasks",type=integer,JSONPath=`.status.taskCount`
// +kubebuilder:printcolumn:name="Done/Total",type=string,JSONPath=`.status.progress`
// +kubebuilder:printcolumn:name="Pass@1",type=number,JSONPath=`.status.overall.passAt1`
// +kubebuilder:printcolumn:name="Pass^k",type=number,JSONPath=`.status.overall.passHatK`
// +kubebuilder:printcolumn:name="Cost",type=number,JSONPath=`.status.overall.costUSD`
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

func init() {
	SchemeBuilder.Register(&Campaign{}, &CampaignList{})
}
