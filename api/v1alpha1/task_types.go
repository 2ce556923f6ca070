package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TaskSpec is a TaskDescription stored as a Kubernetes object.
//
// The description is kept in its wire form (the snake_case TaskDescription of the
// runner protocol) rather than re-typed in camelCase: packs convert one to one, and
// the runner's strict decoder stays the single judge of validity, so an unknown key
// is reported with its JSON path instead of being pruned silently by the API server.
type TaskSpec struct {
	// Description is the TaskDescription (task_id, system_prompt, agent_tools,
	// initial_state, grading, ...).
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// CEL cannot type-check field access on a schemaless object, so required
	// keys are enforced by the strict decoder (the Task's Valid condition).
	Description apiextensionsv1.JSON `json:"description"`
	// InitialStateFrom loads initial_state.tables from a ConfigMap key (JSON,
	// optionally gzip-compressed) for states too large to inline.
	// +optional
	InitialStateFrom *InitialStateSource `json:"initialStateFrom,omitempty"`
	// Files is the task's tool_artifacts as a content-addressed bundle
	// (api/packfiles) kept out of the Task: the manager verifies its size
	// and digest and hands the files to the runner. A description that also
	// sets tool_artifacts is refused.
	// +optional
	Files *PackFiles `json:"files,omitempty"`
	// InitialUserMessage opens the conversation (host-side; not part of the
	// protocol's trial spec since v2).
	// +optional
	InitialUserMessage string `json:"initialUserMessage,omitempty"`
	// MaxTurns is the task's turn budget, used when the Trial sets none.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxTurns *int32 `json:"maxTurns,omitempty"`
}

// InitialStateSource points at a ConfigMap key holding the tables.
type InitialStateSource struct {
	ConfigMapKeyRef ConfigMapKeyRef `json:"configMapKeyRef"`
}

// PackFiles names a bundle of pack files by digest and says where it is:
// a ConfigMap in the Task's namespace (small packs) or an object in the
// manager's artifact store (large ones, written by `pack import --store`).
// +kubebuilder:validation:XValidation:rule="has(self.configMap) != has(self.url)",message="give exactly one of configMap and url"
type PackFiles struct {
	// Digest is "sha256:" and the hex sha256 of the bundle's bytes.
	// +kubebuilder:validation:MaxLength=71
	// +kubebuilder:validation:XValidation:rule="self.matches('^sha256:[0-9a-f]{64}$')",message="digest must be sha256: followed by 64 lowercase hex digits"
	Digest string `json:"digest"`
	// Size is the bundle's length in bytes.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=33554432
	Size int64 `json:"size"`
	// ConfigMap is a ConfigMap in the Task's namespace holding the bundle
	// in binaryData key "files.tar".
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ConfigMap string `json:"configMap,omitempty"`
	// URL is the bundle's object in the manager's artifact store
	// (s3://BUCKET/KEY or file:///PATH, no query). The manager reads it with
	// its own credentials and refuses a URL outside its store; runner pods
	// never see the store.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.matches('^(s3://[^/?#]+|file://)/[^?#]+$')",message="url must be s3://BUCKET/KEY or file:///PATH, without a query or fragment"
	URL string `json:"url,omitempty"`
}

// ConfigMapKeyRef selects a key of a ConfigMap in the Task's namespace.
type ConfigMapKeyRef struct {
	Name string `json:"name"`
	Key  string `json:"key"`
	// Gzip says the value (binaryData) is gzip-compressed.
	// +optional
	Gzip bool `json:"gzip,omitempty"`
}

// TaskStatus is what the Task controller learnt from decoding the description.
type TaskStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +optional
	TaskID string `json:"taskID,omitempty"`
	// +optional
	Category string `json:"category,omitempty"`
	// +optional
	AgentTools int32 `json:"agentTools,omitempty"`
	// +optional
	UserTools int32 `json:"userTools,omitempty"`
	// +optional
	GoldenActions int32 `json:"goldenActions,omitempty"`
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=tolokaforge,shortName=tk
// +kubebuilder:printcolumn:name="Task ID",type=string,JSONPath=`.status.taskID`
// +kubebuilder:printcolumn:name="Category",type=string,JSONPath=`.status.category`
// +kubebuilder:printcolumn:name="Tools",type=integer,JSONPath=`.status.agentTools`
// +kubebuilder:printcolumn:name="Golden",type=integer,JSONPath=`.status.goldenActions`
// +kubebuilder:printcolumn:name="Valid",type=string,JSONPath=`.status.conditions[?(@.type=="Valid")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Task is one evaluation task.
type Task struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   TaskSpec   `json:"spec"`
	Status TaskStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// TaskList is a list of Tasks.
type TaskList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Task `json:"items"`
}
