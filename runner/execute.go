package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"google.golang.org/grpc"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner/tools"
	"tolokaforge.io/operator/runner/tools/mcpclient"
)

var statusOf = map[task.ToolCallStatus]runnerpb.ExecutionStatus{
	task.ToolCallSuccess:          runnerpb.ExecutionStatus_EXECUTION_STATUS_SUCCESS,
	task.ToolCallError:            runnerpb.ExecutionStatus_EXECUTION_STATUS_ERROR,
	task.ToolCallTimeout:          runnerpb.ExecutionStatus_EXECUTION_STATUS_TIMEOUT,
	task.ToolCallToolNotFound:     runnerpb.ExecutionStatus_EXECUTION_STATUS_TOOL_NOT_FOUND,
	task.ToolCallInvalidArguments: runnerpb.ExecutionStatus_EXECUTION_STATUS_INVALID_ARGUMENTS,
}

// ExecuteTool implements RunnerService.ExecuteTool.
func (s *Server) ExecuteTool(ctx context.Context, req *runnerpb.ExecuteToolRequest) (*runnerpb.ExecuteToolResponse, error) {
	callID := req.GetCallId()
	if callID == "" {
		return nil, status.Error(codes.InvalidArgument,
			"call_id is required: it is the trial's episode-unique tool-call id that joins a call to its result")
	}
	t := s.lookup(req.GetTrialId())
	if t == nil {
		return trialLost(req.GetTrialId()), nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return trialLost(req.GetTrialId()), nil
	}

	argsKey := normaliseArgs(req.GetArgumentsJson())
	executor := req.GetExecutor()
	if executor == "" {
		executor = task.ExecutorAgent
	}
	if prev, ok := t.calls[callID]; ok {
		if prev.toolName != req.GetToolName() || prev.executor != executor || prev.args != argsKey {
			return nil, status.Errorf(codes.InvalidArgument,
				"call_id %q was already used for tool %q (executor %q, arguments %s); a retry must repeat the call exactly, got tool %q (executor %q, arguments %s)",
				callID, prev.toolName, prev.executor, prev.args, req.GetToolName(), executor, argsKey)
		}
		// The stored response is never modified after it is recorded, and
		// marshalling only reads it, so it is shared rather than copied.
		return prev.resp, nil
	}
	if t.env != nil && t.agentDone {
		// Not recorded: the call did not run.
		return agentTurnOver(t, req.GetToolName()), nil
	}

	start := time.Now()
	rec, resp, infra := s.execute(ctx, t, req)
	if infra != "" {
		s.metrics.toolCall(req.GetToolName(), executor, statusInfra, time.Since(start))
		// Not the tool's result: the call is not recorded, so the host's retry under
		// the same call_id runs it again, and the agent never reads a transport error.
		t.log.Error(errors.New(infra), "DB service unavailable during a tool call", "tool", req.GetToolName(), "call_id", callID)
		return nil, status.Errorf(codes.Unavailable, "DB service unavailable during tool '%s': %s", req.GetToolName(), infra)
	}
	s.metrics.toolCall(req.GetToolName(), executor, string(rec.Status), time.Since(start))
	rec.CallID = callID
	rec.Sequence = len(t.records)
	rec.Timestamp = start.UTC()
	t.records = append(t.records, rec)
	t.calls[callID] = &callEntry{toolName: req.GetToolName(), executor: executor, args: argsKey, resp: resp}
	return resp, nil
}

func trialLost(id string) *runnerpb.ExecuteToolResponse {
	return &runnerpb.ExecuteToolResponse{
		Status:       runnerpb.ExecutionStatus_EXECUTION_STATUS_TRIAL_NOT_FOUND,
		ErrorMessage: trialNotFound(id),
		Metrics:      &runnerpb.ToolMetrics{},
	}
}

