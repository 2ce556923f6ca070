package agents

import (
	"context"
	"fmt"
	"strings"

	"tolokaforge.io/operator/api/llm"
	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/controllers/host"
)

// UserGreeting is the agent's opening line as the simulated user hears it
// (tau-bench's convention): the user model answers it with its request.
const UserGreeting = "Hi! How can I help you today?"

// LLMUser is a simulated user behind an OpenAI-compatible endpoint, prompted
// tau-bench style from the task's backstory and persona. Its view is the
// host's mirrored one: the agent's words as role "user", its own as
// "assistant", results of its own tool calls as role "tool".
type LLMUser struct {
	Model *chatModel
	// System is the user model's instructions (UserPrompt of the task).
	System string
	// Opening, when set, is said verbatim as the first message instead of
	// asking the model (a Task's initialUserMessage).
	Opening string
	tools   llm.ToolCache
	conv    llm.ConvCache
}

// NewLLMUser prompts m with the task's user simulator configuration.
func NewLLMUser(m *chatModel, t *task.TaskDescription, opening string) *LLMUser {
	var cfg *task.UserSimulatorConfig
	if t != nil {
		cfg = t.UserSimulator
	}
	return &LLMUser{Model: m, System: UserPrompt(cfg), Opening: opening}
}

// UserPrompt is the user simulator's system prompt, after tau-bench's.
func UserPrompt(cfg *task.UserSimulatorConfig) string {
	backstory, persona := "", task.DefaultPersona
	if cfg != nil {
		backstory = strings.TrimSpace(cfg.Backstory)
		if cfg.Persona != "" {
			persona = cfg.Persona
		}
	}
	if backstory == "" {
		backstory = "You need help from a customer service agent."
	}
	var b strings.Builder
	b.WriteString("You are a user interacting with a customer service agent.\n\n")
	fmt.Fprintf(&b, "Instruction: %s\n\n", backstory)
	fmt.Fprintf(&b, "Persona: %s\n\n", persona)
	b.WriteString("Rules:\n")
	b.WriteString("- Write one message at a time, as the user would.\n")
	b.WriteString("- Do not give away the whole instruction at once; share only what the current step needs.\n")
	b.WriteString("- Do not invent information the instruction does not give you. If the agent asks for something you were not told, say you do not know or do not have it.\n")
	b.WriteString("- Do not repeat the instruction word for word; say it in your own words.\n")
	b.WriteString("- Stay in character and keep the conversation natural.\n")
	fmt.Fprintf(&b, "- When the instruction's goal is met, or cannot be met, reply with %s alone to end the conversation.\n", host.StopMarker)
	return b.String()
}

// Next implements host.Actor.
func (u *LLMUser) Next(ctx context.Context, conv []task.Message, tools []*runnerpb.ToolSchema) (host.Turn, error) {
	if u.Opening != "" && !saidAnything(conv) {
		return host.Turn{Content: u.Opening}, nil
	}
	view := make([]task.Message, 0, len(conv)+2)
	view = append(view,
		task.Message{Role: task.RoleSystem, Content: u.System},
		task.Message{Role: task.RoleUser, Content: UserGreeting})
	view = append(view, conv...)
	return complete(ctx, u.Model, &u.tools, &u.conv, view, tools)
}

func saidAnything(conv []task.Message) bool {
	for _, m := range conv {
		if m.Role == task.RoleAssistant {
			return true
		}
	}
	return false
}
