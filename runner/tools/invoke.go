package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"time"

	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/dbservice/client"
)

// Outcome is what one bounded tool call produced.
type Outcome struct {
	Status task.ToolCallStatus
	// Output is the tool's text on success, empty otherwise.
	Output string
	// Message is the error text on any other status.
	Message string
	// Panic carries the recovered value and stack when the tool panicked, for
	// the runner's log (never shown to the LLM).
	Panic string
	// Infra is set when the call failed because the DB service could not be
	// reached (client.ErrUnavailable) or no longer holds the trial
	// (client.ErrTrialNotFound: it restarted empty, since a tool only ever
	// touches its own registered trial): an infrastructure fault, not the
	// tool's result, so the runner must not hand Message to the agent.
	Infra bool
}

type callResult struct {
	out   string
	err   error
	panic string
}

// Invoke calls e.Tool with args under budget. It never panics: a panicking tool
// is an ERROR outcome. When the budget runs out first the outcome is TIMEOUT and
// a Stateful tool is invalidated; the tool's goroutine is left to observe the
// cancelled context, since Go cannot stop it from outside.
func Invoke(ctx context.Context, e *Entry, args json.RawMessage, budget time.Duration) Outcome {
	cctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	var r callResult
	if e.Inline {
		r = callSafely(cctx, e, args)
	} else {
		done := make(chan callResult, 1)
		go func() { done <- callSafely(cctx, e, args) }()
		select {
		case r = <-done:
		case <-cctx.Done():
			// A result that raced the deadline still wins.
			select {
			case r = <-done:
			default:
				return expired(ctx, e, budget)
			}
		}
	}
	if r.err == nil {
		return Outcome{Status: task.ToolCallSuccess, Output: r.out}
	}
	if cctx.Err() != nil && (errors.Is(r.err, context.DeadlineExceeded) || errors.Is(r.err, context.Canceled)) {
		return expired(ctx, e, budget)
	}
	var ae *ArgumentError
	if errors.As(r.err, &ae) {
		return Outcome{Status: task.ToolCallInvalidArguments, Message: fmt.Sprintf("Invalid arguments for tool '%s': %s", e.Name, ae.Error())}
	}
	return Outcome{Status: task.ToolCallError, Message: r.err.Error(), Panic: r.panic, Infra: errors.Is(r.err, client.ErrUnavailable) || errors.Is(r.err, client.ErrTrialNotFound)}
}

// callSafely runs the tool, turning a panic into an error.
func callSafely(ctx context.Context, e *Entry, args json.RawMessage) (r callResult) {
	defer func() {
		if p := recover(); p != nil {
			r = callResult{
				err:   fmt.Errorf("tool %q panicked: %v", e.Name, p),
				panic: fmt.Sprintf("%v\n%s", p, debug.Stack()),
			}
		}
	}()
	out, err := e.Tool.Call(ctx, args)
	return callResult{out: out, err: err}
}

func expired(parent context.Context, e *Entry, budget time.Duration) Outcome {
	if s, ok := e.Tool.(stateful); ok {
		s.Invalidate()
	}
	if err := parent.Err(); err != nil {
		// The caller went away (RPC cancelled or runner draining): not the
		// tool's budget, so say what happened.
		return Outcome{Status: task.ToolCallError, Message: "Tool execution cancelled: " + err.Error()}
	}
	return Outcome{Status: task.ToolCallTimeout, Message: "Tool execution timed out after " + FormatSeconds(budget) + "s"}
}

// FormatSeconds renders a duration in seconds the shortest way (30, 0.25).
func FormatSeconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'g', -1, 64)
}

// Budget resolves a call's timeout: a positive per-call override, else the
// tool's own budget, else the trial's default, else 30 s.
func Budget(callOverrideS float64, toolTimeout, trialDefault time.Duration) time.Duration {
	switch {
	case callOverrideS > 0:
		return Seconds(callOverrideS)
	case toolTimeout > 0:
		return toolTimeout
	case trialDefault > 0:
		return trialDefault
	}
	return Seconds(task.DefaultToolTimeoutS)
}

// Seconds converts float seconds to a Duration, saturating instead of
// overflowing for absurd values.
func Seconds(s float64) time.Duration {
	const maxS = float64(1<<63-1) / float64(time.Second)
	if s >= maxS {
		return time.Duration(1<<63 - 1)
	}
	return time.Duration(s * float64(time.Second))
}
