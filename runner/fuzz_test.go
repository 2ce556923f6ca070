package runner_test

import (
	"context"
	"testing"
	"time"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner"
)

// FuzzRegisterTrialSpec feeds trial_spec_json through RegisterTrial's handler:
// whatever the bytes, it answers in-band, a refusal leaves nothing registered,
// and a success honours the tool partition and cleans up.
func FuzzRegisterTrialSpec(f *testing.F) {
	db := startDB(f)
	srv, err := runner.New(runner.Config{DBServiceURL: db.url, SelfExecutable: selfBin, WorkDir: f.TempDir(), Logger: testLogger(f)})
	if err != nil {
		f.Fatal(err)
	}
	seedTask := baseTask([]any{tool("calculator"), tool("db_get")}, []any{tool("read_file")}, obj{"items": []any{obj{"id": 1}}})
	seedTask["initialization_actions"] = []any{obj{"env_type": "user", "tool_name": "read_file", "arguments": obj{"path": "a.txt"}}}
	seedTask["initial_state"].(obj)["filesystem"] = obj{"a.txt": "x"}
	for _, s := range []string{
		specJSON(f, "fz", seedTask),
		specJSON(f, "fz", baseTask([]any{tool("think")}, nil, nil)),
		specJSON(f, "fz", baseTask([]any{tool("book", "source", obj{"toolset": "t", "module_path": "m", "class_name": "C", "invocation_style": "tau_sync"})}, nil, nil)),
		specJSON(f, "fz", baseTask([]any{tool("think", "parameters", obj{"type": "object", "properties": obj{"a": obj{"$ref": "#/x"}}})}, nil, nil)),
		specJSON(f, "other", baseTask(nil, nil, nil)),
		`{"trial_id":"fz","task":{"tool_artifacts":{"../x":"AA=="}},"agent":{"provider":"oracle"}}`,
		`{"trial_id":"fz","bogus":1}`,
		`{"task":{"agent_tools":[{"name":"x","timeout_s":-1}]}}`,
		`[]`, `null`, ``, `{"trial_id":"fz","task":{},"agent":{}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		resp, err := srv.RegisterTrial(ctx, &runnerpb.RegisterTrialRequest{TrialId: "fz", TrialSpecJson: spec, EngineProtocolVersion: task.EngineProtocolVersion})
		if err != nil {
			t.Fatalf("RegisterTrial raised %v; errors must be in-band", err)
		}
		if !resp.GetSuccess() {
			if resp.GetError() == "" || srv.ActiveTrials() != 0 {
				t.Fatalf("refusal with error %q left %d trials", resp.GetError(), srv.ActiveTrials())
			}
			return
		}
		n := int(resp.GetNumAgentTools() + resp.GetNumUserTools())
		if n != len(resp.GetToolSchemas()) || resp.GetNumAgentTools() < 0 || resp.GetNumUserTools() < 0 {
			t.Fatalf("partition %d+%d != %d", resp.GetNumAgentTools(), resp.GetNumUserTools(), len(resp.GetToolSchemas()))
		}
		if c, err := srv.CleanupTrial(ctx, &runnerpb.CleanupTrialRequest{TrialId: "fz"}); err != nil || !c.GetSuccess() {
			t.Fatalf("cleanup: %v %s", err, c.GetError())
		}
	})
}
