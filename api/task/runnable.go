package task

import (
	"errors"
	"fmt"
)

// toolsetBuiltin is the toolset name of the runner's builtin tools.
const toolsetBuiltin = "builtin"

// CheckRunnable refuses a tool whose implementation the Go runner cannot
// load: tau_sync and mcp_async name Python classes, docker_compose_exec runs
// the tool inside a docker compose service. The Task controller, pack
// import/validate and the runner's RegisterTrial all ask this one function,
// so a pack that cannot run is refused before any pod or token, with the same
// words everywhere.
func (ts *ToolSchema) CheckRunnable() error {
	src := ts.Source
	if src == nil || src.Toolset == toolsetBuiltin || src.InvocationStyle == InvocationMCPServer {
		return nil
	}
	what := "loads a Python class, which this Go runner cannot run"
	if src.InvocationStyle == invocationDockerComposeExec {
		// Not a class: the tool is a command run in a compose service's container,
		// and the runner has no container runtime to start one.
		what = "runs the tool as a command in a docker compose service's container (docker compose exec), and this runner starts no containers"
	}
	return fmt.Errorf("source.invocation_style %q %s; supported styles: %s (source null or toolset %q) and %s",
		src.InvocationStyle, what, toolsetBuiltin, toolsetBuiltin, InvocationMCPServer)
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
