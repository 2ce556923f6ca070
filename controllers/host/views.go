package host

import (
	"time"

	"tolokaforge.io/operator/api/task"
)

// The transcript holds every message in execution order; each actor's view
// holds what that actor saw, from its side. The agent's view is the
// transcript without the user's tool traffic (a provider accepts tool calls
// only on assistant messages); the user's view is mirrored, because to the
// user simulator's model the agent is the "user" it answers.

func (r *run) addAgentMessage(m task.Message) {
	r.transcript = append(r.transcript, m)
	r.stamps = append(r.stamps, time.Now())
	r.agentConv = append(r.agentConv, m)
	if m.Content != "" {
		r.userConv = append(r.userConv, task.Message{Role: task.RoleUser, Content: m.Content})
	}
}

func (r *run) addUserMessage(m task.Message) {
	r.transcript = append(r.transcript, m)
	r.stamps = append(r.stamps, time.Now())
	r.userConv = append(r.userConv, task.Message{Role: task.RoleAssistant, Content: m.Content, ToolCalls: m.ToolCalls})
	if m.Content != "" {
		r.agentConv = append(r.agentConv, task.Message{Role: task.RoleUser, Content: m.Content})
	}
}

// addToolResult files a tool message in the view of the actor that made the call.
func (r *run) addToolResult(executor string, m task.Message) {
	r.transcript = append(r.transcript, m)
	r.stamps = append(r.stamps, time.Now())
	if executor == task.ExecutorUser {
		r.userConv = append(r.userConv, m)
	} else {
		r.agentConv = append(r.agentConv, m)
	}
}
