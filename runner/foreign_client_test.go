package runner_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner/grading"
)

// foreignResult is one line of testdata/foreign/client.py's output.
type foreignResult struct {
	TrialID         string   `json:"trial_id"`
	RegisterSuccess bool     `json:"register_success"`
	RegisterError   string   `json:"register_error"`
	ExecStatuses    []string `json:"exec_statuses"`
	GradeSuccess    bool     `json:"grade_success"`
	GradeError      string   `json:"grade_error"`
	BinaryPass      bool     `json:"binary_pass"`
	Score           float64  `json:"score"`
	StateChecks     float64  `json:"state_checks"`
	Reasons         string   `json:"reasons"`
}

// needForeignClient is what the Python client needs: Debian's python3 with grpcio
// and protobuf (make python-deps) and protoc (make protoc). It returns the folder
// holding runner_pb2.py, generated from the spec's proto.
func needForeignClient(tb testing.TB) string {
	tb.Helper()
	needPython(tb)
	if out, err := exec.Command(debianPython, "-c", "import grpc, google.protobuf").CombinedOutput(); err != nil {
		tb.Fatalf("%s lacks grpcio or protobuf, which the foreign client needs (make python-deps installs python3-grpcio and python3-protobuf): %v: %s", debianPython, err, out)
	}
	protoc, err := exec.LookPath("protoc")
	if err != nil {
		tb.Fatalf("protoc is required to generate the foreign client's messages from the spec's proto (make protoc installs it): %v", err)
	}
	stubs := tb.TempDir()
	protoDir, err := filepath.Abs(filepath.Join("..", "api", "runnerpb"))
	if err != nil {
		tb.Fatal(err)
	}
	if out, err := exec.Command(protoc, "-I", protoDir, "--python_out="+stubs, filepath.Join(protoDir, "runner.proto")).CombinedOutput(); err != nil {
		tb.Fatalf("protoc --python_out: %v: %s", err, out)
	}
	return stubs
}

// TestForeignClientRefusalShape: the refusal shape's conformance checked over gRPC
// by a foreign client (Python, grpcio, messages protoc generates from the spec's
// proto): RegisterTrial accepts hash_enabled with golden_actions: [] and GradeTrial
// grades the hash against the trial's initial state, alone, beside db_probes and
// beside jsonpaths with and without a hash_weight, as runner-protocol.md's rows say.
func TestForeignClientRefusalShape(t *testing.T) {
	stubs := needForeignClient(t)
	h := startRunner(t, nil, withGrader(grading.New()))
	const insert = `{"table":"items","record":{"id":"i-2","name":"extra"}}`
	type callJSON struct {
		ToolName      string `json:"tool_name"`
		ArgumentsJSON string `json:"arguments_json"`
		CallID        string `json:"call_id"`
	}
	cases := []struct {
		id          string
		stateChecks obj
		insert      bool
		want        foreignResult
	}{
		{id: "alone-unchanged", stateChecks: obj{"hash_enabled": true, "golden_actions": []any{}},
			want: foreignResult{RegisterSuccess: true, GradeSuccess: true, BinaryPass: true, Score: 1, StateChecks: 1, Reasons: "State: hash match"}},
		{id: "alone-changed", stateChecks: obj{"hash_enabled": true, "golden_actions": []any{}}, insert: true,
			want: foreignResult{RegisterSuccess: true, ExecStatuses: []string{"EXECUTION_STATUS_SUCCESS"}, GradeSuccess: true, Score: 0, StateChecks: 0}},
		{id: "beside-probes", stateChecks: obj{"hash_enabled": true, "golden_actions": []any{},
			"db_probes": []any{obj{"id": "p", "query": "$.db.items[*]", "expect": obj{"count": 1}}}},
			want: foreignResult{RegisterSuccess: true, GradeError: "Trial 'beside-probes' is not gradeable: ValueError: state_checks.db_probes is the sole state source " +
				"for a task that declares it, yet this task also declares an enabled hash (state_checks.hash_enabled: true): two verdicts for one " +
				"state_checks component with no declared share between them; drop the probes or the other source"}},
		{id: "jsonpaths-no-weight", stateChecks: obj{"hash_enabled": true, "golden_actions": []any{},
			"jsonpaths": []any{obj{"path": "$.db.items[0].name", "equals": "first"}}},
			want: foreignResult{RegisterSuccess: true, GradeError: "Trial 'jsonpaths-no-weight' is not gradeable: ValueError: state_checks.hash.weight is required " +
				"when a hash verdict and a JSONPath score are both real (hash_enabled with 1 jsonpaths) and nothing says how to fold them; declare state_checks.hash_weight in [0, 1]"}},
		{id: "jsonpaths-weight", stateChecks: obj{"hash_enabled": true, "golden_actions": []any{}, "hash_weight": 0.25,
			"jsonpaths": []any{obj{"path": "$.db.items[0].name", "equals": "first"}}}, insert: true,
			want: foreignResult{RegisterSuccess: true, ExecStatuses: []string{"EXECUTION_STATUS_SUCCESS"}, GradeSuccess: true, Score: 0.75, StateChecks: 0.75}},
	}
	var in []obj
	for _, c := range cases {
		doc := baseTask([]any{tool("db_insert", "category", "write")}, nil, obj{"items": []any{obj{"id": "i-1", "name": "first"}}})
		doc["grading"] = obj{"weights": obj{"state_checks": 1}, "state_checks": c.stateChecks}
		msgs := `[{"role":"user","content":"change nothing"}]`
		calls := []callJSON{}
		if c.insert {
			calls = append(calls, callJSON{"db_insert", insert, "c1"})
			msgs = `[{"role":"user","content":"change nothing"},` +
				`{"role":"assistant","content":"","tool_calls":[{"id":"c1","function":{"name":"db_insert","arguments":` + mustJSON(insert) + `}}]},` +
				`{"role":"tool","content":"ok","tool_call_id":"c1"}]`
		}
		in = append(in, obj{"trial_id": c.id, "trial_spec_json": specJSON(t, c.id, doc), "engine_protocol_version": task.EngineProtocolVersion,
			"calls": calls, "llm_messages_json": msgs, "termination_reason": "agent_done"})
	}
	casesFile := filepath.Join(t.TempDir(), "cases.json")
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(casesFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, debianPython, filepath.Join("testdata", "foreign", "client.py"), h.addr, stubs, casesFile)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("foreign client: %v\nstderr: %s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != len(cases) {
		t.Fatalf("foreign client printed %d results for %d cases:\n%s\nstderr: %s", len(lines), len(cases), stdout.String(), stderr.String())
	}
	for i, c := range cases {
		var got foreignResult
		if err := json.Unmarshal([]byte(lines[i]), &got); err != nil {
			t.Fatalf("%s: %v: %s", c.id, err, lines[i])
		}
		want := c.want
		want.TrialID = c.id
		if c.want.Reasons == "" {
			// A mismatch's reasons carry the diff summary; the verdict is what is asserted.
			got.Reasons = ""
		}
		if got.TrialID != want.TrialID || got.RegisterSuccess != want.RegisterSuccess || got.RegisterError != want.RegisterError ||
			strings.Join(got.ExecStatuses, ",") != strings.Join(want.ExecStatuses, ",") || got.GradeSuccess != want.GradeSuccess ||
			got.GradeError != want.GradeError || got.BinaryPass != want.BinaryPass || got.Score != want.Score ||
			got.StateChecks != want.StateChecks || got.Reasons != want.Reasons {
			t.Errorf("%s over gRPC from the foreign client:\n got %+v\nwant %+v", c.id, got, want)
		}
	}
}
