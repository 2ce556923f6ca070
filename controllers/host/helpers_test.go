package host_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/controllers/host"
	"tolokaforge.io/operator/controllers/host/agents"
	"tolokaforge.io/operator/examples/shop"
	"tolokaforge.io/operator/results/local"
	"tolokaforge.io/operator/test/fakellm"
)

func startStack(tb testing.TB, cfg local.StackConfig) *local.Stack {
	tb.Helper()
	return startStackIn(tb, cfg, tb.TempDir())
}

// startStackIn serves the stack with the runner's work dir at work.
func startStackIn(tb testing.TB, cfg local.StackConfig, work string) *local.Stack {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	cfg.SelfExecutable = exe
	cfg.WorkDir = work
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := local.StartStack(ctx, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.Stop(); err != nil {
			tb.Errorf("stop stack: %v", err)
		}
	})
	return s
}

func shopTask(tb testing.TB) *task.TaskDescription {
	tb.Helper()
	t, err := task.DecodeTaskDescription(shop.TaskJSON())
	if err != nil {
		tb.Fatal(err)
	}
	return t
}

var trialSeq int

// specFor builds a TrialSpec of t against the stack, with a fresh trial id.
func specFor(s *local.Stack, t *task.TaskDescription, agent *task.ModelConfig) *task.TrialSpec {
	trialSeq++
	if agent == nil {
		agent = &task.ModelConfig{Provider: task.ProviderOracle}
	}
	return &task.TrialSpec{
		TrialID:      t.TaskID + ":" + itoa(trialSeq),
		RunID:        "test",
		AttemptID:    "a-" + itoa(trialSeq),
		Task:         t,
		Agent:        agent,
		EnvEndpoints: &task.EnvEndpoints{DBServiceURL: s.DBServiceURL},
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func ctxT(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	tb.Cleanup(cancel)
	return ctx
}

func attempt(s *local.Stack, spec *task.TrialSpec, agent, user host.Actor) host.AttemptConfig {
	return host.AttemptConfig{
		Runner:             s.Runner,
		Spec:               spec,
		InitialUserMessage: "I'm C-101; please buy 1 P-001 and 2 P-002 and pay.",
		MaxTurns:           10,
		TrialTimeout:       30 * time.Second,
		Agent:              agent,
		User:               user,
		AttemptNumber:      1,
		Log:                logr.Discard(),
	}
}

// fakeLLM starts the fake provider with per-model scripts.
func fakeLLM(tb testing.TB, scripts map[string][]fakellm.Reply) *fakellm.Server {
	tb.Helper()
	f, err := fakellm.New(fakellm.Config{Scripts: scripts})
	if err != nil {
		tb.Fatal(err)
	}
	if err := f.Start(""); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = f.Close() })
	return f
}

func noSleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

// llmActor is an OpenAI-compatible agent against the fake's model.
func llmActor(tb testing.TB, f *fakellm.Server, model string, pricing *task.Pricing) (*agents.LLMAgent, *task.ModelConfig) {
	tb.Helper()
	cfg := &task.ModelConfig{Provider: task.ProviderOpenAI, Model: model, BaseURL: f.URL(), Pricing: pricing}
	m, err := agents.NewChatModel("agent", cfg, agents.Options{Sleep: noSleep})
	if err != nil {
		tb.Fatal(err)
	}
	return agents.NewLLMAgent(m), cfg
}

func call(id, name, args string) fakellm.ToolCall {
	return fakellm.ToolCall{ID: id, Name: name, Arguments: args}
}

// calcTask has builtin tools only (no MCP server): the agent gets calculator
// and think, the user calculator. No grading block: the runner grades it
// (1.0, pass) once it reaches GradeTrial.
func calcTask(tb testing.TB) *task.TaskDescription {
	tb.Helper()
	t, err := task.DecodeTaskDescription([]byte(`{
		"task_id": "calc", "name": "calc", "category": "test", "description": "compute things",
		"adapter_type": "native", "system_prompt": "You compute.",
		"agent_tools": [{"name": "calculator", "description": "evaluate"}, {"name": "think", "description": "think"}],
		"user_tools": [{"name": "calculator", "description": "the user's calculator"}]
	}`))
	if err != nil {
		tb.Fatal(err)
	}
	return t
}

// funcActor adapts a function to host.Actor.
type funcActor func(ctx context.Context, conv []task.Message, tools []*runnerpb.ToolSchema) (host.Turn, error)

func (f funcActor) Next(ctx context.Context, conv []task.Message, tools []*runnerpb.ToolSchema) (host.Turn, error) {
	return f(ctx, conv, tools)
}

// llmUser is an LLM user simulator against the fake's model.
func llmUser(tb testing.TB, f *fakellm.Server, model string, td *task.TaskDescription, opening string) *agents.LLMUser {
	tb.Helper()
	m, err := agents.NewChatModel("user simulator", &task.ModelConfig{Provider: task.ProviderOpenAI, Model: model, BaseURL: f.URL()}, agents.Options{Sleep: noSleep})
	if err != nil {
		tb.Fatal(err)
	}
	return agents.NewLLMUser(m, td, opening)
}

func text(s string) fakellm.Reply { return fakellm.Reply{Content: s} }

func calcCall(id, expr string) fakellm.Reply {
	return fakellm.Reply{ToolCalls: []fakellm.ToolCall{call(id, "calculator", `{"expression":"`+expr+`"}`)}}
}
