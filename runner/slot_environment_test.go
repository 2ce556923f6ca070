package runner_test

import (
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/prototext"

	"tolokaforge.io/operator/api/authn"
	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner/execagent"
)

// startExecAgent serves an exec agent in this process on loopback (a
// terminal task's environment pod) and returns its address and token. It
// runs only the commands the tests send; nothing here calls KillAll, which
// outside PID 1 would reach every descendant of the test process.
func startExecAgent(t *testing.T) (addr, token string) {
	t.Helper()
	token, err := authn.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := execagent.New(execagent.Options{Token: token, StateDir: filepath.Join(t.TempDir(), "state"), Version: "test-1"})
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis) //nolint:errcheck // Stop ends it
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Stop(ctx)
		srv.Close()
	})
	return lis.Addr().String(), token
}

// environmentSpec is a terminal task's trial spec whose environment is the
// exec agent at addr: one tool, the environment's bash.
func environmentSpec(t *testing.T, id, addr string) string {
	t.Helper()
	doc := obj{
		"trial_id": id, "run_id": "run-1", "attempt_id": "att-1", "agent": obj{"provider": "oracle"},
		"env_endpoints": obj{"environment_url": addr},
		"task": obj{
			"task_id": "term", "name": "t", "category": "terminal", "description": "d", "adapter_type": "terminal_bench",
			"system_prompt": "s", "agent_tools": []any{obj{"name": "bash", "description": "b"}}, "user_tools": []any{},
			"tool_artifacts": obj{"tests/test.sh": b64("true\n")},
			"environment":    obj{"image": "example.com/t:1", "agent": obj{}, "verifier": obj{"tests": []any{"tests"}}},
			"grading":        obj{"grading_method": "test_execution", "test_execution": obj{"command": []any{"bash", "/tests/test.sh"}}},
		},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A slot's runner (--slot) has no exec agent token of its own: each trial's
// comes in its RegisterTrial metadata (runnerpb.EnvironmentTokenMetadata).
// Trial k uses the token it was given; trial k+1 on the same runner, given
// none, is refused before anything is made, even for the very environment
// trial k used; given another environment's token it reaches only that
// environment; every CleanupTrial finds the slot at its baseline; no answer
// holds a token.
func TestSlotRunnerEnvironmentTokenIsThatTrialsOnly(t *testing.T) {
	db := startDBWithToken(t, slotToken)
	r := startSlotRunner(t, db)
	addrA, tokA := startExecAgent(t)
	addrB, tokB := startExecAgent(t)
	var answers []string
	register := func(t *testing.T, id, addr, token string) *runnerpb.RegisterTrialResponse {
		t.Helper()
		ctx := ctxT(t)
		if token != "" {
			ctx = runnerpb.WithEnvironmentToken(ctx, token)
		}
		resp, err := r.c.RegisterTrial(ctx, &runnerpb.RegisterTrialRequest{TrialId: id, TrialSpecJson: environmentSpec(t, id, addr),
			EngineProtocolVersion: task.EngineProtocolVersion})
		if err != nil {
			t.Fatalf("RegisterTrial(%s): %v", id, err)
		}
		answers = append(answers, prototext.Format(resp))
		return resp
	}
	bash := func(t *testing.T, id, cmd string) *runnerpb.ExecuteToolResponse {
		t.Helper()
		args, _ := json.Marshal(obj{"command": cmd})
		resp, err := r.c.ExecuteTool(ctxT(t), &runnerpb.ExecuteToolRequest{TrialId: id, ToolName: "bash", ArgumentsJson: string(args),
			CallId: id + "-" + cmd})
		if err != nil {
			t.Fatalf("ExecuteTool(%s): %v", id, err)
		}
		answers = append(answers, prototext.Format(resp))
		return resp
	}
	cleanup := func(t *testing.T, id string) {
		t.Helper()
		resp := r.cleanup(t, id)
		answers = append(answers, prototext.Format(resp))
		if !resp.GetSuccess() {
			t.Fatalf("CleanupTrial(%s): %s", id, resp.GetError())
		}
	}

	t.Run("trial k uses the token it was given", func(t *testing.T) {
		if resp := register(t, "k", addrA, tokA); !resp.GetSuccess() {
			t.Fatalf("RegisterTrial: %s", resp.GetError())
		}
		resp := bash(t, "k", "echo in-environment-a")
		if resp.GetStatus() != runnerpb.ExecutionStatus_EXECUTION_STATUS_SUCCESS || !strings.Contains(resp.GetOutput(), "in-environment-a") {
			t.Fatalf("bash: %s %q %q", resp.GetStatus(), resp.GetOutput(), resp.GetErrorMessage())
		}
		cleanup(t, "k")
	})
	t.Run("trial k+1 without one cannot use trial k's", func(t *testing.T) {
		resp := register(t, "k1", addrA, "")
		want := `task "term" runs in its own container (environment), but its registration on this slot's runner carries no token for its exec agent (tolokaforge-environment-token metadata)`
		if resp.GetSuccess() || !strings.HasPrefix(resp.GetError(), want) {
			t.Fatalf("RegisterTrial: success=%t error %q, want a refusal starting %q", resp.GetSuccess(), resp.GetError(), want)
		}
		// Refused before anything was made: the slot is still clean.
		cleanup(t, "k1")
	})
	t.Run("trial k again, without one, is refused too", func(t *testing.T) {
		if resp := register(t, "k", addrA, ""); resp.GetSuccess() {
			t.Fatal("RegisterTrial succeeded without a token")
		}
		cleanup(t, "k")
	})
	t.Run("another environment's token does not open trial k's environment", func(t *testing.T) {
		// The exec agent's Health needs no token, so the registration
		// succeeds; every command is refused by the agent.
		if resp := register(t, "wrong", addrA, tokB); !resp.GetSuccess() {
			t.Fatalf("RegisterTrial: %s", resp.GetError())
		}
		resp := bash(t, "wrong", "echo in-environment-a")
		if resp.GetStatus() == runnerpb.ExecutionStatus_EXECUTION_STATUS_SUCCESS || strings.Contains(resp.GetOutput(), "in-environment-a") ||
			!strings.HasPrefix(resp.GetErrorMessage(), task.EnvironmentErrorPrefix) {
			t.Fatalf("bash with B's token on A: %s %q %q, want an environment error", resp.GetStatus(), resp.GetOutput(), resp.GetErrorMessage())
		}
		cleanup(t, "wrong")
	})
	t.Run("trial k+2 uses its own", func(t *testing.T) {
		if resp := register(t, "k2", addrB, tokB); !resp.GetSuccess() {
			t.Fatalf("RegisterTrial: %s", resp.GetError())
		}
		resp := bash(t, "k2", "echo in-environment-b")
		if resp.GetStatus() != runnerpb.ExecutionStatus_EXECUTION_STATUS_SUCCESS || !strings.Contains(resp.GetOutput(), "in-environment-b") {
			t.Fatalf("bash: %s %q %q", resp.GetStatus(), resp.GetOutput(), resp.GetErrorMessage())
		}
		cleanup(t, "k2")
	})
	t.Run("a malformed token is refused without being repeated", func(t *testing.T) {
		const bad = "tok with spaces"
		resp := register(t, "bad", addrA, bad)
		if resp.GetSuccess() || !strings.HasPrefix(resp.GetError(), task.EnvironmentErrorPrefix) || strings.Contains(resp.GetError(), bad) {
			t.Fatalf("RegisterTrial: success=%t error %q", resp.GetSuccess(), resp.GetError())
		}
		cleanup(t, "bad")
	})
	for _, a := range answers {
		for _, tok := range []string{tokA, tokB} {
			if strings.Contains(a, tok) {
				t.Errorf("an answer of the runner holds a token: %s", a)
			}
		}
	}
}
