package tools

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"tolokaforge.io/operator/api/task"
)

// Tool is one callable tool of one trial.
//
// Call receives a JSON object that already passed the tool's schema and returns
// the text the LLM sees. A returned error is a tool error (ExecutionStatus ERROR,
// its message shown to the LLM), except an *ArgumentError, which is
// INVALID_ARGUMENTS. Call must honour ctx: the runner cancels it when the call's
// budget runs out.
type Tool interface {
	Call(ctx context.Context, args json.RawMessage) (string, error)
}

// stateful is implemented by a tool that holds a session across calls (an MCP
// server). A call that overran its budget may have left that session mid-request,
// so Invoke calls Invalidate and the tool rebuilds the session before its next
// call instead of reading a desynchronised stream.
type stateful interface {
	Invalidate()
}

// Adapter names, as HealthCheck reports them.
const (
	AdapterBuiltin   = "builtin"
	AdapterMCPServer = "mcp_server"
)

// Entry is one registered tool: what RegisterTrial advertises for it and how to
// call it.
type Entry struct {
	Name        string
	Description string
	// Parameters is the advertised JSON Schema, compact.
	Parameters json.RawMessage
	Category   task.ToolCategory
	// Timeout is the tool's own budget (its timeout_s, else the trial default).
	Timeout time.Duration
	// Adapter is AdapterBuiltin or AdapterMCPServer.
	Adapter   string
	Tool      Tool
	Validator *Validator
	// Inline runs the tool on the caller's goroutine. Only for tools that
	// return promptly once their context ends (the catalog builtins): any
	// other tool runs on a goroutine of its own, so one that ignores its
	// context still cannot hold the call past its budget.
	Inline bool
}

// ErrDuplicate is returned by Registry.Add for a name already registered.
var ErrDuplicate = errors.New("tool already registered")
