package runner_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/runner/grading"
)

// The oracle's verifier: every tests/test_*.sh must pass for a reward of 1. It
// writes its verdict where the runner says (REWARD_FILE) and exits 0, as
// Terminal-Bench's run-tests.sh does.
const (
	oracleRun = `passed=0; failed=0
for t in "$TEST_DIR"/test_*.sh; do
  if [ -f "$t" ] && sh "$t"; then passed=$((passed+1)); else failed=$((failed+1)); fi
done
if [ "$passed" -gt 0 ] && [ "$failed" -eq 0 ]; then echo 1 > "$REWARD_FILE"; else echo 0 > "$REWARD_FILE"; fi
echo "passed=$passed failed=$failed"
`
	oracleTest = `grep -qx 42 answer.txt`
	// What a compromised verifier would say, whatever the answer.
	alwaysPass = `echo 1 > "$REWARD_FILE"; exit 0`
)

// canary is a file outside every trial directory, at the relative name a
// trial's file would have, whose content and mtime must survive grading.
type canary struct {
	path  string
	data  string
	mtime time.Time
}

func plantCanary(t *testing.T, path string) canary {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	c := canary{path: path, data: "canary " + filepath.Base(path), mtime: time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)}
	if err := os.WriteFile(path, []byte(c.data), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, c.mtime, c.mtime); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c canary) check(t *testing.T) {
	t.Helper()
	fi, err := os.Stat(c.path)
	if err != nil {
		t.Fatalf("canary %s outside the trial: %v", c.path, err)
	}
	b, err := os.ReadFile(c.path)
	if err != nil || string(b) != c.data || !fi.ModTime().Equal(c.mtime) {
		t.Fatalf("canary %s outside the trial changed: %q (mtime %s), want %q (mtime %s)", c.path, b, fi.ModTime(), c.data, c.mtime)
	}
}

// trialFilesDir is the registered trial's file-tool root, where an agent's
// shell tool would act.
func trialFilesDir(t *testing.T, h *harness, id string) string {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(h.work, "trial-"+id+"-*", "files"))
	if err != nil || len(matches) != 1 {
		t.Fatalf("files directory of trial %s: %v %v", id, matches, err)
	}
	return matches[0]
}

