package host_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/controllers/host"
	"tolokaforge.io/operator/controllers/host/agents"
	"tolokaforge.io/operator/results/local"
	"tolokaforge.io/operator/runner/client"
	"tolokaforge.io/operator/test/fakellm"
)

func TestUserToolCallGoesToTheUserRegistry(t *testing.T) {
	s := startStack(t, local.StackConfig{})
	f := fakeLLM(t, map[string][]fakellm.Reply{
		"user":  {calcCall("u1", "89.99+2*34.5"), text("My total is 158.99, right?"), text("###STOP###")},
		"agent": {text("Yes, 158.99.")},
	})
	td := calcTask(t)
	agent, cfg := llmActor(t, f, "agent", nil)
	ac := attempt(s, specFor(s, td, cfg), agent, llmUser(t, f, "user", td, ""))
	res := host.RunAttempt(ctxT(t), ac)
	if res.GradedBy != host.GradedByRunner || res.TerminationReason != task.TerminationUserStop {
		t.Fatalf("%s: %s", res, res.Message)
	}
	if len(res.ToolCalls) != 1 {
		t.Fatalf("record = %+v", res.ToolCalls)
	}
	rc := res.ToolCalls[0]
	if rc.Executor != task.ExecutorUser || rc.Status != task.ToolCallSuccess || rc.Output != "158.99" || rc.CallID != "u1" {
		t.Fatalf("user call recorded as %+v", rc)
	}
	// Each actor is offered its own slice of the tools.
	if ut := f.RequestsFor("user")[0].Tools; len(ut) != 1 || ut[0].Name != "calculator" || ut[0].Description != "the user's calculator" {
		t.Fatalf("user offered %+v", ut)
	}
	if at := f.RequestsFor("agent")[0].Tools; len(at) != 2 || at[0].Name != "calculator" || at[1].Name != "think" {
		t.Fatalf("agent offered %+v", at)
	}
	// The user saw its result; the agent saw only the user's words.
	um := f.RequestsFor("user")[1].Messages
	if tm := um[len(um)-1]; tm.Role != "tool" || tm.ToolCallID != "u1" || tm.Content != "158.99" {
		t.Fatalf("user's result sent as %+v", tm)
	}
	for _, m := range f.RequestsFor("agent")[0].Messages {
		if m.Role == "tool" || len(m.ToolCalls) > 0 {
			t.Fatalf("agent was sent the user's tool traffic: %+v", m)
		}
	}
	// The wire transcript keeps the user's call and result in place.
	var roles []string
	for _, m := range res.Transcript {
		r := m.Role
		if len(m.ToolCalls) > 0 {
			r += "+calls"
		}
		roles = append(roles, r)
	}
	if got := strings.Join(roles, ","); got != "system,user+calls,tool,user,assistant,user" {
		t.Fatalf("transcript roles = %s", got)
	}
}

func TestToolNotFoundEndsTheTrialAsError(t *testing.T) {
	s := startStack(t, local.StackConfig{})
	cases := []struct {
		name, model string
		scripts     map[string][]fakellm.Reply
		msg         string
	}{
		{"agent calls a tool nobody registered", "agent", map[string][]fakellm.Reply{"agent": {{ToolCalls: []fakellm.ToolCall{call("x", "refund", `{}`)}}}},
			`the agent called tool "refund" (call x), which the runner does not hold for executor "agent": `},
		{"user calls an agent tool", "user", map[string][]fakellm.Reply{"user": {{ToolCalls: []fakellm.ToolCall{call("y", "think", `{"thought":"t"}`)}}}},
			`the user simulator called tool "think" (call y), which the runner does not hold for executor "user": `},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := fakeLLM(t, tc.scripts)
			td := calcTask(t)
			agent, cfg := llmActor(t, f, "agent", nil)
			ac := attempt(s, specFor(s, td, cfg), agent, nil)
			if tc.model == "user" {
				ac.User = llmUser(t, f, "user", td, "")
			}
			res := host.RunAttempt(ctxT(t), ac)
			if res.GradedBy != host.GradedByHost || res.Reason != evalv1.ReasonToolNotFound || res.TerminationReason != task.TerminationError ||
				!strings.HasPrefix(res.Message, tc.msg) {
				t.Fatalf("%s: %q", res, res.Message)
			}
			if len(res.ToolCalls) != 1 || res.ToolCalls[0].Status != task.ToolCallToolNotFound {
				t.Fatalf("record = %+v", res.ToolCalls)
			}
			if res.Grade.GetScore() != 0 || !strings.Contains(res.Grade.GetReasons(), "termination_reason error") {
				t.Fatalf("grade = %v", res.Grade)
			}
		})
	}
}

