package agents

import (
	"context"
	"fmt"
	"strings"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/controllers/host"
)

// Oracle replays a task's golden actions as tool calls in one turn, then
// writes host.StopMarker. It validates a pack end to end without a model: a
// pack whose oracle does not pass has a defect.
type Oracle struct {
	actions []task.GoldenAction
}

// NewOracle returns the oracle of t (nil t or no state checks: an oracle with
// nothing to replay, which stops at once).
func NewOracle(t *task.TaskDescription) *Oracle {
	o := &Oracle{}
	if t != nil && t.Grading != nil && t.Grading.StateChecks != nil {
		o.actions = t.Grading.StateChecks.GoldenActions
	}
	return o
}

// Next implements host.Actor. It is stateless: it replays when the agent has
// not spoken yet in conv, and stops otherwise.
func (o *Oracle) Next(_ context.Context, conv []task.Message, tools []*runnerpb.ToolSchema) (host.Turn, error) {
	for _, m := range conv {
		if m.Role == task.RoleAssistant {
			return host.Turn{Content: host.StopMarker}, nil
		}
	}
	if len(o.actions) == 0 {
		return host.Turn{Content: host.StopMarker}, nil
	}
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.GetName()
	}
	calls := make([]task.ToolCall, 0, len(o.actions))
	for i, a := range o.actions {
		name, err := ResolveToolName(a.ToolName, names)
		if err != nil {
			return host.Turn{}, &host.ActorError{Termination: task.TerminationError,
				Err: fmt.Errorf("oracle: golden action %d: %w", i, err)}
		}
		args := strings.TrimSpace(string(a.Arguments))
		if args == "" || args == "null" {
			args = "{}"
		}
		calls = append(calls, task.ToolCall{
			ID:       fmt.Sprintf("oracle_%d", i),
			Type:     "function",
			Function: task.FunctionCall{Name: name, Arguments: args},
		})
	}
	return host.Turn{ToolCalls: calls}, nil
}

// ResolveToolName resolves a golden action's unprefixed name against the
// offered tools exactly as grading does: the tool of that exact name, else
// the single tool named "<prefix>_<name>". No match, or several suffix
// matches, is an error naming the offered set.
func ResolveToolName(name string, offered []string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("names no tool (offered: %s)", strings.Join(offered, ", "))
	}
	var suffixed []string
	for _, o := range offered {
		if o == name {
			return o, nil
		}
		if strings.HasSuffix(o, "_"+name) && len(o) > len(name)+1 {
			suffixed = append(suffixed, o)
		}
	}
	switch len(suffixed) {
	case 1:
		return suffixed[0], nil
	case 0:
		return "", fmt.Errorf("tool %q matches no offered tool, exactly or as <prefix>_%s (offered: %s)", name, name, strings.Join(offered, ", "))
	default:
		return "", fmt.Errorf("tool %q is ambiguous: %s all end in _%s", name, strings.Join(suffixed, ", "), name)
	}
}
