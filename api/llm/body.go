package llm

import (
	"bytes"
	"strconv"
	"sync"

	"tolokaforge.io/operator/api/task"
)

// ConvCache keeps each message of the last conversation it encoded. The
// loop only ever appends to a view, so from one turn to the next only the
// new messages are encoded; the prefix check compares strings that share
// their backing arrays, which costs a pointer comparison each. Another
// conversation (a shared actor serving another trial) just re-encodes from
// where the two differ. The zero value is ready; it is safe for concurrent
// use.
type ConvCache struct {
	mu   sync.Mutex
	msgs []task.Message
	enc  [][]byte
}

func sameMessage(a, b *task.Message) bool {
	if a.Role != b.Role || a.Content != b.Content || a.ToolCallID != b.ToolCallID || len(a.ToolCalls) != len(b.ToolCalls) {
		return false
	}
	for i := range a.ToolCalls {
		if a.ToolCalls[i] != b.ToolCalls[i] {
			return false
		}
	}
	return true
}

// messages returns the JSON array of conv's request messages.
func (c *ConvCache) messages(conv []task.Message) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := 0
	for k < len(conv) && k < len(c.msgs) && sameMessage(&conv[k], &c.msgs[k]) {
		k++
	}
	c.msgs, c.enc = c.msgs[:k], c.enc[:k]
	if k < len(conv) {
		wire, err := toWire(conv[k:])
		if err != nil {
			return nil, err
		}
		for i := range wire {
			b, err := marshal(wire[i])
			if err != nil {
				return nil, err
			}
			c.msgs = append(c.msgs, conv[k+i])
			c.enc = append(c.enc, b)
		}
	}
	n := 2
	for _, b := range c.enc {
		n += len(b) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, '[')
	for i, b := range c.enc {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, b...)
	}
	return append(out, ']'), nil
}

// requestBody assembles the chat-completions body around already encoded
// messages and tools (what chatRequest would marshal to, without re-scanning
// the conversation).
func requestBody(model string, messages, tools []byte, c *task.ModelConfig, extra []byte) ([]byte, error) {
	var b bytes.Buffer
	b.Grow(len(messages) + len(tools) + len(extra) + 160)
	m, err := marshal(model)
	if err != nil {
		return nil, err
	}
	b.WriteString(`{"model":`)
	b.Write(m)
	b.WriteString(`,"messages":`)
	b.Write(messages)
	if len(tools) > 0 {
		b.WriteString(`,"tools":`)
		b.Write(tools)
	}
	if c.Temperature != nil {
		b.WriteString(`,"temperature":`)
		b.WriteString(strconv.FormatFloat(*c.Temperature, 'g', -1, 64))
	}
	if c.TopP != nil {
		b.WriteString(`,"top_p":`)
		b.WriteString(strconv.FormatFloat(*c.TopP, 'g', -1, 64))
	}
	if c.MaxTokens != nil {
		b.WriteString(`,"max_tokens":`)
		b.WriteString(strconv.Itoa(*c.MaxTokens))
	}
	if c.MaxCompletionTokens != nil {
		b.WriteString(`,"max_completion_tokens":`)
		b.WriteString(strconv.Itoa(*c.MaxCompletionTokens))
	}
	if c.Seed != nil {
		b.WriteString(`,"seed":`)
		b.WriteString(strconv.FormatInt(*c.Seed, 10))
	}
	if c.ReasoningEffort != "" {
		e, err := marshal(c.ReasoningEffort)
		if err != nil {
			return nil, err
		}
		b.WriteString(`,"reasoning_effort":`)
		b.Write(e)
	}
	if len(extra) > 0 {
		b.WriteByte(',')
		b.Write(extra)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