func TestRegistrationRefusals(t *testing.T) {
	t.Run("protocol skew", func(t *testing.T) {
		s := startStack(t, local.StackConfig{MinEngineProtocol: task.EngineProtocolVersion + 1})
		calls := 0
		agent := funcActor(func(context.Context, []task.Message, []*runnerpb.ToolSchema) (host.Turn, error) {
			calls++
			return host.Turn{Content: host.StopMarker}, nil
		})
		res := host.RunAttempt(ctxT(t), attempt(s, specFor(s, calcTask(t), nil), agent, nil))
		if res.Outcome != evalv1.OutcomeProtocolSkew || res.Reason != evalv1.ReasonProtocolSkew ||
			!strings.HasPrefix(res.Message, "engine protocol version 2 is below 3") || res.Grade != nil || calls != 0 {
			t.Fatalf("%s: %q (agent called %d times)", res, res.Message, calls)
		}
	})
	t.Run("invalid task", func(t *testing.T) {
		s := startStack(t, local.StackConfig{})
		td := calcTask(t)
		td.AgentTools = append(td.AgentTools, task.ToolSchema{Name: "book", Description: "b",
			Source: &task.ToolSource{Toolset: "air", ModulePath: "tau_tools.book", ClassName: "Book", InvocationStyle: task.InvocationTauSync}})
		res := host.RunAttempt(ctxT(t), attempt(s, specFor(s, td, nil), agents.NewOracle(td), nil))
		if res.Outcome != evalv1.OutcomeInvalid || res.Reason != evalv1.ReasonInvalidTask || !strings.Contains(res.Message, "book") || res.Turns != 0 {
			t.Fatalf("%s: %q", res, res.Message)
		}
	})
	t.Run("runner unreachable", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		_ = ln.Close()
		c, err := client.Dial(ctxT(t), addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		td := calcTask(t)
		ac := host.AttemptConfig{Runner: c, Spec: &task.TrialSpec{TrialID: "calc:0", Task: td, Agent: &task.ModelConfig{Provider: task.ProviderOracle}},
			Agent: agents.NewOracle(td), RegisterTimeout: time.Second, CleanupTimeout: time.Second}
		res := host.RunAttempt(ctxT(t), ac)
		if res.Outcome != evalv1.OutcomeInfraFailed || res.Reason != evalv1.ReasonRunnerUnavailable ||
			!strings.HasPrefix(res.Message, `register trial "calc:0": runner unreachable (`) {
			t.Fatalf("%s: %q", res, res.Message)
		}
	})
}

func TestPersistent500ThenTheNextAttemptPasses(t *testing.T) {
	s := startStack(t, local.StackConfig{})
	fail := make([]fakellm.Reply, agents.DefaultRetryPolicy.MaxRetries+1)
	for i := range fail {
		fail[i] = fakellm.Reply{Status: 500, ErrorMessage: "overloaded"}
	}
	f := fakeLLM(t, map[string][]fakellm.Reply{"agent": append(fail, calcCall("a", "2+2"), text("4 ###STOP###"))})
	td := calcTask(t)
	agent, cfg := llmActor(t, f, "agent", nil)
	spec := specFor(s, td, cfg)

	first := host.RunAttempt(ctxT(t), attempt(s, spec, agent, nil))
	if first.Outcome != evalv1.OutcomeInfraFailed || first.Reason != evalv1.ReasonProviderError || first.TerminationReason != task.TerminationAPIError ||
		first.Grade != nil || first.AgentUsage.Calls != 0 || first.AgentUsage.Retries != int64(len(fail)-1) {
		t.Fatalf("attempt 1: %s: %q usage %+v", first, first.Message, first.AgentUsage)
	}
	// Same trial id again: attempt 1's CleanupTrial made room for it.
	ac := attempt(s, spec, agent, nil)
	ac.AttemptNumber = 2
	second := host.RunAttempt(ctxT(t), ac)
	if second.GradedBy != host.GradedByRunner || second.Reason != evalv1.ReasonPassed || second.AgentUsage.Calls != 2 || second.AgentUsage.Retries != 0 {
		t.Fatalf("attempt 2: %s: %q usage %+v", second, second.Message, second.AgentUsage)
	}
}

