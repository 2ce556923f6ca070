package pack

import (
	"encoding/json"
	"path/filepath"
	"strings"

	"tolokaforge.io/operator/api/task"
)

// A Tolokaforge native task names a Python MCP server script
// (tools.agent.mcp_server: mcp_server.py). The Go runner cannot load Python
// classes, but it can run any MCP server over stdio, so the importer maps
// the script to a command:
//
//  1. --mcp-command SCRIPT=ARGV (Options.MCPCommands) maps a script by its
//     file name, for any server the user provides;
//  2. otherwise a known Go server is used when every tool the task enables
//     from the script is one that server serves with the same behaviour
//     (knownServers: the shop domain of spec/shop-domain.md, served by
//     `tolokaforge mcp shop`);
//  3. otherwise the script stays a script (mcp_server_script; the runner
//     runs a .py with python3), shipped in tool_artifacts when the pack
//     holds it, and a diagnostic says so.

// knownServer is a Go MCP server that replaces a Python one.
type knownServer struct {
	toolset string
	command []string
	tools   []string
}

// knownServers are the Go servers the importer maps to. The shop server's
// tools are spec/shop-domain.md's table.
var knownServers = []knownServer{{
	toolset: "shop",
	command: []string{"tolokaforge", "mcp", "shop"},
	tools:   []string{"confirm_payment", "get_customer", "list_products", "place_order"},
}}

// mcpSource is how a script's tools run; note is set when the mapping is a
// fallback the user should know about.
type mcpSource struct {
	toolset string
	command []string
	script  string
	note    string
}

func resolveMCP(script string, enabled []string, commands map[string][]string) mcpSource {
	base := filepath.Base(script)
	if argv, ok := commands[base]; ok {
		return mcpSource{toolset: strings.TrimSuffix(base, filepath.Ext(base)), command: argv}
	}
	if argv, ok := commands[script]; ok {
		return mcpSource{toolset: strings.TrimSuffix(base, filepath.Ext(base)), command: argv}
	}
	for _, k := range knownServers {
		if len(enabled) > 0 && subset(enabled, k.tools) {
			return mcpSource{toolset: k.toolset, command: k.command}
		}
	}
	return mcpSource{
		toolset: strings.TrimSuffix(base, filepath.Ext(base)),
		script:  script,
		note: "no Go MCP server is known for " + base + " and its tools; the runner will run the script " +
			"(python3 for .py) — pass --mcp-command " + base + "=ARGV to map it to a server",
	}
}

func subset(a, b []string) bool {
	in := map[string]bool{}
	for _, s := range b {
		in[s] = true
	}
	for _, s := range a {
		if !in[s] {
			return false
		}
	}
	return true
}

// source is the ToolSource of one tool served by s.
func (s mcpSource) source(tool string) *task.ToolSource {
	src := &task.ToolSource{
		Toolset:         s.toolset,
		ClassName:       tool,
		InvocationStyle: task.InvocationMCPServer,
		Extra:           map[string]json.RawMessage{},
	}
	if len(s.command) > 0 {
		argv, _ := json.Marshal(s.command) // a []string always marshals
		src.Extra["command"] = argv
	} else {
		script := s.script
		src.MCPServerScript = &script
	}
	return src
}

// ParseMCPCommand parses SCRIPT=ARGV (ARGV split on spaces).
func ParseMCPCommand(s string) (string, []string, bool) {
	script, argv, ok := strings.Cut(s, "=")
	fields := strings.Fields(argv)
	if !ok || script == "" || len(fields) == 0 {
		return "", nil, false
	}
	return script, fields, true
}
