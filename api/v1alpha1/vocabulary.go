package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// This file and the *_types.go files beside it are the operator's one
// vocabulary: every condition type, reason, attempt outcome, label and field
// manager the manager writes. Here: the field manager, the Task's condition
// type, attempt outcomes, every reason (of Tasks, Trials, Campaigns and
// infrastructure faults), the labels on everything the manager creates, pod
// roles and the Secret opt-in annotation. Beside their types: the Trial's
// phases and condition types (trial_types.go), the Campaign's condition
// types and the labels and annotations it puts on its Trials
// (campaign_types.go). Conditions and events share reasons, so `kubectl
// describe` reads the same words in both, and the host, the controllers and
// the reports all speak these words rather than translating between their
// own.

// FieldManager is the field manager of every write the manager makes, so
// managedFields says who wrote what no matter which code path wrote it.
const FieldManager = "tolokaforge-manager"

// Condition types of a Task.
const (
	// TaskValid says whether the description decoded strictly.
	TaskValid = "Valid"
)

// Reasons of the Task's Valid condition.
const (
	ReasonTaskValid               = "Decoded"
	ReasonInvalidDescription      = "InvalidDescription"
	ReasonInitialStateUnavailable = "InitialStateUnavailable"
	// ReasonPackFilesUnavailable: spec.files' ConfigMap could not be read
	// (absent, or the API failed); a Task retries, a Trial ends Invalid.
	ReasonPackFilesUnavailable = "PackFilesUnavailable"
	// ReasonPackFilesInvalid: the bundle is there but is not the one the
	// Task names (size, digest), or holds what no runner may unpack.
	ReasonPackFilesInvalid = "PackFilesInvalid"
)

// Attempt outcomes (AttemptStatus.Outcome). The host's driver ends every
// attempt with one of these; the Trial controller maps each to one action.
// The terminal ones double as the Trial's phase (see Phase).
const (
	OutcomeRunning       AttemptOutcome = "Running"
	OutcomePassed        AttemptOutcome = "Passed"
	OutcomeFailed        AttemptOutcome = "Failed"
	OutcomeGradingFailed AttemptOutcome = "GradingFailed"
	OutcomeInfraFailed   AttemptOutcome = "InfraFailed"
	OutcomeInvalid       AttemptOutcome = "Invalid"
	OutcomeProtocolSkew  AttemptOutcome = "ProtocolSkew"
)

// Phase is the Trial phase an outcome gives when it ends the trial: the same
// word, so an attempt's history and the trial's phase never disagree.
func (o AttemptOutcome) Phase() TrialPhase { return TrialPhase(o) }

