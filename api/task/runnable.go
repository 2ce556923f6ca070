package task

import (
	"errors"
	"fmt"
)

// toolsetBuiltin is the toolset name of the runner's builtin tools.
const toolsetBuiltin = "builtin"

// CheckRunnable refuses a tool whose implementation the runner cannot load:
// docker_compose_exec runs the tool inside a docker compose service. Python
// tools (tau_sync, mcp_async) run in the runner's Python tool host. The Task
// controller, pack import/validate and the runner's RegisterTrial all ask
// this one function, so a pack that cannot run is refused before any pod or
// token, with the same words everywhere.
func (ts *ToolSchema) CheckRunnable() error {
	src := ts.Source
	if src == nil || src.Toolset == toolsetBuiltin || src.InvocationStyle != invocationDockerComposeExec {
		return nil
	}
	// Not a class: the tool is a command run in a compose service's container,
	// and the runner has no container runtime to start one.
	return fmt.Errorf("source.invocation_style %q runs the tool as a command in a docker compose service's container (docker compose exec), and this runner starts no containers; supported styles: %s (source null or toolset %q), %s, %s and %s",
		src.InvocationStyle, toolsetBuiltin, toolsetBuiltin, InvocationTauSync, invocationMCPAsync, InvocationMCPServer)
}

// CheckRunnable is ToolSchema.CheckRunnable over every agent and user tool,
// naming each refused tool by its place.
func (t *TaskDescription) CheckRunnable() error {
	var errs []error
	for _, side := range []struct {
		key   string
		tools []ToolSchema
	}{{"agent_tools", t.AgentTools}, {"user_tools", t.UserTools}} {
		for i := range side.tools {
			if err := side.tools[i].CheckRunnable(); err != nil {
				errs = append(errs, fmt.Errorf("task.%s[%d] (%s): %w", side.key, i, side.tools[i].Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// InvocationMCPAsync is the style of a TlkMcpCore-style Python tool class
// (async run_with_validation(db, arguments)).
const InvocationMCPAsync = invocationMCPAsync