func TestRateLimitedTwiceIsRetriedAndBilledOnce(t *testing.T) {
	s := startStack(t, local.StackConfig{})
	f := fakeLLM(t, map[string][]fakellm.Reply{"agent": {
		{Status: 429, RetryAfter: "0"}, {Status: 429, RetryAfter: "0"},
		{Content: "###STOP###", Usage: fakellm.Usage{PromptTokens: 50, CompletionTokens: 5}},
	}})
	agent, cfg := llmActor(t, f, "agent", nil)
	res := host.RunAttempt(ctxT(t), attempt(s, specFor(s, calcTask(t), cfg), agent, nil))
	if res.GradedBy != host.GradedByRunner || res.TerminationReason != task.TerminationAgentDone || res.Turns != 1 {
		t.Fatalf("%s: %s", res, res.Message)
	}
	if want := (host.Usage{Calls: 1, Retries: 2, PromptTokens: 50, CompletionTokens: 5}); res.AgentUsage != want {
		t.Fatalf("usage = %+v, want %+v", res.AgentUsage, want)
	}
	if n := len(f.RequestsFor("agent")); n != 3 {
		t.Fatalf("%d requests, want 3", n)
	}
}

func TestRequestFaultEndsTheTrialWithTheProviderMessage(t *testing.T) {
	s := startStack(t, local.StackConfig{})
	f := fakeLLM(t, map[string][]fakellm.Reply{"agent": {{Status: 400, ErrorMessage: "context_length_exceeded: 200000 tokens"}}})
	agent, cfg := llmActor(t, f, "agent", nil)
	res := host.RunAttempt(ctxT(t), attempt(s, specFor(s, calcTask(t), cfg), agent, nil))
	want := `agent: agent model "agent" rejected the request as invalid: HTTP 400: context_length_exceeded: 200000 tokens`
	if res.GradedBy != host.GradedByHost || res.Reason != evalv1.ReasonAgentError || res.TerminationReason != task.TerminationError || res.Message != want {
		t.Fatalf("%s: %q", res, res.Message)
	}
}

func TestInfrastructureFaultsMidTrial(t *testing.T) {
	cases := []struct {
		name   string
		inject func(s *local.Stack, trialID string) error
		reason string
		prefix string
	}{
		{"trial lost", func(s *local.Stack, id string) error {
			_, err := s.Runner.CleanupTrial(context.Background(), &runnerpb.CleanupTrialRequest{TrialId: id})
			return err
		}, evalv1.ReasonTrialLost, `execute tool "calculator" (call k): the runner holds no trial "calc:`},
		{"runner gone", func(s *local.Stack, _ string) error { return s.Stop() }, evalv1.ReasonRunnerUnavailable,
			`execute tool "calculator" (call k) of trial "calc:`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := startStack(t, local.StackConfig{})
			td := calcTask(t)
			spec := specFor(s, td, nil)
			agent := funcActor(func(context.Context, []task.Message, []*runnerpb.ToolSchema) (host.Turn, error) {
				if err := tc.inject(s, spec.TrialID); err != nil {
					t.Errorf("inject: %v", err)
				}
				return host.Turn{ToolCalls: []task.ToolCall{{ID: "k", Function: task.FunctionCall{Name: "calculator", Arguments: `{"expression":"1"}`}}}}, nil
			})
			ac := attempt(s, spec, agent, nil)
			ac.CleanupTimeout = time.Second
			res := host.RunAttempt(ctxT(t), ac)
			if res.Outcome != evalv1.OutcomeInfraFailed || res.Reason != tc.reason || res.TerminationReason != task.TerminationTrialLost ||
				!strings.HasPrefix(res.Message, tc.prefix) || res.Grade != nil || len(res.ToolCalls) != 0 {
				t.Fatalf("%s: %q", res, res.Message)
			}
		})
	}
}

func TestTrialTimeoutIsSelfGraded(t *testing.T) {
	s := startStack(t, local.StackConfig{})
	f := fakeLLM(t, map[string][]fakellm.Reply{"agent": {{Content: "slow", Delay: time.Minute}}})
	agent, cfg := llmActor(t, f, "agent", nil)
	ac := attempt(s, specFor(s, calcTask(t), cfg), agent, nil)
	ac.TrialTimeout = 200 * time.Millisecond
	res := host.RunAttempt(ctxT(t), ac)
	if res.GradedBy != host.GradedByHost || res.Reason != evalv1.ReasonTimeout || res.TerminationReason != task.TerminationTimeout ||
		res.Message != "trial wall clock of 200ms exceeded after 1 turns" || res.Grade.GetScore() != 0 {
		t.Fatalf("%s: %q", res, res.Message)
	}
}