// Reasons of the Trial's conditions, its attempts and its events. Terminal
// reasons of Completed=True are the phases Passed, Failed, GradingFailed,
// InfraFailed, Invalid and ProtocolSkew.
const (
	// Completed=False while the trial has no outcome yet.
	ReasonTaskNotFound = "TaskNotFound" // taskRef names no Task (yet)
	ReasonStarting     = "Starting"     // an attempt waits for its pods or a driver
	ReasonRunning      = "Running"      // a driver registered the attempt
	ReasonBackoff      = "Backoff"      // an infra fault ended the attempt; next one pending

	// PodsReady.
	ReasonPodsReady   = "PodsReady"
	ReasonPodsPending = "PodsPending"
	// ReasonWaitingForSlot: PodsReady=False, the attempt of a Trial on warm
	// slots waits for a free slot of its class (every slot the Campaign may
	// have is busy).
	ReasonWaitingForSlot = "WaitingForSlot"
	// ReasonSlotReplaced: a Warning on the Campaign when a slot is deleted
	// rather than reused (its CleanupTrial found something left, its attempt
	// ended InfraFailed, or it served maxReuses Trials).
	ReasonSlotReplaced = "SlotReplaced"

	// Registered.
	ReasonRegistered    = "Registered"
	ReasonNotRegistered = "NotRegistered"

	// Confined.
	ReasonLandlock            = "Landlock"
	ReasonLandlockUnavailable = "LandlockUnavailable"

	// Infrastructure faults the controller detects itself.
	ReasonPodFailed         = "PodFailed"        // a pod's container exited
	ReasonPodLost           = "PodLost"          // a pod vanished or is being deleted
	ReasonPodsNotReady      = "PodsNotReady"     // timeouts.podsReady elapsed
	ReasonManagerRestarted  = "ManagerRestarted" // the attempt's driver died with its process
	ReasonAPIKeyUnavailable = "APIKeyUnavailable"
	// ReasonNetworkPolicyUnavailable: the trial's NetworkPolicy could not be
	// created, so its pods are not either.
	ReasonNetworkPolicyUnavailable = "NetworkPolicyUnavailable"
	// ReasonNetworkPolicyCreated: NetworkPolicyReady=True after a refusal.
	ReasonNetworkPolicyCreated = "NetworkPolicyCreated"
	// ReasonCredentialUnavailable: the attempt's credential Secret could not
	// be created or read, so its pods cannot be called.
	ReasonCredentialUnavailable = "CredentialUnavailable"
	// ReasonEnvironmentImageUnavailable: the environment pod's image could
	// not be pulled (ErrImagePull, ImagePullBackOff, InvalidImageName) within
	// the task's build_timeout_s.
	ReasonEnvironmentImageUnavailable = "EnvironmentImageUnavailable"
	// ReasonEnvironmentNotReady: the environment pod was not Ready within the
	// task's build_timeout_s for another reason.
	ReasonEnvironmentNotReady = "EnvironmentNotReady"
	// ReasonEnvironmentUnavailable: the environment's exec agent stopped
	// answering, or the verifier could not read a reward (the runner's
	// "Environment error:" grading answers).
	ReasonEnvironmentUnavailable = "EnvironmentUnavailable"

	// Why the host's driver ended an attempt.
	ReasonPassed            = "Passed"
	ReasonFailed            = "Failed"
	ReasonGradingFailed     = "GradingFailed"
	ReasonStuckDetected     = "StuckDetected"
	ReasonTimeout           = "TrialTimeout"
	ReasonAgentError        = "AgentError"     // an actor ended the trial as error (provider 4xx, pack defect)
	ReasonToolNotFound      = "ToolNotFound"   // the runner answered TOOL_NOT_FOUND
	ReasonRunnerProtocol    = "RunnerProtocol" // the runner answered something the protocol does not allow
	ReasonRateLimited       = "RateLimited"
	ReasonProviderError     = "ProviderError"
	ReasonTrialLost         = "TrialLost"
	ReasonRunnerUnavailable = "RunnerUnavailable"
	ReasonCanceled          = "Canceled" // the caller's context ended: proves nothing either way
	ReasonInvalidTask       = "InvalidTask"
	ReasonInvalidConfig     = "InvalidConfig"
	ReasonProtocolSkew      = "ProtocolSkew"
)

// Reasons of a Campaign's conditions (ReasonRunning and ReasonTaskNotFound
// above serve it too).
const (
	ReasonFinished       = "Finished"
	ReasonBudgetExceeded = "BudgetExceeded"
	ReasonWithinBudget   = "WithinBudget"
	ReasonNoBudget       = "NoBudget"
	// ReasonResolved: everything a condition waits for exists (TasksResolved,
	// and ReferencesResolved of a Trial or a Campaign).
	ReasonResolved        = "Resolved"
	ReasonNoTasksSelected = "NoTasksSelected"
	// Suspended: spec.suspend holds back new Trials; Resumed: it no longer does.
	ReasonSuspended = "Suspended"
	ReasonResumed   = "Resumed"
)

// Reasons of ReferencesResolved (Trial and Campaign): which kind of object
// is missing; the message names it (kind namespace/name, and the key). A
// Trial whose reference is missing ends as Invalid before any pod exists and
// stays so, as a Job with an invalid spec does: an object created later does
// not revive it (the Trial's spec is immutable; a new Trial runs).
// ReasonResolved (above) is True's reason.
const (
	ReasonSecretNotFound    = "SecretNotFound"
	ReasonConfigMapNotFound = "ConfigMapNotFound"
	// ReasonTaskNotFound (above) serves for the Task.
)

// Kueue (issue 26). A Trial names its LocalQueue with Kueue's own label, on
// the Trial or on its Campaign (which copies it, and LabelPriorityClass, to
// the Trials it creates). Reasons of the Trial's Admitted condition, and of
// an attempt Kueue ended (InfraFailed: never the agent's fault, retried
// without counting against retryPolicy.maxAttempts).
const (
	LabelQueueName     = "kueue.x-k8s.io/queue-name"
	LabelPriorityClass = "kueue.x-k8s.io/priority-class"

	// ReasonQueued: Admitted=False, the Workload waits for quota.
	ReasonQueued = "Queued"
	// ReasonAdmitted: Admitted=True, the message names the ClusterQueue.
	ReasonAdmitted = "Admitted"
	// ReasonEvicted: Kueue evicted the Trial's Workload (for a reason other
	// than preemption: the message says which); the attempt ends InfraFailed.
	ReasonEvicted = "Evicted"
	// ReasonPreempted: Kueue preempted the Trial's Workload for another
	// workload; the attempt ends InfraFailed and the Trial queues again.
	ReasonPreempted = "Preempted"
	// ReasonTrialSuspended: spec.suspend was set by hand (no Workload
	// evicted) while an attempt ran; the attempt ends InfraFailed.
	ReasonTrialSuspended = "TrialSuspended"
)

