package pack

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"tolokaforge.io/operator/api/task"
)

// Describer reads the schemas of a pack's Python tools from the tools themselves:
// the tools named are served by the script Script, one of Files (the task's
// tool_artifacts by slash path): a registry (a .py with a module-level TOOLS dict of
// tau_sync classes, each answering get_info()) or, with Stdio, a stdio MCP server
// (tools/list). A tool absent from the answer, or with no parameters, gave none.
type Describer func(ctx context.Context, req DescribeRequest) (map[string]DescribedTool, error)

// DescribeRequest is one script's tools to describe.
type DescribeRequest struct {
	Files  map[string][]byte
	Script string
	Tools  []string
	// Stdio: the script is a stdio MCP server (no TOOLS registry), asked
	// tools/list; a server that cannot be asked leaves its tools the fallback.
	Stdio bool
}

// DescribedTool is a tool's own description and JSON Schema of its parameters.
type DescribedTool struct {
	Description string
	Parameters  json.RawMessage
}

// registryScript matches a module-level TOOLS assignment (as the runner reads a
// registry script: runner/python.go).
var registryScript = regexp.MustCompile(`(?m)^TOOLS\s*(:[^=\n]*)?=`)

// describe replaces the fallback schemas in out (the tools of one actor, served by
// src) with what the tools say about themselves, and returns the names of those
// that said nothing, which keep the fallback.
func (c *converter) describe(m *mapping, src *mcpSource, out []task.ToolSchema) ([]string, error) {
	var pending []string
	at := map[string]int{}
	for i, s := range out {
		if s.Source != nil && s.Source.InvocationStyle == task.InvocationMCPServer && s.Description == "Agent tool: "+s.Name &&
			string(s.Parameters) == `{"type":"object","properties":{}}` {
			pending = append(pending, s.Name)
			at[s.Name] = i
		}
	}
	if len(pending) == 0 || c.opts.Describe == nil || src == nil || !strings.HasSuffix(src.script, ".py") {
		return pending, nil
	}
	files := make(map[string][]byte, len(c.td.ToolArtifacts))
	for p, enc := range c.td.ToolArtifacts {
		b, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			return nil, fmt.Errorf("tool_artifacts %s: %w", p, err)
		}
		files[p] = b
	}
	code, ok := files[src.script]
	if !ok {
		return pending, nil
	}
	stdio := !registryScript.Match(code)
	got, err := c.opts.Describe(c.ctx, DescribeRequest{Files: files, Script: src.script, Tools: pending, Stdio: stdio})
	if err != nil {
		if c.ctx.Err() != nil {
			return nil, c.ctx.Err()
		}
		// The import may run where the pack's Python is not (the cluster's runner
		// image has it): report, keep the fallback; RegisterTrial loads the tools
		// again and refuses a tool that does not load, before any model is called.
		what := "reading the tools' schemas"
		if stdio {
			what = "asking the MCP server for tools/list"
		}
		c.rep.add(m.file, m.at("mcp_server"), "%s from %s at import failed: %v", what, src.script, err)
		return pending, nil
	}
	var fallback []string
	for _, name := range pending {
		d, ok := got[name]
		if !ok || !isSchemaObject(d.Parameters) {
			fallback = append(fallback, name)
			continue
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, d.Parameters); err != nil {
			fallback = append(fallback, name)
			continue
		}
		s := &out[at[name]]
		s.Parameters = compact.Bytes()
		if d.Description != "" {
			s.Description = d.Description
		}
	}
	return fallback, nil
}

// isSchemaObject reports whether raw is a JSON object (a JSON Schema).
func isSchemaObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return len(raw) > 0 && json.Unmarshal(raw, &m) == nil && m != nil
}
