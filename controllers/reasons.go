package controllers

import (
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// FieldOwner is the field manager of every write the manager makes, so
// managedFields says who wrote what no matter which code path wrote it.
const FieldOwner = "tolokaforge-manager"

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
)

// Reasons of the Trial's conditions and events. One vocabulary for both, so
// `kubectl describe` reads the same words in Conditions and Events.
//
// Terminal reasons of Completed=True are the phases Passed, Failed,
// GradingFailed, InfraFailed, Invalid and ProtocolSkew (string(evalv1.Phase*)).
const (
	// Completed=False while the trial has no outcome yet.
	ReasonTaskNotFound = "TaskNotFound" // taskRef names no Task (yet)
	ReasonStarting     = "Starting"     // an attempt waits for its pods or a driver
	ReasonRunning      = "Running"      // a driver registered the attempt
	ReasonBackoff      = "Backoff"      // an infra fault ended the attempt; next one pending

	// PodsReady.
	ReasonPodsReady   = "PodsReady"
	ReasonPodsPending = "PodsPending"

	// Registered.
	ReasonRegistered    = "Registered"
	ReasonNotRegistered = "NotRegistered"

	// Both PodsReady and Registered once an attempt has ended carry the
	// attempt's own reason (one of the attempt reasons below or a terminal one).

	// Attempt reasons for infrastructure faults detected by the controller
	// (the driver adds its own, e.g. RunnerUnavailable, TrialLost).
	ReasonPodFailed         = "PodFailed"        // a pod's container exited
	ReasonPodLost           = "PodLost"          // a pod vanished or is being deleted
	ReasonPodsNotReady      = "PodsNotReady"     // timeouts.podsReady elapsed
	ReasonManagerRestarted  = "ManagerRestarted" // the attempt's driver died with its process
	ReasonAPIKeyUnavailable = "APIKeyUnavailable"
	ReasonCanceled          = "Canceled"
)

// Attempt outcomes (AttemptStatus.Outcome).
const (
	OutcomeRunning       evalv1.AttemptOutcome = "Running"
	OutcomePassed        evalv1.AttemptOutcome = "Passed"
	OutcomeFailed        evalv1.AttemptOutcome = "Failed"
	OutcomeGradingFailed evalv1.AttemptOutcome = "GradingFailed"
	OutcomeInfraFailed   evalv1.AttemptOutcome = "InfraFailed"
	OutcomeInvalid       evalv1.AttemptOutcome = "Invalid"
	OutcomeProtocolSkew  evalv1.AttemptOutcome = "ProtocolSkew"
)

// Labels on everything the manager creates. The pod cache is limited to
// LabelManagedBy=ManagedByValue, so the manager never holds a cluster's pods.
const (
	LabelName        = "app.kubernetes.io/name"
	LabelManagedBy   = "app.kubernetes.io/managed-by"
	LabelComponent   = "app.kubernetes.io/component"
	LabelInstance    = "app.kubernetes.io/instance"
	LabelTrial       = "eval.tolokaforge.io/trial"
	LabelAttempt     = "eval.tolokaforge.io/attempt"
	LabelRole        = "eval.tolokaforge.io/role"
	ManagedByValue   = "tolokaforge"
	AppName          = "tolokaforge"
	ComponentManager = "manager"
)

// Roles of an attempt's pods.
const (
	RoleRunner    = "runner"
	RoleDBService = "dbservice"
)