// Reasons of infrastructure faults the host names after probing the runner.
const (
	// ReasonDBServiceUnavailable: the runner answered, but the DB service
	// behind it did not (down, stopped, restarted empty) while a tool ran or
	// the trial was graded. The attempt is InfraFailed and retried; the agent
	// never reads an error for it and the broken episode is never graded.
	ReasonDBServiceUnavailable = "DBServiceUnavailable"
)

// Labels on everything the manager creates. The pod cache is limited to
// LabelManagedBy=ManagedByValue, so the manager never holds a cluster's pods.
const (
	LabelName      = "app.kubernetes.io/name"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelComponent = "app.kubernetes.io/component"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelTrial     = "eval.tolokaforge.io/trial"
	LabelAttempt   = "eval.tolokaforge.io/attempt"
	LabelRole      = "eval.tolokaforge.io/role"
	// LabelTaskID carries a Task's task_id (pack import sets it).
	LabelTaskID = "eval.tolokaforge.io/task-id"
	// LabelSlotClass marks a Campaign's slot pod (docs/warm-slots.md) with
	// the hash of its pod template: a Trial claims only a slot of its class.
	LabelSlotClass = "eval.tolokaforge.io/slot-class"
	// LabelSlot is a slot pod's own name, set when it is created (slot pods
	// are never relabelled): the per-attempt NetworkPolicy of a terminal
	// task's environment admits the one slot running that attempt by it.
	LabelSlot        = "eval.tolokaforge.io/slot"
	ManagedByValue   = "tolokaforge"
	AppName          = "tolokaforge"
	ComponentManager = "manager"
)

// Roles of an attempt's pods (values of LabelRole).
const (
	RoleRunner    = "runner"
	RoleDBService = "dbservice"
	// RoleEnvironment is a terminal task's own container (the task's image
	// with the exec agent as its entrypoint).
	RoleEnvironment = "environment"
)

// labelHashLen is the length of the hash suffix LabelValue appends.
const labelHashLen = 10

// LabelValue fits s into a label value: s itself when it is one; otherwise
// its label-safe prefix and a hash of the whole, so two long names that
// share a prefix still get different values, and the same name always gets
// the same value.
func LabelValue(s string) string {
	if len(validation.IsValidLabelValue(s)) == 0 {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	h := hex.EncodeToString(sum[:])[:labelHashLen]
	var b strings.Builder
	for _, r := range s {
		if isAlnum(r) || r == '.' || r == '_' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	prefix := b.String()
	if room := validation.LabelValueMaxLength - labelHashLen - 1; len(prefix) > room {
		prefix = prefix[:room]
	}
	prefix = strings.TrimFunc(prefix, func(r rune) bool { return !isAlnum(r) })
	if prefix == "" {
		return h
	}
	return prefix + "-" + h
}

func isAlnum(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}

// Provider keys: a Secret is sent to a model endpoint only if it says so.
const (
	// AnnotationAllowedBaseURLs on a Secret lists the base URLs (comma or
	// newline separated) its values may be sent to, as an API key or an
	// extra header. They match a model's baseURL exactly once surrounding
	// spaces and trailing slashes are dropped; there are no wildcards. A
	// Secret without it is never sent anywhere, so a Trial author cannot
	// point a namespace's unrelated Secret at a server of their choosing.
	AnnotationAllowedBaseURLs = "eval.tolokaforge.io/allowed-base-urls"

	// ReasonSecretNotAllowed: a Trial names a Secret that does not list the
	// model's base URL in AnnotationAllowedBaseURLs (or has no such
	// annotation). The Trial ends Invalid before any pod.
	ReasonSecretNotAllowed = "SecretNotAllowed"
	// ReasonNamespaceNotGranted: the manager may not read Secrets in the
	// Trial's namespace (the install did not grant it a Role there). The
	// Trial ends Invalid before any pod.
	ReasonNamespaceNotGranted = "NamespaceNotGranted"
)
