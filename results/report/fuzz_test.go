package report

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// FuzzArtifacts: whatever a trial's trajectory.yaml and grade.yaml hold,
// reading them either fails with an error or yields a report that renders.
func FuzzArtifacts(f *testing.F) {
	f.Add([]byte("task_id: t\noutcome: Graded\ntermination_reason: agent_done\n"), []byte("binary_pass: true\nscore: 1\n"))
	f.Add([]byte("outcome: SelfGraded\ntermination_reason: stuck_detected\n"), []byte(""))
	f.Add([]byte("outcome: InfraFailed\nreason: PodLost\n"), []byte("score: .nan\n"))
	f.Add([]byte("outcome: Graded\n"), []byte("state_diff: {summary: \"<b>x</b>\"}\nreasons: \"a | b\"\n"))
	f.Add([]byte("{"), []byte("]"))
	f.Fuzz(func(t *testing.T, trajectory, grade []byte) {
		dir := t.TempDir()
		p := filepath.Join(dir, "a", "trials", "t", "0")
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "trajectory.yaml"), trajectory, 0o644); err != nil {
			t.Fatal(err)
		}
		if len(grade) > 0 {
			if err := os.WriteFile(filepath.Join(p, "grade.yaml"), grade, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		rep, err := FromArtifacts(dir)
		if err != nil {
			return
		}
		if len(rep.Trials) != 1 {
			t.Fatalf("%d trials from one directory", len(rep.Trials))
		}
		if err := rep.WriteTable(io.Discard); err != nil {
			t.Fatal(err)
		}
		var page bytes.Buffer
		if err := rep.WriteHTML(&page, dir); err != nil {
			t.Fatal(err)
		}
		if _, err := json.Marshal(rep.Aggregate()); err != nil {
			t.Fatalf("aggregate.json does not encode: %v", err)
		}
	})
}

// FuzzRelHref: whatever a folder below the report is called, its link is
// either refused or a relative URL (no scheme, host, query or fragment)
// resolving to exactly that path. Seeds: testdata/fuzz/FuzzRelHref.
func FuzzRelHref(f *testing.F) {
	f.Add("plain/trials/t/0/grade.yaml")
	f.Fuzz(func(t *testing.T, rel string) {
		h, ok := relHref(rel)
		if !ok {
			return
		}
		checkRelative(t, string(h), rel)
	})
}
