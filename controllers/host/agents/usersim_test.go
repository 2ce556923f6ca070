package agents_test

import (
	"strings"
	"testing"

	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/controllers/host"
	"tolokaforge.io/operator/controllers/host/agents"
	"tolokaforge.io/operator/test/fakellm"
)

func TestUserPrompt(t *testing.T) {
	p := agents.UserPrompt(&task.UserSimulatorConfig{Backstory: "You are Alex (C-101).", Persona: "impatient"})
	for _, want := range []string{"Instruction: You are Alex (C-101).", "Persona: impatient", "reply with ###STOP### alone"} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q:\n%s", want, p)
		}
	}
	if d := agents.UserPrompt(nil); !strings.Contains(d, "Persona: cooperative") {
		t.Errorf("default persona missing:\n%s", d)
	}
}

func TestLLMUserOpensThenAsksItsModel(t *testing.T) {
	f := startFake(t, fakellm.Config{Scripts: map[string][]fakellm.Reply{"u": {{Content: host.StopMarker}}}})
	m, err := agents.NewChatModel("user simulator", modelCfg(f, "u"), testOpts(&sleeps{}))
	if err != nil {
		t.Fatal(err)
	}
	td := &task.TaskDescription{UserSimulator: &task.UserSimulatorConfig{Backstory: "buy a hub", Persona: "terse"}}
	u := agents.NewLLMUser(m, td, "I want a hub.")
	turn, err := u.Next(ctxT(t), nil, nil)
	if err != nil || turn.Content != "I want a hub." || turn.Usage.Calls != 0 {
		t.Fatalf("opening = %+v, %v", turn, err)
	}
	if n := len(f.Requests()); n != 0 {
		t.Fatalf("the opening called the model (%d requests)", n)
	}
	view := []task.Message{
		{Role: task.RoleAssistant, Content: "I want a hub."},
		{Role: task.RoleUser, Content: "Done, order O-001 is paid."},
	}
	turn, err = u.Next(ctxT(t), view, nil)
	if err != nil || turn.Content != host.StopMarker || turn.Usage.Calls != 1 {
		t.Fatalf("reply = %+v, %v", turn, err)
	}
	msgs := f.Requests()[0].Messages
	if len(msgs) != 4 || msgs[0].Role != "system" || msgs[0].Content != agents.UserPrompt(td.UserSimulator) ||
		msgs[1].Role != "user" || msgs[1].Content != agents.UserGreeting ||
		msgs[2].Role != "assistant" || msgs[2].Content != "I want a hub." ||
		msgs[3].Role != "user" || msgs[3].Content != "Done, order O-001 is paid." {
		t.Fatalf("user model was sent %+v", msgs)
	}
}

func TestFactories(t *testing.T) {
	f := startFake(t, fakellm.Config{})
	td := &task.TaskDescription{TaskID: "t"}
	oracle := &task.ModelConfig{Provider: task.ProviderOracle}
	if a, err := agents.NewAgent(&task.TrialSpec{Task: td, Agent: oracle}, agents.Options{}); err != nil {
		t.Fatal(err)
	} else if _, ok := a.(*agents.Oracle); !ok {
		t.Fatalf("oracle provider gave %T", a)
	}
	if a, err := agents.NewAgent(&task.TrialSpec{Task: td, Agent: modelCfg(f, "m")}, agents.Options{}); err != nil {
		t.Fatal(err)
	} else if _, ok := a.(*agents.LLMAgent); !ok {
		t.Fatalf("openai provider gave %T", a)
	}
	if _, err := agents.NewAgent(&task.TrialSpec{Task: td, Agent: &task.ModelConfig{Provider: "anthropic"}}, agents.Options{}); err == nil ||
		err.Error() != `agent: provider "anthropic" is not one of oracle, openai` {
		t.Fatalf("unknown provider: %v", err)
	}
	if _, err := agents.NewAgent(&task.TrialSpec{Task: td}, agents.Options{}); err == nil ||
		err.Error() != "agent: the trial spec has no agent model config" {
		t.Fatalf("no agent: %v", err)
	}
	if u, err := agents.NewUser(&task.TrialSpec{Task: td, Agent: oracle}, "hello", agents.Options{}); err != nil {
		t.Fatal(err)
	} else if s, ok := u.(*host.ScriptedUser); !ok || len(s.Lines) != 1 || s.Lines[0].Message != "hello" {
		t.Fatalf("scripted default gave %#v", u)
	}
	if u, err := agents.NewUser(&task.TrialSpec{Task: td, Agent: oracle, UserSimulatorModel: modelCfg(f, "u")}, "", agents.Options{}); err != nil {
		t.Fatal(err)
	} else if _, ok := u.(*agents.LLMUser); !ok {
		t.Fatalf("llm user gave %T", u)
	}
	if _, err := agents.NewUser(&task.TrialSpec{Task: td, Agent: oracle, UserSimulatorModel: oracle}, "", agents.Options{}); err == nil ||
		err.Error() != `user simulator: provider "oracle" cannot play the user` {
		t.Fatalf("oracle user: %v", err)
	}
}
