package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
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
	// MaxTokens is sent as max_tokens, the legacy key some servers and
	// older models want; reasoning models refuse it. Set only for those.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxTokens *int32 `json:"maxTokens,omitempty"`
	// MaxCompletionTokens is sent as max_completion_tokens (reasoning and
	// visible output together).
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxCompletionTokens *int32 `json:"maxCompletionTokens,omitempty"`
	// ReasoningEffort is sent as reasoning_effort.
	// +kubebuilder:validation:Enum=none;minimal;low;medium;high;xhigh
	// +optional
	ReasoningEffort string `json:"reasoningEffort,omitempty"`
	// +optional
	Seed *int64 `json:"seed,omitempty"`
	// ExtraBody is a JSON object merged into every request body. It may not
	// name a key the client sets itself (model, messages, tools, temperature,
	// top_p, max_tokens, max_completion_tokens, seed, reasoning_effort,
	// stream): such a Trial ends Invalid, naming the key. (Checked by the
	// manager, not CEL: a rule over a schemaless object has no cost bound.)
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	ExtraBody *apiextensionsv1.JSON `json:"extraBody,omitempty"`
	// ExtraHeaders are sent with every request; values come from Secrets only.
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=name
	// +optional
	ExtraHeaders []ExtraHeader `json:"extraHeaders,omitempty"`
	// Timeout bounds one try of a model call (default 2m).
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// RateLimit paces the calls to this model at this base URL across every
	// Trial of the manager (the latest Trial to start sets the caps). A 429's
	// Retry-After pauses all of them, with or without a rate limit.
	// +optional
	RateLimit *RateLimit `json:"rateLimit,omitempty"`
	// +optional
	Pricing *Pricing `json:"pricing,omitempty"`
}

// ExtraHeader is one extra request header whose value is read from a Secret
// at attempt start (never stored in the Trial, a pod, status or an event).
// +kubebuilder:validation:XValidation:rule="!(self.name.lowerAscii() in ['authorization','content-type','content-length','host','accept'])",message="authorization and content headers are set by the client"
type ExtraHeader struct {
	// +kubebuilder:validation:Pattern=`^[!#$%&'*+.^_|~0-9A-Za-z-]+$`
	// +kubebuilder:validation:MaxLength=128
	Name      string            `json:"name"`
	ValueFrom HeaderValueSource `json:"valueFrom"`
}

// HeaderValueSource names where a header value comes from.
type HeaderValueSource struct {
	SecretKeyRef corev1.SecretKeySelector `json:"secretKeyRef"`
}

// RateLimit caps calls per minute; zero or unset means no cap on that measure.
type RateLimit struct {
	// +kubebuilder:validation:Minimum=0
	// +optional
	RequestsPerMinute int32 `json:"requestsPerMinute,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	TokensPerMinute int64 `json:"tokensPerMinute,omitempty"`
}

// Pricing costs tokens in USD per million tokens: the price table of a
// model, given on the Trial's (or the Campaign's agent's) model spec.
type Pricing struct {
	// +kubebuilder:validation:Minimum=0
	InputUSDPerMTok float64 `json:"inputUSDPerMTok"`
	// +kubebuilder:validation:Minimum=0
	OutputUSDPerMTok float64 `json:"outputUSDPerMTok"`
	// CachedInputUSDPerMTok prices prompt tokens served from the provider's
	// cache (default: the input price).
	// +kubebuilder:validation:Minimum=0
	// +optional
	CachedInputUSDPerMTok *float64 `json:"cachedInputUSDPerMTok,omitempty"`
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

// SlotMode says whether a Campaign's Trials run on warm slots.
// +kubebuilder:validation:Enum=Enabled;Disabled
type SlotMode string

const (
	// SlotsEnabled: an attempt's runner and DB service come from a slot, a
	// pod of the Campaign that serves one Trial after another.
	SlotsEnabled SlotMode = "Enabled"
	// SlotsDisabled: every attempt has its own runner and DB-service pods.
	SlotsDisabled SlotMode = "Disabled"
)

// SlotPolicy is how a Campaign's Trials use warm slots (docs/warm-slots.md).
// A Trial under a Kueue queue runs on a slot only once admitted
// (docs/kueue.md); a task with its own environment takes its runner and DB
// service from a slot and keeps a fresh environment pod per attempt.
type SlotPolicy struct {
	// Mode: Enabled (the default) runs attempts on slots; Disabled keeps
	// per-attempt pods.
	// +kubebuilder:default=Enabled
	// +optional
	Mode SlotMode `json:"mode,omitempty"`
	// MaxReuses is how many Trials one slot serves before it is replaced.
	// +kubebuilder:default=50
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxReuses int32 `json:"maxReuses,omitempty"`
	// IdleSeconds: a free slot no waiting attempt can use is deleted after
	// this many seconds.
	// +kubebuilder:default=30
	// +kubebuilder:validation:Minimum=0
	// +optional
	IdleSeconds *int32 `json:"idleSeconds,omitempty"`
}

// Enabled reports whether p asks for slots.
func (p *SlotPolicy) Enabled() bool { return p != nil && p.Mode == SlotsEnabled }
