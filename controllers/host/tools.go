package host

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"

	"tolokaforge.io/operator/api/artifacts"
	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
)

// execTools forwards calls in order through ExecuteTool and files each result
// as a role "tool" message, per the spec's status table:
//
//	SUCCESS                          the output
//	ERROR, TIMEOUT, INVALID_ARGUMENTS "Error: <error_message>", the trial goes on
//	TOOL_NOT_FOUND                   "Error: ...", then the trial ends as error
//	TRIAL_NOT_FOUND                  nothing recorded; the trial ends as trial_lost
//
// It returns the status of every executed call.
func (r *run) execTools(lctx, ctx context.Context, executor string, calls []task.ToolCall) ([]string, *ending) {
	if len(calls) == 0 {
		return nil, nil
	}
	statuses := make([]string, 0, len(calls))
	for _, c := range calls {
		at := time.Now()
		var trailer metadata.MD
		cctx, span := startTool(lctx, c.Function.Name, c.ID, executor)
		resp, err := r.cfg.Runner.ExecuteTool(outgoing(cctx), &runnerpb.ExecuteToolRequest{
			TrialId:       r.trialID,
			ToolName:      c.Function.Name,
			ArgumentsJson: c.Function.Arguments,
			Executor:      executor,
			CallId:        c.ID,
		}, grpc.Trailer(&trailer))
		took := time.Since(at)
		endTool(span, resp.GetStatus().String(), err)
		if whole := runnerpb.ToolOutputFromMD(trailer); whole != nil {
			r.keepToolOutput(ctx, c.ID, whole)
		}
		r.timing.tools += took
		if err != nil {
			if e := r.ctxEnding(lctx, ctx); e != nil {
				return statuses, e
			}
			// The runner, or the DB service behind it (the runner answers
			// UNAVAILABLE for that), failed mid-trial: an infrastructure
			// fault. Nothing reaches the agent and the episode is not graded.
			return statuses, r.callFault(ctx, fmt.Sprintf("execute tool %q (call %s) of trial %q", c.Function.Name, c.ID, r.trialID), err)
		}
		if resp.GetStatus() == runnerpb.ExecutionStatus_EXECUTION_STATUS_TIMEOUT {
			// A tool waiting on a stopped DB service times out like a slow
			// one; only the DB service's health tells them apart.
			if e := r.answerFault(ctx, fmt.Sprintf("execute tool %q (call %s) of trial %q", c.Function.Name, c.ID, r.trialID), "timeout"); e != nil {
				return statuses, e
			}
		}
		var (
			recStatus task.ToolCallStatus
			content   string
			end       *ending
		)
		errText := resp.GetErrorMessage()
		switch resp.GetStatus() {
		case runnerpb.ExecutionStatus_EXECUTION_STATUS_SUCCESS:
			recStatus, content = task.ToolCallSuccess, resp.GetOutput()
		case runnerpb.ExecutionStatus_EXECUTION_STATUS_ERROR:
			recStatus, content = task.ToolCallError, toolError(errText, "tool raised an error")
		case runnerpb.ExecutionStatus_EXECUTION_STATUS_TIMEOUT:
			recStatus, content = task.ToolCallTimeout, toolError(errText, "tool execution timed out")
		case runnerpb.ExecutionStatus_EXECUTION_STATUS_INVALID_ARGUMENTS:
			recStatus, content = task.ToolCallInvalidArguments, toolError(errText, "invalid arguments")
		case runnerpb.ExecutionStatus_EXECUTION_STATUS_TOOL_NOT_FOUND:
			recStatus, content = task.ToolCallToolNotFound, toolError(errText, fmt.Sprintf("tool %q not found", c.Function.Name))
			end = terminate(task.TerminationError, evalv1.ReasonToolNotFound, fmt.Sprintf(
				"%s called tool %q (call %s), which the runner does not hold for executor %q: %s",
				actorName(executor), c.Function.Name, c.ID, executor, errText))
		case runnerpb.ExecutionStatus_EXECUTION_STATUS_TRIAL_NOT_FOUND:
			return statuses, terminate(task.TerminationTrialLost, evalv1.ReasonTrialLost, fmt.Sprintf(
				"execute tool %q (call %s): the runner holds no trial %q: %s", c.Function.Name, c.ID, r.trialID, errText))
		default:
			// Not a tool outcome the protocol defines: the runner is at fault,
			// not the agent, so this is an infrastructure failure.
			e := terminate(task.TerminationError, evalv1.ReasonRunnerProtocol, fmt.Sprintf(
				"execute tool %q (call %s): runner answered status %v, which the protocol does not define", c.Function.Name, c.ID, resp.GetStatus()))
			e.outcome = evalv1.OutcomeInfraFailed
			return statuses, e
		}
		r.recordCall(c, executor, recStatus, resp, took, at)
		r.addToolResult(executor, task.Message{Role: task.RoleTool, Content: content, ToolCallID: c.ID})
		statuses = append(statuses, string(recStatus))
		if end != nil {
			return statuses, end
		}
	}
	return statuses, nil
}

