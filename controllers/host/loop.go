package host

import (
	"context"
	"fmt"
	"strings"
	"time"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"

	"tolokaforge.io/operator/api/task"
)

// loop runs the conversation until one of the termination reasons. It is the
// same loop for the oracle and for LLM agents: the actors differ, the rules
// (turns, ids, stop markers, stuck detection, per-status tool messages) do not.
func (r *run) loop(ctx context.Context, reg *registration) *ending {
	lctx := ctx
	if r.cfg.TrialTimeout > 0 {
		var cancel context.CancelFunc
		lctx, cancel = context.WithTimeoutCause(ctx, r.cfg.TrialTimeout, errTrialTimeout)
		defer cancel()
	}
	sys := task.Message{Role: task.RoleSystem, Content: r.cfg.Spec.Task.SystemPrompt}
	r.transcript = append(r.transcript, sys)
	r.stamps = append(r.stamps, time.Now())
	r.agentConv = append(r.agentConv, sys)

	// The simulated user opens.
	if e := r.userTurn(lctx, ctx, reg); e != nil {
		return e
	}
	for {
		if r.turns >= r.maxTurns {
			return terminate(task.TerminationMaxTurns, "", fmt.Sprintf("turn budget of %d agent turns used", r.maxTurns))
		}
		if e := r.ctxEnding(lctx, ctx); e != nil {
			return e
		}
		tctx, span := startTurn(lctx, SpanTurn, r.turns+1)
		e, userNext := r.agentTurn(tctx, ctx, reg)
		endSpan(span, e)
		if e != nil {
			return e
		}
		if !userNext {
			continue
		}
		if e := r.userTurn(lctx, ctx, reg); e != nil {
			return e
		}
	}
}

// agentTurn is one agent turn: its model call and its tool calls. userNext
// says whether the user answers it.
func (r *run) agentTurn(lctx, ctx context.Context, reg *registration) (e *ending, userNext bool) {
	start := time.Now()
	turn, err := next(lctx, r.cfg.Agent, r.agentConv[:len(r.agentConv):len(r.agentConv)], reg.agentTools)
	r.timing.agentLLM += time.Since(start)
	r.turns++
	// Usage first: a failed call still reports the retries it made.
	r.agentUsage.Add(turn.Usage)
	if err != nil {
		return r.actorEnding(lctx, ctx, "agent", err), false
	}
	msg := task.Message{Role: task.RoleAssistant, Content: turn.Content, ToolCalls: r.assignIDs(turn.ToolCalls)}
	r.addAgentMessage(msg)
	turn.ToolCalls = msg.ToolCalls
	if stuck, why := r.stuck.observe(turn); stuck {
		r.progress("agent", msg, nil)
		return terminate(task.TerminationStuckDetected, evalv1.ReasonStuckDetected, "stuck: "+why), false
	}
	statuses, e := r.execTools(lctx, ctx, task.ExecutorAgent, msg.ToolCalls)
	r.progress("agent", msg, statuses)
	if e != nil {
		return e, false
	}
	if hasStop(turn.Content) {
		return terminate(task.TerminationAgentDone, "", "the agent wrote "+StopMarker), false
	}
	// Tool results go back to the agent; an idle turn is not worth the
	// user's reply (the stuck detector bounds how often).
	return nil, len(msg.ToolCalls) == 0 && strings.TrimSpace(turn.Content) != ""
}

// userTurn asks the user for its next message to the agent, executing its
// tool calls on the way (executor "user", the user's slice of the tools).
func (r *run) userTurn(lctx, ctx context.Context, reg *registration) *ending {
	uctx, span := startTurn(lctx, SpanUserTurn, r.turns)
	e := r.userRounds(uctx, ctx, reg)
	endSpan(span, e)
	return e
}

// userRounds is userTurn's rounds: an LLM user may answer with tool calls
// only, or nothing, before it says something to the agent.
func (r *run) userRounds(lctx, ctx context.Context, reg *registration) *ending {
	for round := 0; round < maxUserRounds; round++ {
		if e := r.ctxEnding(lctx, ctx); e != nil {
			return e
		}
		start := time.Now()
		turn, err := next(lctx, r.user, r.userConv[:len(r.userConv):len(r.userConv)], reg.userTools)
		r.timing.userLLM += time.Since(start)
		r.userUsage.Add(turn.Usage)
		if err != nil {
			return r.actorEnding(lctx, ctx, "user simulator", err)
		}
		if strings.TrimSpace(turn.Content) == "" && len(turn.ToolCalls) == 0 {
			continue
		}
		msg := task.Message{Role: task.RoleUser, Content: turn.Content, ToolCalls: r.assignIDs(turn.ToolCalls)}
		r.addUserMessage(msg)
		statuses, e := r.execTools(lctx, ctx, task.ExecutorUser, msg.ToolCalls)
		r.progress("user", msg, statuses)
		if e != nil {
			return e
		}
		if hasStop(turn.Content) {
			return terminate(task.TerminationUserStop, "", "the user wrote "+StopMarker)
		}
		if strings.TrimSpace(turn.Content) != "" {
			return nil
		}
	}
	return terminate(task.TerminationStuckDetected, evalv1.ReasonStuckDetected,
		fmt.Sprintf("stuck: the user simulator produced no message for the agent in %d rounds", maxUserRounds))
}

// assignIDs copies calls with episode-unique ids.
func (r *run) assignIDs(calls []task.ToolCall) []task.ToolCall {
	if len(calls) == 0 {
		return nil
	}
	out := make([]task.ToolCall, len(calls))
	for i, c := range calls {
		c.ID = r.ids.assign(c.ID)
		c.Type = "function"
		out[i] = c
	}
	return out
}

func (r *run) progress(actor string, msg task.Message, statuses []string) {
	if r.cfg.Progress == nil {
		return
	}
	ev := TurnEvent{Turn: r.turns, Actor: actor, Content: msg.Content, ToolStatuses: statuses,
		ToolCallCount: len(r.records), AgentUsage: r.agentUsage, UserUsage: r.userUsage}
	for _, c := range msg.ToolCalls {
		ev.ToolCalls = append(ev.ToolCalls, c.Function.Name)
	}
	r.cfg.Progress(ev)
}
