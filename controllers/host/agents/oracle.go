package agents

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/controllers/host"
)

// Oracle replays a task's golden actions as tool calls in one turn, then
// writes host.StopMarker. It validates a pack end to end without a model: a
// pack whose oracle does not pass has a defect.
//
// For a terminal task (task.Environment) the golden path is the task's
// solution: the oracle writes its files under /solution with write_file and
// runs its command with bash, through the same exec path as any agent, and
// the task's tests then grade the container like any agent's.
type Oracle struct {
	actions []task.GoldenAction
	// calls are a terminal task's, built from its solution (or the error
	// why they cannot be).
	calls []task.ToolCall
	err   error
}

// NewOracle returns the oracle of t (nil t or no state checks: an oracle with
// nothing to replay, which stops at once).
func NewOracle(t *task.TaskDescription) *Oracle {
	o := &Oracle{}
	if t != nil && t.HasEnvironment() {
		o.calls, o.err = solutionCalls(t)
		return o
	}
	if t != nil && t.Grading != nil && t.Grading.StateChecks != nil {
		o.actions = t.Grading.StateChecks.GoldenActions
	}
	return o
}

// solutionCalls are a terminal task's solution as tool calls: one
// write_file per file under /solution, then bash running its command for as
// long as the agent may take.
func solutionCalls(t *task.TaskDescription) ([]task.ToolCall, error) {
	sol := t.Environment.Solution
	if sol == nil {
		return nil, nil
	}
	var calls []task.ToolCall
	call := func(name string, args map[string]any) error {
		b, err := json.Marshal(args)
		if err != nil {
			return fmt.Errorf("oracle: %s arguments: %w", name, err)
		}
		calls = append(calls, task.ToolCall{ID: fmt.Sprintf("oracle_%d", len(calls)), Type: "function",
			Function: task.FunctionCall{Name: name, Arguments: string(b)}})
		return nil
	}
	ups := task.EnvironmentUploads(sol.Files, t.ToolArtifacts, task.EnvSolutionDir)
	if len(ups) == 0 {
		return nil, fmt.Errorf("oracle: the task's solution (%s) has no files among the task's files", strings.Join(sol.Files, ", "))
	}
	for _, u := range ups {
		content, err := base64.StdEncoding.DecodeString(t.ToolArtifacts[u.Artifact])
		if err != nil {
			return nil, fmt.Errorf("oracle: solution file %s: %w", u.Artifact, err)
		}
		if err := call("write_file", map[string]any{"path": u.Path, "content": string(content)}); err != nil {
			return nil, err
		}
	}
	timeout := 1800.0
	if a := t.Environment.Agent.TimeoutS; a > 0 && a < timeout {
		timeout = a
	}
	if err := call("bash", map[string]any{"command": shellJoin(sol.Command), "timeout_s": timeout}); err != nil {
		return nil, err
	}
	return calls, nil
}

// shellJoin quotes argv for bash -c.
func shellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// Next implements host.Actor. It is stateless: it replays when the agent has
// not spoken yet in conv, and stops otherwise.
func (o *Oracle) Next(_ context.Context, conv []task.Message, tools []*runnerpb.ToolSchema) (host.Turn, error) {
	for _, m := range conv {
		if m.Role == task.RoleAssistant {
			return host.Turn{Content: host.StopMarker}, nil
		}
	}
	if o.err != nil {
		return host.Turn{}, &host.ActorError{Termination: task.TerminationError, Err: o.err}
	}
	if len(o.calls) > 0 {
		return host.Turn{ToolCalls: o.calls}, nil
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
