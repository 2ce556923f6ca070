package cli

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// onlyRun is the one run directory a `trial run` made under out.
func onlyRun(tb testing.TB, out string) string {
	tb.Helper()
	runs := listRuns(out)
	if len(runs) != 1 {
		tb.Fatalf("runs under %s: %q, want one", out, runs)
	}
	return filepath.Join(out, runs[0])
}

var runLine = regexp.MustCompile(`(?m)^(new|resuming) run (\S+) in (\S+) \(continue it with --resume (\S+)\)$`)

// trialRun runs `trial run` and returns its output, error and printed run id.
func trialRun(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out bytes.Buffer
	err := runTrial(ctxT(t), append([]string{"run", "--task", shopTaskPath}, args...), trialTestEnv(t, &out))
	id := ""
	if m := runLine.FindStringSubmatch(out.String()); m != nil {
		id = m[2]
		if m[4] != id {
			t.Errorf("run line names %s and --resume %s", id, m[4])
		}
	}
	return out.String(), id, err
}

// snapshot maps every file and directory under root to its content (""
// for a directory), so a test can assert that nothing was written.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			files[rel+"/"] = ""
			return nil
		}
		b, err := os.ReadFile(p)
		files[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func sameTree(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	if len(before) != len(after) {
		t.Errorf("%s: %d entries became %d", what, len(before), len(after))
	}
	for k, v := range before {
		if a, ok := after[k]; !ok || a != v {
			t.Errorf("%s: %s changed", what, k)
		}
	}
}

// Every run writes its own <out>/<run-id>/; a second run leaves the first's
// files as they were, and --resume adds to a run without redoing what it
// has.
func TestTrialRunNeverOverwritesAndResumes(t *testing.T) {
	out := t.TempDir()
	got, r1, err := trialRun(t, "--out", out)
	if err != nil || r1 == "" {
		t.Fatalf("first run: %v, id %q\n%s", err, r1, got)
	}
	trial0 := filepath.Join(out, r1, "trials", "shop_orders_02", "0")
	if _, err := os.Stat(filepath.Join(trial0, "grade.yaml")); err != nil {
		t.Fatal(err)
	}
	first := snapshot(t, filepath.Join(out, r1))

	got, r2, err := trialRun(t, "--out", out)
	if err != nil || r2 == "" || r2 == r1 {
		t.Fatalf("second run: %v, id %q (first %q)\n%s", err, r2, r1, got)
	}
	sameTree(t, "first run after a second", first, snapshot(t, filepath.Join(out, r1)))
	if tr, err := os.ReadFile(filepath.Join(out, r2, "trials", "shop_orders_02", "0", "trajectory.yaml")); err != nil ||
		!strings.Contains(string(tr), "run_id: "+r2) {
		t.Fatalf("second run's trajectory: %v\n%s", err, tr)
	}

	// A trial with a result is skipped: nothing runs, nothing changes.
	got, _, err = trialRun(t, "--out", out, "--resume", r1)
	if err != nil || !strings.Contains(got, "run "+r1+": trial shop_orders_02:0 already has a result (outcome Passed), skipped") ||
		strings.Contains(got, "turn 1") {
		t.Fatalf("resume of a finished trial: %v\n%s", err, got)
	}
	sameTree(t, "first run after a resume that skips", first, snapshot(t, filepath.Join(out, r1)))

	// A trial the run does not have yet runs into the run.
	got, id, err := trialRun(t, "--out", out, "--resume", r1, "--trial-index", "1")
	if err != nil || id != r1 || !strings.Contains(got, "resuming run "+r1) {
		t.Fatalf("resume with a new trial index: %v, id %q\n%s", err, id, got)
	}
	if _, err := os.Stat(filepath.Join(out, r1, "trials", "shop_orders_02", "1", "attempts", "1", "grade.yaml")); err != nil {
		t.Fatal(err)
	}

	// An attempt that ended in an infrastructure fault is run again as the
	// next attempt; its record stays beside the new one.
	trial2 := filepath.Join(out, r2, "trials", "shop_orders_02", "0")
	infra := "trial_id: shop_orders_02:0\noutcome: InfraFailed\nreason: Canceled\nattempt: 1\n"
	for _, p := range []string{filepath.Join(trial2, "trajectory.yaml"), filepath.Join(trial2, "attempts", "1", "trajectory.yaml")} {
		if err := os.WriteFile(p, []byte(infra), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(filepath.Join(trial2, "grade.yaml")); err != nil {
		t.Fatal(err)
	}
	got, _, err = trialRun(t, "--out", out, "--resume", r2)
	if err != nil || !strings.Contains(got, "grade: score 0.833333, pass true") {
		t.Fatalf("resume of an infra-failed trial: %v\n%s", err, got)
	}
	if b, _ := os.ReadFile(filepath.Join(trial2, "attempts", "1", "trajectory.yaml")); string(b) != infra {
		t.Errorf("attempt 1's record changed:\n%s", b)
	}
	if b, _ := os.ReadFile(filepath.Join(trial2, "trajectory.yaml")); !strings.Contains(string(b), "attempt: 2") || !strings.Contains(string(b), "outcome: Passed") {
		t.Errorf("top-level trajectory is not attempt 2's:\n%s", b)
	}
	if _, err := os.Stat(filepath.Join(trial2, "attempts", "2", "grade.yaml")); err != nil {
		t.Error(err)
	}
	if runs := listRuns(out); len(runs) != 2 {
		t.Errorf("runs: %q, want the two", runs)
	}
}

func TestTrialRunResumeRefusesUnknownRuns(t *testing.T) {
	out := t.TempDir()
	if err := os.Mkdir(filepath.Join(out, "local-20260101T000000Z"), 0o755); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, out)
	for _, tc := range []struct{ id, want string }{
		{"local-nope", "trial run: --resume local-nope: no such run under " + out + " (runs there: local-20260101T000000Z)"},
		{"../x", `trial run: --resume "../x": not a run id`},
		{"a/b", `trial run: --resume "a/b": not a run id`},
		{".", `trial run: --resume ".": not a run id`},
	} {
		got, _, err := trialRun(t, "--out", out, "--resume", tc.id)
		if err == nil || err.Error() != tc.want && !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("--resume %q: %v, want %q", tc.id, err, tc.want)
		}
		var ee *exitError
		if errors.As(err, &ee) {
			t.Errorf("--resume %q: a bad-input error, not an exit code: %v", tc.id, err)
		}
		if strings.Contains(got, "turn ") {
			t.Errorf("--resume %q ran a trial:\n%s", tc.id, got)
		}
	}
	sameTree(t, "out after refused resumes", before, snapshot(t, out))
	// Nothing under a missing --out either.
	missing := filepath.Join(t.TempDir(), "none")
	if _, _, err := trialRun(t, "--out", missing, "--resume", "local-x"); err == nil || !strings.Contains(err.Error(), "(runs there: none)") {
		t.Errorf("resume under a missing out: %v", err)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("%s was created: %v", missing, err)
	}
}

// A terminal task never runs locally: `trial run` refuses it before any
// model call, naming how to run it on a cluster, and writes no run.
func TestTrialRunRefusesATerminalTask(t *testing.T) {
	out := t.TempDir()
	var stdout bytes.Buffer
	err := runTrial(ctxT(t), []string{"run", "--task", upstreamPacks + "/terminal_bench/echo-hello", "--out", out}, trialTestEnv(t, &stdout))
	want := "trial run: task echo-hello runs in its own container (built from environment/Dockerfile), which this machine's local stack does not start, and its commands never run on this host: run it on a cluster: `tolokaforge pack build DIR --registry HOST:PORT -o tasks.yaml`"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error %v\nwant %s", err, want)
	}
	if ents, _ := os.ReadDir(out); len(ents) != 0 || strings.Contains(stdout.String(), "turn ") {
		t.Fatalf("ran or wrote something: %v\n%s", ents, stdout.String())
	}
}
