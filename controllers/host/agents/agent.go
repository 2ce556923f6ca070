package agents

import (
	"context"

	"tolokaforge.io/operator/api/llm"
	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/controllers/host"
)

// LLMAgent is the agent under evaluation behind an OpenAI-compatible
// endpoint: its view (system prompt first) is the request, its tools the
// agent's slice of tool_schemas.
type LLMAgent struct {
	Model *chatModel
	tools llm.ToolCache
	conv  llm.ConvCache
}

// NewLLMAgent wraps a model as the agent.
func NewLLMAgent(m *chatModel) *LLMAgent { return &LLMAgent{Model: m} }

// Next implements host.Actor.
func (a *LLMAgent) Next(ctx context.Context, conv []task.Message, tools []*runnerpb.ToolSchema) (host.Turn, error) {
	return complete(ctx, a.Model, &a.tools, &a.conv, conv, tools)
}
