package agents

import (
	"context"
	"encoding/json"
	"sync"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/controllers/host"
)

// LLMAgent is the agent under evaluation behind an OpenAI-compatible
// endpoint: its view (system prompt first) is the request, its tools the
// agent's slice of tool_schemas.
type LLMAgent struct {
	Model *ChatModel
	tools toolCache
	conv  convCache
}

// NewLLMAgent wraps a model as the agent.
func NewLLMAgent(m *ChatModel) *LLMAgent { return &LLMAgent{Model: m} }

// Next implements host.Actor.
func (a *LLMAgent) Next(ctx context.Context, conv []task.Message, tools []*runnerpb.ToolSchema) (host.Turn, error) {
	return complete(ctx, a.Model, &a.tools, &a.conv, conv, tools)
}

func complete(ctx context.Context, m *ChatModel, tc *toolCache, cc *convCache, conv []task.Message, tools []*runnerpb.ToolSchema) (host.Turn, error) {
	tl, err := tc.get(tools)
	if err != nil {
		return host.Turn{}, err
	}
	content, calls, usage, err := m.complete(ctx, cc, conv, tl)
	if err != nil {
		return host.Turn{Usage: usage}, err
	}
	return host.Turn{Content: content, ToolCalls: calls, Usage: usage}, nil
}

// toolCache encodes a tool list once: the loop offers the same slice every
// turn, and the schemas are most of a short conversation's request body.
type toolCache struct {
	mu    sync.Mutex
	first *runnerpb.ToolSchema
	n     int
	tools json.RawMessage
}

func (c *toolCache) get(tools []*runnerpb.ToolSchema) (json.RawMessage, error) {
	if len(tools) == 0 {
		return nil, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.first == tools[0] && c.n == len(tools) {
		return c.tools, nil
	}
	tl, err := encodeTools(tools)
	if err != nil {
		return nil, err
	}
	c.first, c.n, c.tools = tools[0], len(tools), tl
	return tl, nil
}
