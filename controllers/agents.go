package controllers

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"

	"tolokaforge.io/operator/api/llm"
	"tolokaforge.io/operator/api/task"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/host"
	"tolokaforge.io/operator/controllers/host/agents"
)

// Actor roles an ActorFactory is asked for.
const (
	ActorAgent = "agent"
	actorUser  = "user"
)

// ActorRequest is what building one actor of one attempt takes.
type ActorRequest struct {
	// Role is ActorAgent or ActorUser.
	Role string
	// Trial is a copy of the Trial as the attempt started.
	Trial *evalv1.Trial
	// Attempt is the attempt number.
	Attempt int32
	// Spec is the attempt's TrialSpec (task, model configs; never a key).
	Spec *task.TrialSpec
	// Task is Spec.Task, and Model the role's model as the Trial wrote it.
	Task  *task.TaskDescription
	Model evalv1.ModelSpec
	// InitialUserMessage opens the conversation (the Task's).
	InitialUserMessage string
	// APIKey is read from the role's apiKeySecretRef at attempt start. It
	// lives in this request and the actor only: never in a pod, status,
	// event or log.
	APIKey string
	// Headers are the role's extra header values, read from their Secrets
	// at attempt start; like APIKey, they live here and in the actor only.
	Headers map[string]string
	// Limits is the manager's shared per-model pacing registry.
	Limits *llm.Limits
	// Log is for the actor; it never receives the key.
	Log logr.Logger
}

// ActorFactory builds the actor for one side of one attempt. An error ends
// the attempt as Invalid (a configuration the manager cannot drive).
type ActorFactory func(ctx context.Context, req ActorRequest) (host.Actor, error)

// DefaultActors builds the actors of package agents: the oracle or an
// OpenAI-compatible chat agent, and the LLM user simulator. A scripted user
// with lines from the Trial is built by the driver, not here.
func DefaultActors(_ context.Context, req ActorRequest) (host.Actor, error) {
	opts := agents.Options{APIKey: req.APIKey, Headers: req.Headers, Limits: req.Limits, Log: req.Log}
	switch req.Role {
	case ActorAgent:
		return agents.NewAgent(req.Spec, opts)
	case actorUser:
		return agents.NewUser(req.Spec, req.InitialUserMessage, opts)
	}
	return nil, fmt.Errorf("unknown actor role %q", req.Role)
}
