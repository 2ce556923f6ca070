package task

import (
	"strings"
	"testing"
)

func TestCheckRunnable(t *testing.T) {
	script := "srv.py"
	cases := []struct {
		name string
		src  *ToolSource
		want string
	}{
		{"no source is a builtin", nil, ""},
		{"builtin toolset", &ToolSource{Toolset: "builtin", ClassName: "calculator"}, ""},
		{"mcp server", &ToolSource{InvocationStyle: InvocationMCPServer, MCPServerScript: &script}, ""},
		{"tau_sync runs in the Python tool host", &ToolSource{Toolset: "tau", InvocationStyle: InvocationTauSync, ModulePath: "tau_tools.get_order", ClassName: "GetOrder"}, ""},
		{"mcp_async runs in the Python tool host", &ToolSource{Toolset: "x", InvocationStyle: InvocationMCPAsync, ModulePath: "tools.search", ClassName: "Search"}, ""},
		{"docker_compose_exec", &ToolSource{Toolset: "x", InvocationStyle: invocationDockerComposeExec},
			`task.agent_tools[0] (get_order): source.invocation_style "docker_compose_exec" runs the tool as a command in a docker compose service's container (docker compose exec), and this runner starts no containers; supported styles: builtin (source null or toolset "builtin"), tau_sync, mcp_async and mcp_server`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			td := &TaskDescription{AgentTools: []ToolSchema{{Name: "get_order", Source: tc.src}}}
			err := td.CheckRunnable()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
				t.Fatalf("err = %v, want prefix %q", err, tc.want)
			}
		})
	}
	both := &TaskDescription{
		AgentTools: []ToolSchema{{Name: "a", Source: &ToolSource{InvocationStyle: invocationDockerComposeExec}}},
		UserTools:  []ToolSchema{{Name: "u", Source: &ToolSource{InvocationStyle: invocationDockerComposeExec}}},
	}
	if err := both.CheckRunnable(); err == nil || !strings.Contains(err.Error(), "task.agent_tools[0] (a)") || !strings.Contains(err.Error(), "task.user_tools[0] (u)") {
		t.Fatalf("both sides: %v", err)
	}
}
