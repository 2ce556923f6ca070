package llm

import (
	"encoding/json"
	"sync"

	"tolokaforge.io/operator/api/runnerpb"
)

// ToolCache encodes a tool list once: a loop offers the same slice every
// turn, and the schemas are most of a short conversation's request body.
// The zero value is ready; it is safe for concurrent use.
type ToolCache struct {
	mu    sync.Mutex
	first *runnerpb.ToolSchema
	n     int
	tools json.RawMessage
}

// Get returns EncodeTools(tools), reusing the last encoding when tools is
// the same slice as last time.
func (c *ToolCache) Get(tools []*runnerpb.ToolSchema) (json.RawMessage, error) {
	if len(tools) == 0 {
		return nil, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.first == tools[0] && c.n == len(tools) {
		return c.tools, nil
	}
	tl, err := EncodeTools(tools)
	if err != nil {
		return nil, err
	}
	c.first, c.n, c.tools = tools[0], len(tools), tl
	return tl, nil
}
