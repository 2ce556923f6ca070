package runner

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner/tools"
)

// trial is one registered trial. mu serializes every RPC on it; closed is set
// by cleanup under mu, after which the trial answers as unknown.
type trial struct {
	id   string
	spec *task.TrialSpec
	log  logr.Logger

	db       *trialDB
	dir      string // the trial's directory (removed on cleanup)
	filesDir string // file-tool root, inside dir

	// judgeKey is the judge's key the host gave with RegisterTrial ("" none:
	// the grader reads its secrets directory). Dropped at cleanup.
	judgeKey string

	agent, user    *tools.Registry
	sessions       []*mcpSession
	py             *pySession // the Python tool host, nil without Python tools
	defaultTimeout time.Duration
	// maxOutput bounds one tool result in bytes (the task's
	// max_tool_output_bytes, else 1 MiB), whatever serves the tool.
	maxOutput int
	// env is the task's own container (nil without an environment);
	// agentDone is set when grading began: its tools are no longer served.
	env       *trialEnvironment
	agentDone bool

	mu      sync.Mutex
	closed  bool
	records []task.RecordedToolCall
	calls   map[string]*callEntry
}

// callEntry is what a call_id was used for and what it answered, so a host
// retry gets the same answer without running the tool again.
type callEntry struct {
	toolName string
	executor string
	args     string // normalised request arguments
	resp     *runnerpb.ExecuteToolResponse
}

// registry returns the registry an executor routes to.
func (t *trial) registry(executor string) *tools.Registry {
	if executor == task.ExecutorUser {
		return t.user
	}
	return t.agent
}

// recordsCopy returns a copy of the tool-call record.
func (t *trial) recordsCopy() []task.RecordedToolCall {
	out := make([]task.RecordedToolCall, len(t.records))
	for i, r := range t.records {
		r.Arguments = append(json.RawMessage(nil), r.Arguments...)
		out[i] = r
	}
	return out
}

// flushPending writes back every MCP session a read call left pending, except
// skip (the session about to be called, whose own write-back covers it).
func (t *trial) flushPending(ctx context.Context, skip tools.Tool) {
	var own *mcpSession
	if mt, ok := skip.(*mcpTool); ok {
		own = mt.sess
	}
	for _, s := range t.sessions {
		if s != own {
			s.flush(ctx)
		}
	}
}