// toolError is the tool message a model sees for a failed call.
func toolError(msg, fallback string) string {
	if strings.TrimSpace(msg) == "" {
		msg = fallback
	}
	return "Error: " + msg
}

func actorName(executor string) string {
	if executor == task.ExecutorUser {
		return "the user simulator"
	}
	return "the agent"
}

// recordCall mirrors the runner's record entry for one executed call: the
// arguments as sent (as {} when the runner refused them, as it records them),
// the output or the error text, the runner's own latency when it reported one.
func (r *run) recordCall(c task.ToolCall, executor string, st task.ToolCallStatus, resp *runnerpb.ExecuteToolResponse, took time.Duration, at time.Time) {
	args := json.RawMessage("{}")
	if st != task.ToolCallInvalidArguments {
		if a := strings.TrimSpace(c.Function.Arguments); a != "" && json.Valid([]byte(a)) {
			args = json.RawMessage(a)
		}
	}
	out := resp.GetOutput()
	if st != task.ToolCallSuccess {
		out = resp.GetErrorMessage()
	}
	latency := took.Seconds()
	if m := resp.GetMetrics(); m != nil && m.GetLatencySeconds() > 0 {
		latency = m.GetLatencySeconds()
	}
	r.records = append(r.records, task.RecordedToolCall{
		CallID: c.ID, Sequence: len(r.records), ToolName: c.Function.Name, Arguments: args,
		Executor: executor, Status: st, Output: out, LatencySeconds: latency, Timestamp: at.UTC(),
	})
}

// keepToolOutput writes a call's whole output (what the runner sent beside
// the cut text the model saw) as attempts/<n>/tools/<call id>.txt of the
// trial's artifacts.
func (r *run) keepToolOutput(ctx context.Context, callID string, whole []byte) {
	if r.cfg.Spec == nil || r.cfg.Spec.Task == nil {
		return
	}
	r.keepArtifact(ctx, ToolOutputName(r.cfg.Spec.Task.TaskID, r.cfg.TrialIndex, r.cfg.AttemptNumber, callID), whole)
}

// keepArtifact writes one file of the attempt's artifacts at once: held
// until the attempt's end, a long agent's outputs would sit in the
// manager's memory. A failed write is logged, never the attempt's outcome.
func (r *run) keepArtifact(ctx context.Context, name string, data []byte) {
	sink := r.artifactsSink()
	if sink == nil {
		return
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), artifactsTimeout)
	defer cancel()
	if err := sink.Put(wctx, name, data); err != nil {
		r.log.Error(err, "writing an artifact", "artifact", name)
	}
}

// artifactsSink is where the attempt's artifacts go: ArtifactsSink, else a
// directory sink over ArtifactsDir, else nowhere (nil).
func (r *run) artifactsSink() artifacts.Sink {
	if r.cfg.ArtifactsSink != nil {
		return r.cfg.ArtifactsSink
	}
	if r.cfg.ArtifactsDir != "" {
		return artifacts.DirSink(r.cfg.ArtifactsDir)
	}
	return nil
}

// ToolOutputName is where a call's whole output lands in the artifacts.
func ToolOutputName(taskID string, trialIndex, attempt int, callID string) string {
	return artifacts.RelDir(taskID, trialIndex) + "/attempts/" + strconv.Itoa(attempt) + "/tools/" + artifacts.Segment(callID) + ".txt"
}

// TestOutputName is where a terminal task's tests' whole output lands.
func TestOutputName(taskID string, trialIndex, attempt int) string {
	return artifacts.RelDir(taskID, trialIndex) + "/attempts/" + strconv.Itoa(attempt) + "/tests-output.txt"
}
