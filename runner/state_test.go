package runner_test

import (
	"path/filepath"
	"testing"

	"tolokaforge.io/operator/api/runnerpb"
)

func TestGetStateIncludeUnstableAndTables(t *testing.T) {
	h := startRunner(t, nil)
	taskDoc := baseTask([]any{tool("db_insert")}, nil, nil)
	taskDoc["initial_state"] = obj{
		"tables": obj{
			"orders": []any{obj{"id": "O-1", "total": 10.50, "created_at": "2026-01-01T00:00:00Z"}},
			"users":  []any{obj{"id": "U-1", "name": "Mia"}},
		},
		"unstable_fields": []any{obj{"table_name": "orders", "field_name": "created_at", "reason": "timestamp"}},
	}
	h.mustRegister(t, "gs", taskDoc)
	hash, err := h.db.c.Hash(ctxT(t), "gs")
	if err != nil {
		t.Fatal(err)
	}
	if hash.StableHash == hash.FullHash {
		t.Fatal("fixture: stable and full hashes should differ")
	}
	cases := []struct {
		name     string
		unstable bool
		tables   []string
		want     string
	}{
		{"full", true, nil, `{"orders":[{"created_at":"2026-01-01T00:00:00Z","id":"O-1","total":10.5}],"users":[{"id":"U-1","name":"Mia"}]}`},
		{"stable", false, nil, `{"orders":[{"id":"O-1","total":10.5}],"users":[{"id":"U-1","name":"Mia"}]}`},
		{"full, one table", true, []string{"orders"}, `{"orders":[{"created_at":"2026-01-01T00:00:00Z","id":"O-1","total":10.5}]}`},
		{"stable, one table", false, []string{"users"}, `{"users":[{"id":"U-1","name":"Mia"}]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := h.state(t, "gs", tc.unstable, tc.tables...)
			if !got.GetSuccess() || got.GetStateJson() != tc.want {
				t.Fatalf("state_json = %s (%s)\nwant         %s", got.GetStateJson(), got.GetError(), tc.want)
			}
			// Hashes always describe the whole trial.
			if got.GetStableHash() != hash.StableHash || got.GetFullHash() != hash.FullHash {
				t.Fatalf("hashes = %s / %s, want %s / %s", got.GetStableHash(), got.GetFullHash(), hash.StableHash, hash.FullHash)
			}
		})
	}
	for _, unstable := range []bool{true, false} {
		got := h.state(t, "gs", unstable, "nope")
		if got.GetSuccess() || got.GetError() == "" {
			t.Errorf("unknown table (include_unstable=%v): %+v", unstable, got)
		}
	}
	if got := h.state(t, "ghost", true); got.GetSuccess() || got.GetError() != "Trial 'ghost' not found" {
		t.Errorf("unknown trial: %+v", got)
	}
}

func TestResetTrial(t *testing.T) {
	pg := &probeGrader{}
	h := startRunner(t, nil, withGrader(pg))
	taskDoc := baseTask(
		[]any{tool("db_insert"), tool("db_find"), testkitTool("incr", nil), tool("write_file"), tool("list_dir")},
		nil, obj{"items": []any{obj{"id": 1}}, "counters": []any{}},
	)
	taskDoc["initial_state"].(obj)["filesystem"] = obj{"readme.txt": "hello"}
	taskDoc["initialization_actions"] = []any{obj{"env_type": "assistant", "tool_name": "db_insert", "arguments": obj{"table": "items", "record": obj{"id": "init"}}}}
	h.mustRegister(t, "reset", taskDoc)
	afterInit := h.state(t, "reset", true).GetStableHash()
	// The same task without its init actions gives the provisioned state's hash.
	ref := baseTask([]any{tool("db_find")}, nil, obj{"items": []any{obj{"id": 1}}, "counters": []any{}})
	h.mustRegister(t, "reset-ref", ref)
	initial := h.state(t, "reset-ref", true)
	if initial.GetStableHash() == afterInit {
		t.Fatal("fixture: the init action should change the hash")
	}

	mutate := func() {
		h.mustExec(t, "reset", call{tool: "db_insert", args: `{"table":"items","record":{"id":2}}`, callID: "a"})
		h.mustExec(t, "reset", call{tool: "incr", args: `{"key":"k"}`, callID: "b"})
		h.mustExec(t, "reset", call{tool: "incr", args: `{"key":"k"}`, callID: "c"})
		h.mustExec(t, "reset", call{tool: "write_file", args: `{"path":"new.txt","content":"x"}`, callID: "d"})
	}
	mutate()
	resp, err := h.c.ResetTrial(ctxT(t), &runnerpb.ResetTrialRequest{TrialId: "reset"})
	if err != nil || !resp.GetSuccess() {
		t.Fatalf("reset: %v %s", err, resp.GetError())
	}
	// Without init actions the DB is back at the state RegisterTrial provisioned.
	if resp.GetStateHash() != initial.GetStableHash() {
		t.Errorf("state_hash %s, want the initial %s", resp.GetStateHash(), initial.GetStableHash())
	}
	if got := h.mustExec(t, "reset", call{tool: "db_find", args: `{"table":"items"}`, callID: "a"}); got != `[{"id":1}]` {
		t.Errorf("items after reset: %s", got)
	}
	// The MCP server forgot its count, the record restarted, files are initial.
	if got := h.mustExec(t, "reset", call{tool: "incr", args: `{"key":"k"}`, callID: "b"}); got != "1" {
		t.Errorf("MCP counter after reset = %s, want 1", got)
	}
	if got := h.mustExec(t, "reset", call{tool: "list_dir", args: `{}`, callID: "e"}); got != `["readme.txt"]` {
		t.Errorf("files after reset: %s", got)
	}
	recs := recordsOf(t, h, pg, "reset")
	if len(recs) != 3 || recs[0].CallID != "a" || recs[0].Sequence != 0 || recs[2].CallID != "e" {
		t.Errorf("records after reset: %+v", recs)
	}

	mutate2 := h.exec(t, "reset", call{tool: "db_insert", args: `{"table":"items","record":{"id":3}}`, callID: "f"})
	if mutate2.GetStatus() != stSuccess {
		t.Fatal(mutate2.GetErrorMessage())
	}
	resp, err = h.c.ResetTrial(ctxT(t), &runnerpb.ResetTrialRequest{TrialId: "reset", ExecuteInitActions: true})
	if err != nil || !resp.GetSuccess() {
		t.Fatalf("reset with init actions: %v %s", err, resp.GetError())
	}
	if resp.GetStateHash() != afterInit {
		t.Errorf("state_hash %s, want the post-init %s", resp.GetStateHash(), afterInit)
	}
	if got := h.mustExec(t, "reset", call{tool: "db_find", args: `{"table":"items"}`, callID: "g"}); got != `[{"id":1},{"id":"init"}]` {
		t.Errorf("items after reset with init actions: %s", got)
	}

	if r, _ := h.c.ResetTrial(ctxT(t), &runnerpb.ResetTrialRequest{TrialId: "ghost"}); r.GetSuccess() || r.GetError() != "Trial 'ghost' not found" {
		t.Errorf("unknown trial: %+v", r)
	}
}

func TestCleanupTrial(t *testing.T) {
	scratch := t.TempDir()
	h := startRunner(t, nil, withToolRW(scratch))
	pidfile := filepath.Join(scratch, "pids")
	h.mustRegister(t, "clean", baseTask([]any{testkitTool("incr", obj{"TESTKIT_PIDFILE": pidfile}), tool("write_file")}, nil, obj{"counters": []any{}}))
	h.mustExec(t, "clean", call{tool: "incr", args: `{"key":"k"}`, callID: "1"})
	h.mustExec(t, "clean", call{tool: "write_file", args: `{"path":"a.txt","content":"x"}`, callID: "2"})
	if len(h.workEntries(t)) != 1 || !h.dbHasTrial(t, "clean") {
		t.Fatal("fixture: trial directory and DB trial expected")
	}
	pids := readPids(t, pidfile)
	if !alive(pids[0][0]) || !alive(pids[0][1]) {
		t.Fatal("fixture: MCP server and its helper should run")
	}

	if r := h.cleanup(t, "clean"); !r.GetSuccess() || r.GetError() != "" {
		t.Fatalf("cleanup: %+v", r)
	}
	// The whole process group is gone, not just the server.
	waitDead(t, pids[0][0], pids[0][1])
	if h.dbHasTrial(t, "clean") {
		t.Error("DB state not deleted")
	}
	if e := h.workEntries(t); len(e) != 0 {
		t.Errorf("trial directory not removed: %v", e)
	}
	if r := h.exec(t, "clean", call{tool: "incr", args: `{"key":"k"}`, callID: "3"}); r.GetStatus() != stNoTrial {
		t.Errorf("after cleanup ExecuteTool = %s", r.GetStatus())
	}
	// Idempotent: again, and for an id never registered.
	for _, id := range []string{"clean", "never"} {
		if r := h.cleanup(t, id); !r.GetSuccess() || r.GetError() != "" {
			t.Errorf("cleanup(%s) again: %+v", id, r)
		}
	}
	if r := h.cleanup(t, ""); r.GetSuccess() || r.GetError() != "trial_id is required" {
		t.Errorf("cleanup(\"\"): %+v", r)
	}
	// Re-registration starts from scratch.
	h.mustRegister(t, "clean", baseTask([]any{testkitTool("incr", nil)}, nil, obj{"counters": []any{}}))
	if got := h.mustExec(t, "clean", call{tool: "incr", args: `{"key":"k"}`, callID: "1"}); got != "1" {
		t.Errorf("re-registered counter = %s", got)
	}
}
