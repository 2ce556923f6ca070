package judge

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"tolokaforge.io/operator/api/llm"
	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
)

// CallFunc executes one of the judge's tool calls against the trial's state. A
// tool-shaped failure comes back as a status other than ToolCallSuccess and is shown to
// the judge, as it would be to an agent; err is a fault outside the tool (transport,
// DB, the state guard), and it ends the judge's run.
type CallFunc func(ctx context.Context, name string, args json.RawMessage) (status task.ToolCallStatus, output string, err error)

// Tools are the read-only agent tools the judge is offered (llm_judge.tools), by
// their registered names, with the function that runs them. Build with NewTools.
type Tools struct {
	names   []string
	byName  map[string]bool
	encoded json.RawMessage
	call    CallFunc
}

// NewTools offers schemas to the judge. Each must be advertised category read: the
// grader restores the trial's DB after the judge whatever its tools did, but a tool
// that is not even declared read-only is refused here, by name, before any call is
// made (validation refuses it earlier still; this holds for a spec built in Go or a
// registration that differs from the task). A schema offered twice is offered once.
func NewTools(schemas []*runnerpb.ToolSchema, call CallFunc) (*Tools, error) {
	if call == nil {
		return nil, fmt.Errorf("judge tools: no function to run them")
	}
	t := &Tools{byName: map[string]bool{}, call: call}
	var list []*runnerpb.ToolSchema
	for _, s := range schemas {
		name := s.GetName()
		if s.GetCategory() != string(task.CategoryRead) {
			cat := s.GetCategory()
			if cat == "" {
				cat = "(none)"
			}
			return nil, fmt.Errorf("judge tool %s is registered with category %s: the judge may call only tools of category read", name, cat)
		}
		if t.byName[name] {
			continue
		}
		t.byName[name] = true
		t.names = append(t.names, name)
		list = append(list, s)
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("judge tools: none offered")
	}
	enc, err := llm.EncodeTools(list)
	if err != nil {
		return nil, fmt.Errorf("judge tools: %w", err)
	}
	t.encoded = enc
	return t, nil
}

// run executes one of the judge's tool calls and returns what the judge is shown. A
// tool that was not offered is refused by name and shown to the judge (it still
// counts against max_calls: the judge spent a turn on it); err is a fault outside the
// tool.
func (t *Tools) run(ctx context.Context, c task.ToolCall) (string, error) {
	name := c.Function.Name
	if !t.byName[name] {
		return fmt.Sprintf("error: tool %q is not one of the tools offered to you (%s); nothing was run", name, strings.Join(t.names, ", ")), nil
	}
	args := strings.TrimSpace(c.Function.Arguments)
	if args == "" {
		args = "{}"
	}
	status, output, err := t.call(ctx, name, json.RawMessage(args))
	if err != nil {
		return "", fmt.Errorf("the judge's call of tool %s failed outside the tool: %w", name, err)
	}
	if status != task.ToolCallSuccess {
		return clip(fmt.Sprintf("%s: %s", status, output)), nil
	}
	return clip(output), nil
}
