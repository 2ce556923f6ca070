package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Provider is the kind of model endpoint an agent or simulated user talks to.
// +kubebuilder:validation:Enum=oracle;openai
type Provider string

const (
	// ProviderOracle replays the task's golden actions; it needs no model.
	ProviderOracle Provider = "oracle"
	// ProviderOpenAI is any OpenAI-compatible chat-completions endpoint.
	ProviderOpenAI Provider = "openai"
)

// ModelSpec configures a model. The API key is only ever referenced, never inlined.
// +kubebuilder:validation:XValidation:rule="self.provider == 'oracle' || (has(self.model) && size(self.model) > 0)",message="model is required unless provider is oracle"
type ModelSpec struct {
	// +kubebuilder:default=oracle
	// +optional
	Provider Provider `json:"provider,omitempty"`
	// +optional
	Model string `json:"model,omitempty"`
	// BaseURL of the OpenAI-compatible API, e.g. https://api.openai.com/v1.
	// +optional
	BaseURL string `json:"baseURL,omitempty"`
	// APIKeySecretRef names the Secret key holding the API key.
	// +optional
	APIKeySecretRef *corev1.SecretKeySelector `json:"apiKeySecretRef,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2
	// +optional
	Temperature *float64 `json:"temperature,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	// +optional
	TopP *float64 `json:"topP,omitempty"`
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxTokens *int32 `json:"maxTokens,omitempty"`
	// +optional
	Seed *int64 `json:"seed,omitempty"`
	// +optional
	Pricing *Pricing `json:"pricing,omitempty"`
}

// Pricing costs tokens in USD per million tokens.
type Pricing struct {
	// +kubebuilder:validation:Minimum=0
	InputUSDPerMTok float64 `json:"inputUSDPerMTok"`
	// +kubebuilder:validation:Minimum=0
	OutputUSDPerMTok float64 `json:"outputUSDPerMTok"`
}

// UserSimulatorMode says who plays the user.
// +kubebuilder:validation:Enum=scripted;llm
type UserSimulatorMode string

const (
	UserSimulatorScripted UserSimulatorMode = "scripted"
	UserSimulatorLLM      UserSimulatorMode = "llm"
)

// UserSimulatorSpec configures the simulated user.
// +kubebuilder:validation:XValidation:rule="self.mode != 'llm' || has(self.model)",message="model is required when mode is llm"
type UserSimulatorSpec struct {
	// +kubebuilder:default=scripted
	// +optional
	Mode UserSimulatorMode `json:"mode,omitempty"`
	// Model plays the user when mode is llm.
	// +optional
	Model *ModelSpec `json:"model,omitempty"`
	// Lines a scripted user says in order before it sends ###STOP###. Empty: the
	// task's initial user message, then ###STOP###.
	// +optional
	Lines []string `json:"lines,omitempty"`
}

// Timeouts bound the phases of an attempt.
type Timeouts struct {
	// Trial bounds the agent loop's wall clock (termination reason timeout).
	// +optional
	Trial *metav1.Duration `json:"trial,omitempty"`
	// PodsReady bounds how long an attempt waits for its pods (infra failure).
	// +optional
	PodsReady *metav1.Duration `json:"podsReady,omitempty"`
	// Tool is the default per-call tool budget sent to the runner.
	// +optional
	Tool *metav1.Duration `json:"tool,omitempty"`
	// Grading bounds the GradeTrial call.
	// +optional
	Grading *metav1.Duration `json:"grading,omitempty"`
}

// RetryPolicy retries infrastructure faults only; an agent's outcome is final.
type RetryPolicy struct {
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=20
	// +optional
	MaxAttempts int32 `json:"maxAttempts,omitempty"`
	// Backoff before the next attempt; doubled per attempt.
	// +optional
	Backoff *metav1.Duration `json:"backoff,omitempty"`
}

// PodOverrides adjust the runner or dbservice pod of each attempt.
type PodOverrides struct {
	// +optional
	Image string `json:"image,omitempty"`
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
}