// execute routes, validates and runs one call, returning its record (without
// the call id, sequence and timestamp) and the response, or, when the DB service
// could not be reached, only infra describing the fault.
func (s *Server) execute(ctx context.Context, t *trial, req *runnerpb.ExecuteToolRequest) (task.RecordedToolCall, *runnerpb.ExecuteToolResponse, string) {
	start := time.Now()
	rec := task.RecordedToolCall{ToolName: req.GetToolName(), Executor: req.GetExecutor(), Arguments: json.RawMessage("{}")}
	finish := func(out tools.Outcome, mutations int64) (task.RecordedToolCall, *runnerpb.ExecuteToolResponse, string) {
		latency := time.Since(start).Seconds()
		rec.Status = out.Status
		rec.LatencySeconds = latency
		rec.Output = out.Output
		resp := &runnerpb.ExecuteToolResponse{
			Status:  statusOf[out.Status],
			Metrics: &runnerpb.ToolMetrics{LatencySeconds: latency, StateMutations: int32(mutations)},
		}
		if out.Status == task.ToolCallSuccess {
			resp.Output = out.Output
		} else {
			rec.Output = out.Message
			resp.ErrorMessage = out.Message
			resp.Metrics.ExitCode = 1
		}
		return rec, resp, ""
	}

	executor := req.GetExecutor()
	if executor == "" {
		executor = task.ExecutorAgent
		rec.Executor = executor
	}
	if executor != task.ExecutorAgent && executor != task.ExecutorUser {
		return finish(tools.Outcome{
			Status:  task.ToolCallInvalidArguments,
			Message: fmt.Sprintf("Invalid executor %q: want %q or %q", req.GetExecutor(), task.ExecutorAgent, task.ExecutorUser),
		}, 0)
	}
	e, ok := t.registry(executor).Lookup(req.GetToolName())
	if !ok {
		if obj, ok := objectArgs(req.GetArgumentsJson()); ok {
			rec.Arguments = obj
		}
		return finish(tools.Outcome{
			Status:  task.ToolCallToolNotFound,
			Message: fmt.Sprintf("Tool '%s' not found in %s tools", req.GetToolName(), executor),
		}, 0)
	}
	args, err := e.Validator.Validate([]byte(req.GetArgumentsJson()))
	if err != nil {
		return finish(tools.Outcome{
			Status:  task.ToolCallInvalidArguments,
			Message: fmt.Sprintf("Invalid arguments for tool '%s': %v", e.Name, err),
		}, 0)
	}
	rec.Arguments = args

	budget := min(tools.Budget(req.GetTimeoutSeconds(), e.Timeout, t.defaultTimeout), s.cfg.MaxToolTimeout)
	tctx, done := s.toolContext(ctx)
	defer done()
	// Whatever this tool reads must include what earlier read calls left
	// pending on other MCP servers; their writes are not this call's.
	fctx, fcancel := context.WithTimeout(tctx, budget)
	t.flushPending(fctx, e.Tool)
	fcancel()
	v0, cut0 := t.db.Version(), t.db.Cut()
	ictx, kept := tools.WithOutputSink(deferReadSync(tctx))
	out := tools.Invoke(ictx, e, args, budget)
	if whole := kept.Output(); len(whole) > 0 {
		// The whole output travels beside the response (the proto has no
		// field for it); the host keeps it as the call's artifact.
		if err := grpc.SetTrailer(ctx, runnerpb.ToolOutputMD(whole)); err != nil {
			t.log.V(1).Info("the tool's whole output cannot be sent", "tool", e.Name, "error", err.Error())
		}
	}
	if out.Panic != "" {
		t.log.Error(fmt.Errorf("tool panic"), "tool panicked", "tool", e.Name, "panic", out.Panic)
	}
	if out.Status == task.ToolCallTimeout && (t.db.InFlight() > 0 || t.db.Cut() != cut0) {
		// The budget ran out while the DB service had not answered: a hung
		// service, not a slow tool. A write may still land unseen.
		t.db.invalidate()
		return rec, nil, fmt.Sprintf("no answer within %ss", tools.FormatSeconds(budget))
	}
	if out.Infra {
		return rec, nil, out.Message
	}
	if out.Status == task.ToolCallInvalidArguments {
		rec.Arguments = json.RawMessage("{}")
	}
	if out.Status == task.ToolCallSuccess && t.maxOutput > 0 && len(out.Output) > t.maxOutput {
		// Every tool's result is bounded as the Python and MCP tools' are
		// (they refuse theirs before it gets here): a builtin's listing of
		// a huge table or folder must not flood the model's context.
		out = tools.Outcome{Status: task.ToolCallError, Message: mcpclient.OverLimit(len(out.Output), t.maxOutput)}
	}
	return finish(out, t.db.Version()-v0)
}

// normaliseArgs is the idempotency key's view of arguments_json: "" is {}, and
// valid JSON compares compacted so whitespace differences do not count.
func normaliseArgs(raw string) string {
	b := bytes.TrimSpace([]byte(raw))
	if len(b) == 0 {
		return "{}"
	}
	var buf bytes.Buffer
	if json.Valid(b) && json.Compact(&buf, b) == nil {
		return buf.String()
	}
	return string(b)
}

// objectArgs returns raw compacted when it is a JSON object.
func objectArgs(raw string) (json.RawMessage, bool) {
	b := bytes.TrimSpace([]byte(raw))
	if len(b) == 0 {
		return json.RawMessage("{}"), true
	}
	if b[0] != '{' || !json.Valid(b) {
		return nil, false
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return nil, false
	}
	return buf.Bytes(), true
}