// An agent that attacks its own grading gets the grade the oracle's verifier
// gives its work, or a named refusal; nothing outside the trial is touched.
// Each case failed before the verifier ran in its own sandbox (checked by
// running it against the old code): the verifier ran from the agent's files,
// so (1) and (2b) scored the attack 1 and (2) scored 0 for lack of a script;
// an absolute reward_file was the runner's own path, so every graded case
// removed and rewrote the canary it names and (3b) created /logs/verifier;
// (4) and (4b) ended GradingFailed on exec's WaitDelay; (5) and (5b)
// registered.
func TestVerifierResistsTheAgent(t *testing.T) {
	h := startRunner(t, nil, withGrader(grading.New()))
	outside := filepath.Dir(h.work) // holds the runner's work dir; no trial's
	// reward_file as upstream writes it, an absolute path: here one outside the
	// trial that holds someone else's file.
	rewardAbs := filepath.Join(outside, "logs", "verifier", "reward.txt")
	rewardInFiles := strings.TrimPrefix(rewardAbs, "/") // where it lands in the sandbox, and in the agent's files
	// The verifier's background children are told apart by their
	// arguments: the verifier writes nothing outside its sandbox (Landlock),
	// so it cannot leave their pids where the test would read them.
	const child4, child4b = "600.0404", "600.0405"
	_, err := os.Lstat("/logs")
	logsBefore := err == nil

	taskDoc := func(id, run, rewardFile string) obj {
		td := baseTask([]any{tool("write_file"), tool("read_file")}, nil, nil)
		td["task_id"] = id
		td["initial_state"] = obj{"tables": obj{}, "filesystem": obj{
			"tests/run.sh":         run,
			"tests/test_answer.sh": oracleTest,
			"README.md":            "put the answer in answer.txt",
		}}
		td["grading"] = obj{
			"grading_method": "test_execution",
			"test_execution": obj{"command": []any{"sh", "tests/run.sh"}, "reward_file": rewardFile, "timeout_s": 30},
		}
		return td
	}
	write := func(t *testing.T, id, path, content string) {
		t.Helper()
		args := strconv.Quote(path)
		h.mustExec(t, id, call{tool: "write_file", args: `{"path":` + args + `,"content":` + strconv.Quote(content) + `}`,
			callID: "w-" + path, executor: "agent"})
	}
	for _, c := range []struct {
		name       string
		run        string // tests/run.sh as registered
		rewardFile string
		agent      func(t *testing.T, id, files string)
		score      float64
		reasons    string // prefix
		refused    string // RegisterTrial's error, exactly
		after      func(t *testing.T, id string)
		needs      string // a program the case needs
	}{
		{
			name: "the oracle grades an honest right answer 1",
			run:  oracleRun, rewardFile: rewardAbs,
			agent: func(t *testing.T, id, _ string) { write(t, id, "answer.txt", "42") },
			score: 1, reasons: "Test execution: score=1 (reward 1 from " + rewardInFiles + ", verifier exit code 0)",
		},
		{
			name: "the oracle grades an honest wrong answer 0",
			run:  oracleRun, rewardFile: rewardAbs,
			agent: func(t *testing.T, id, _ string) { write(t, id, "answer.txt", "41") },
			score: 0, reasons: "Test execution: score=0 (reward 0 from " + rewardInFiles + ", verifier exit code 0); output tail: \"passed=0 failed=1\"",
		},
		{
			name: "(1) an agent that rewrites the verifier script and its test gets the oracle's 0",
			run:  oracleRun, rewardFile: rewardAbs,
			agent: func(t *testing.T, id, _ string) {
				write(t, id, "answer.txt", "41")
				write(t, id, "tests/run.sh", alwaysPass)
				write(t, id, "tests/test_answer.sh", "true")
				write(t, id, "tests/test_extra.sh", "true")
			},
			score: 0, reasons: "Test execution: score=0 (reward 0 from " + rewardInFiles + ", verifier exit code 0); output tail: \"passed=0 failed=1\"",
		},
		{
			name: "(2) an agent that deletes its tests still gets the oracle's grade, here 1",
			run:  oracleRun, rewardFile: rewardAbs,
			agent: func(t *testing.T, id, files string) {
				write(t, id, "answer.txt", "42")
				// As a shell tool would: the builtin file tools cannot delete.
				if err := os.RemoveAll(filepath.Join(files, "tests")); err != nil {
					t.Fatal(err)
				}
			},
			score: 1, reasons: "Test execution: score=1 (reward 1 from " + rewardInFiles + ", verifier exit code 0)",
		},
		{
			name: "(2b) an agent that swaps its tests for a symlink gets the oracle's 0",
			run:  oracleRun, rewardFile: rewardAbs,
			agent: func(t *testing.T, id, files string) {
				write(t, id, "answer.txt", "41")
				write(t, id, "mine/run.sh", alwaysPass)
				write(t, id, "mine/test_answer.sh", "true")
				if err := os.RemoveAll(filepath.Join(files, "tests")); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink("mine", filepath.Join(files, "tests")); err != nil {
					t.Fatal(err)
				}
			},
			score: 0, reasons: "Test execution: score=0 (reward 0 from " + rewardInFiles,
		},
		{
			name: "(3) an agent that writes the reward file itself (before grading) gets the oracle's 0",
			run:  oracleRun, rewardFile: rewardAbs,
			agent: func(t *testing.T, id, _ string) {
				write(t, id, "answer.txt", "41")
				write(t, id, rewardInFiles, "1")
			},
			score: 0, reasons: "Test execution: score=0 (reward 0 from " + rewardInFiles + ", verifier exit code 0)",
		},
		{
			// Upstream Terminal-Bench scripts write the literal absolute path, not
			// $REWARD_FILE: the sandbox's copy of the task's scripts names the
			// sandbox's reward directory instead, so a wrong answer that wrote 0
			// and exited 0 scores 0 (not the exit code's 1), and the real path
			// outside the trial is untouched (its canary is checked below).
			name:       "(3c) an unmodified upstream verifier writing the absolute reward path is read in its sandbox",
			run:        "if grep -qx 42 answer.txt; then echo 1 > " + rewardAbs + "; else echo 0 > " + rewardAbs + "; fi; exit 0",
			rewardFile: rewardAbs,
			agent:      func(t *testing.T, id, _ string) { write(t, id, "answer.txt", "41") },
			score:      0, reasons: "Test execution: score=0 (reward 0 from " + rewardInFiles + ", verifier exit code 0)",
		},
		{
			name: "(3b) a planted reward file counts for nothing when the verifier writes none",
			run:  `grep -qx 42 answer.txt`, rewardFile: "/logs/verifier/reward.txt",
			agent: func(t *testing.T, id, files string) {
				write(t, id, "answer.txt", "41")
				write(t, id, "logs/verifier/reward.txt", "1")
			},
			score: 0, reasons: "Test execution: score=0 (no reward file at logs/verifier/reward.txt; verifier exit code 1)",
			after: func(t *testing.T, _ string) {
				// Upstream's absolute name is read inside the sandbox: the runner
				// made nothing at the real path.
				if _, err := os.Lstat("/logs"); err == nil && !logsBefore {
					t.Errorf("/logs was created outside the trial")
				}
			},
		},
		{
			name: "(4) a verifier that leaves a child running: the reward counts, the child dies, the grade is prompt",
			run: `sleep ` + child4 + ` &
` + oracleRun,
			rewardFile: rewardAbs,
			agent:      func(t *testing.T, id, _ string) { write(t, id, "answer.txt", "42") },
			score:      1, reasons: "Test execution: score=1 (reward 1 from " + rewardInFiles + ", verifier exit code 0)",
			after: func(t *testing.T, _ string) {
				// The verifier forked it before it went on to score 1.
				if pids := running("sleep", child4); len(pids) > 0 {
					t.Errorf("the verifier's background child %v is still running after the grade", pids)
				}
			},
		},
		{
			name: "(4b) a child that left the verifier's group holding its output does not delay the grade, and dies with the trial",
			run: `setsid sleep ` + child4b + ` &
` + oracleRun,
			rewardFile: rewardAbs, needs: "setsid",
			agent: func(t *testing.T, id, _ string) { write(t, id, "answer.txt", "42") },
			score: 1, reasons: "Test execution: score=1 (reward 1 from " + rewardInFiles + ", verifier exit code 0)",
			after: func(t *testing.T, id string) {
				// Under its supervisor it is gone with the grade already.
				if pids := running("sleep", child4b); len(pids) > 0 {
					t.Errorf("the verifier's detached child %v is still running after the grade", pids)
				}
				if resp := h.cleanup(t, id); !resp.GetSuccess() {
					t.Fatalf("CleanupTrial: %s", resp.GetError())
				}
			},
		},
		{
			name: "(5) a reward_file that climbs out of the sandbox is refused at registration, naming it",
			run:  oracleRun, rewardFile: "../../../logs/verifier/reward.txt",
			refused: `Invalid trial_spec_json: task.grading.test_execution.reward_file: "../../../logs/verifier/reward.txt" leaves the verifier's sandbox through "..": ` +
				`name a file inside it (an absolute path such as /logs/verifier/reward.txt is read as <sandbox>/logs/verifier/reward.txt)`,
		},
		{
			name: "(5b) an absolute reward_file that climbs out is refused too",
			run:  oracleRun, rewardFile: "/logs/../../" + rewardInFiles,
			refused: `Invalid trial_spec_json: task.grading.test_execution.reward_file: "/logs/../../` + rewardInFiles + `" leaves the verifier's sandbox through "..": ` +
				`name a file inside it (an absolute path such as /logs/verifier/reward.txt is read as <sandbox>/logs/verifier/reward.txt)`,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.needs != "" {
				if _, err := exec.LookPath(c.needs); err != nil {
					t.Skipf("no %s here", c.needs)
				}
			}
			canaries := []canary{
				plantCanary(t, rewardAbs),
				plantCanary(t, filepath.Join(outside, "tests", "run.sh")),
				plantCanary(t, filepath.Join(h.work, "tests", "run.sh")),
				plantCanary(t, filepath.Join(outside, "answer.txt")),
			}
			id := "adv" + strconv.Itoa(len(h.workEntries(t)))
			if c.refused != "" {
				before := h.workEntries(t)
				r := h.register(t, id, taskDoc(id, c.run, c.rewardFile))
				if r.GetSuccess() || r.GetError() != c.refused {
					t.Fatalf("RegisterTrial = %+v\nwant the refusal %q", r, c.refused)
				}
				if after := h.workEntries(t); len(after) != len(before) {
					t.Errorf("a refused registration left %v (before %v)", after, before)
				}
				for _, cn := range canaries {
					cn.check(t)
				}
				return
			}
			h.mustRegister(t, id, taskDoc(id, c.run, c.rewardFile))
			t.Cleanup(func() { h.cleanup(t, id) })
			files := trialFilesDir(t, h, id)
			c.agent(t, id, files)
			start := time.Now()
			resp := grade(t, h, &runnerpb.GradeTrialRequest{TrialId: id, TerminationReason: "agent_done"})
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("grading took %s", d)
			}
			if !resp.GetSuccess() {
				t.Fatalf("GradeTrial: %s", resp.GetError())
			}
			g := resp.GetGrade()
			if g.GetScore() != c.score || g.GetBinaryPass() != (c.score == 1) || !strings.HasPrefix(g.GetReasons(), c.reasons) {
				t.Errorf("grade = score %v pass %v reasons %q\nwant score %v, reasons starting %q", g.GetScore(), g.GetBinaryPass(), g.GetReasons(), c.score, c.reasons)
			}
			// The agent's files are as it left them: grading ran on a copy.
			if b, err := os.ReadFile(filepath.Join(files, "answer.txt")); err != nil || len(b) == 0 {
				t.Errorf("the agent's answer.txt after grading: %q %v", b, err)
			}
			for _, cn := range canaries {
				cn.check(t)
			}
			if c.after != nil {
				c.after(t, id)
			}
		})
	}
}

// running lists the live processes whose command line is exactly argv.
func running(argv ...string) []int {
	want := strings.Join(argv, "\x00") + "\x00"
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && string(cmd) == want && alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}
