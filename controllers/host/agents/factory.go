package agents

import (
	"fmt"

	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/controllers/host"
)

// NewAgent returns the actor spec.Agent configures: the oracle for provider
// oracle, an LLMAgent for openai (opts.APIKey, else api_key_env).
func NewAgent(spec *task.TrialSpec, opts Options) (host.Actor, error) {
	if spec == nil || spec.Agent == nil {
		return nil, fmt.Errorf("agent: the trial spec has no agent model config")
	}
	switch spec.Agent.Provider {
	case task.ProviderOracle:
		return NewOracle(spec.Task), nil
	case task.ProviderOpenAI:
		m, err := NewChatModel("agent", spec.Agent, opts)
		if err != nil {
			return nil, err
		}
		return NewLLMAgent(m), nil
	default:
		return nil, fmt.Errorf("agent: provider %q is not one of %s, %s", spec.Agent.Provider, task.ProviderOracle, task.ProviderOpenAI)
	}
}

// NewUser returns the simulated user: an LLMUser when the spec carries a
// user_simulator_model (opening with initialUserMessage when set), else the
// host's default scripted user.
func NewUser(spec *task.TrialSpec, initialUserMessage string, opts Options) (host.Actor, error) {
	if spec == nil {
		return nil, fmt.Errorf("user simulator: nil trial spec")
	}
	if spec.UserSimulatorModel == nil {
		return host.DefaultUser(spec.Task, initialUserMessage), nil
	}
	if spec.UserSimulatorModel.Provider == task.ProviderOracle {
		return nil, fmt.Errorf("user simulator: provider %q cannot play the user", task.ProviderOracle)
	}
	m, err := NewChatModel("user simulator", spec.UserSimulatorModel, opts)
	if err != nil {
		return nil, err
	}
	return NewLLMUser(m, spec.Task, initialUserMessage), nil
}