func TestCanceledAttemptStillCleansUp(t *testing.T) {
	s := startStack(t, local.StackConfig{})
	td := calcTask(t)
	spec := specFor(s, td, nil)
	ctx, cancel := context.WithCancel(ctxT(t))
	agent := funcActor(func(ctx context.Context, _ []task.Message, _ []*runnerpb.ToolSchema) (host.Turn, error) {
		cancel() // the Trial was deleted while the model was thinking
		<-ctx.Done()
		return host.Turn{}, ctx.Err()
	})
	res := host.RunAttempt(ctx, attempt(s, spec, agent, nil))
	if res.Outcome != evalv1.OutcomeInfraFailed || res.Reason != evalv1.ReasonCanceled || res.Message != "attempt canceled: context canceled" {
		t.Fatalf("%s: %q", res, res.Message)
	}
	st, err := s.Runner.GetState(ctxT(t), &runnerpb.GetStateRequest{TrialId: spec.TrialID})
	if err != nil || st.GetSuccess() {
		t.Fatalf("trial still registered after a canceled attempt: %v %v", st, err)
	}
}

func TestInvalidConfigSendsNothing(t *testing.T) {
	td := calcTask(t)
	spec := &task.TrialSpec{TrialID: "x:0", Task: td, Agent: &task.ModelConfig{Provider: task.ProviderOracle}}
	oracle := agents.NewOracle(td)
	var nilRunner runnerpb.RunnerServiceClient
	fake := runnerpb.NewRunnerServiceClient(nil) // never called: validation comes first
	cases := []struct {
		cfg  host.AttemptConfig
		want string
	}{
		{host.AttemptConfig{Runner: nilRunner, Spec: spec, Agent: oracle}, "AttemptConfig.Runner is nil"},
		{host.AttemptConfig{Runner: fake, Agent: oracle}, "AttemptConfig.Spec is nil"},
		{host.AttemptConfig{Runner: fake, Spec: &task.TrialSpec{Task: td}, Agent: oracle}, "AttemptConfig.Spec.trial_id is empty"},
		{host.AttemptConfig{Runner: fake, Spec: &task.TrialSpec{TrialID: "x:0"}, Agent: oracle}, `AttemptConfig.Spec.task of trial "x:0" is nil`},
		{host.AttemptConfig{Runner: fake, Spec: spec}, `AttemptConfig.Agent of trial "x:0" is nil`},
		{host.AttemptConfig{Runner: fake, Spec: spec, Agent: oracle, MaxTurns: -1}, `AttemptConfig.MaxTurns of trial "x:0" is negative (-1)`},
		{host.AttemptConfig{Runner: fake, Spec: spec, Agent: oracle, TrialTimeout: -time.Second}, `AttemptConfig of trial "x:0" has a negative timeout`},
	}
	for _, tc := range cases {
		res := host.RunAttempt(context.Background(), tc.cfg)
		if res.Outcome != evalv1.OutcomeInvalid || res.Reason != evalv1.ReasonInvalidConfig || res.Message != tc.want {
			t.Errorf("%s: %q, want %q", res, res.Message, tc.want)
		}
	}
}

func TestPanickingActorEndsTheTrialAsError(t *testing.T) {
	s := startStack(t, local.StackConfig{})
	agent := funcActor(func(context.Context, []task.Message, []*runnerpb.ToolSchema) (host.Turn, error) {
		panic("boom: the actor hit a bug")
	})
	res := host.RunAttempt(ctxT(t), attempt(s, specFor(s, calcTask(t), nil), agent, nil))
	if res.GradedBy != host.GradedByHost || res.Reason != evalv1.ReasonAgentError ||
		res.Message != "agent: actor panicked: boom: the actor hit a bug" {
		t.Fatalf("%s: %q", res, res.Message)
	}
}

func TestInvalidArgumentsGoBackToTheModel(t *testing.T) {
	s := startStack(t, local.StackConfig{})
	f := fakeLLM(t, map[string][]fakellm.Reply{"agent": {
		{ToolCalls: []fakellm.ToolCall{call("bad", "calculator", `{"expr":"1+1"}`)}},
		calcCall("good", "1+1"),
		text("2 ###STOP###"),
	}})
	agent, cfg := llmActor(t, f, "agent", nil)
	res := host.RunAttempt(ctxT(t), attempt(s, specFor(s, calcTask(t), cfg), agent, nil))
	if res.GradedBy != host.GradedByRunner || res.TerminationReason != task.TerminationAgentDone || len(res.ToolCalls) != 2 {
		t.Fatalf("%s: %s", res, res.Message)
	}
	bad := res.ToolCalls[0]
	if bad.Status != task.ToolCallInvalidArguments || string(bad.Arguments) != "{}" || bad.Output == "" {
		t.Fatalf("invalid call recorded as %+v", bad)
	}
	second := f.RequestsFor("agent")[1].Messages
	if tm := second[len(second)-1]; tm.Role != "tool" || tm.ToolCallID != "bad" || tm.Content != "Error: "+bad.Output {
		t.Fatalf("validation error sent as %+v (record output %q)", tm, bad.Output)
	}
}
