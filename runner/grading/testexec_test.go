package grading

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner/proc"
)

// testExecEnv is a trial graded by a verifier: no DB, a real work directory.
func testExecEnv(t *testing.T, te *task.TestExecution, threshold *float64) *testEnv {
	t.Helper()
	td := &task.TaskDescription{TaskID: "verify", Grading: &task.GradingConfig{
		GradingMethod: task.GradingTestExecution, TestExecution: te, PassThreshold: threshold,
	}}
	return &testEnv{id: "verify:1", spec: &task.TrialSpec{TrialID: "verify:1", Task: td}, workDir: t.TempDir(),
		site: VerifierSite{Dir: t.TempDir()}}
}

func sh(script string) []string { return []string{"sh", "-c", script} }

func TestTestExecution(t *testing.T) {
	half := 0.5
	unset := &runnerpb.GradeComponents{StateChecks: -1, TranscriptRules: -1, LlmJudge: -1, CustomChecks: -1}
	for _, c := range []struct {
		name      string
		te        task.TestExecution
		threshold *float64
		setup     func(t *testing.T, dir string) // before grading, e.g. a stale reward file
		want      *runnerpb.Grade
		err       string // substrings of the error, with {dir} for the work directory
	}{
		{
			name: "exit code 0 and no reward file scores 1",
			te:   task.TestExecution{Command: sh("test -f answer.txt")},
			setup: func(t *testing.T, dir string) {
				writeFile(t, filepath.Join(dir, "answer.txt"), "42")
			},
			want: &runnerpb.Grade{BinaryPass: true, Score: 1, Components: unset,
				Reasons: "Test execution: score=1 (no reward file declared; verifier exit code 0)"},
		},
		{
			name: "non-zero exit and no reward file scores 0 with the output tail",
			te:   task.TestExecution{Command: sh("echo 'FAILED test_answer'; exit 3"), RewardFile: "logs/reward.txt"},
			want: &runnerpb.Grade{BinaryPass: false, Score: 0, Components: unset,
				Reasons: `Test execution: score=0 (no reward file at logs/reward.txt; verifier exit code 3); output tail: "FAILED test_answer"`},
		},
		{
			name:      "the reward file wins over the exit code",
			te:        task.TestExecution{Command: sh("echo 0.75 > logs/reward.txt; exit 1"), RewardFile: "logs/reward.txt"},
			threshold: &half,
			want: &runnerpb.Grade{BinaryPass: true, Score: 0.75, Components: unset,
				Reasons: `Test execution: score=0.75 (reward 0.75 from logs/reward.txt, verifier exit code 1)`},
		},
		{
			name: "a reward file the agent left behind is removed before the verifier runs",
			te:   task.TestExecution{Command: sh("exit 1"), RewardFile: "reward.txt"},
			setup: func(t *testing.T, dir string) {
				writeFile(t, filepath.Join(dir, "reward.txt"), "1.0")
			},
			want: &runnerpb.Grade{BinaryPass: false, Score: 0, Components: unset,
				Reasons: "Test execution: score=0 (no reward file at reward.txt; verifier exit code 1)"},
		},
		{
			name: "garbage in the reward file is an error naming the file and the content",
			te:   task.TestExecution{Command: sh("echo 'all tests passed!' > reward.txt"), RewardFile: "reward.txt"},
			err:  `Grading error: test_execution: the reward file reward.txt holds "all tests passed!", not a number in [0, 1]`,
		},
		{
			name: "a reward outside [0, 1] is an error",
			te:   task.TestExecution{Command: sh("echo 1.5 > reward.txt"), RewardFile: "reward.txt"},
			err:  `Grading error: test_execution: the reward file reward.txt holds "1.5", not a number in [0, 1]`,
		},
		{
			name: "NaN in the reward file is an error",
			te:   task.TestExecution{Command: sh("echo NaN > reward.txt"), RewardFile: "reward.txt"},
			err:  `holds "NaN", not a number in [0, 1]`,
		},
		{
			name: "a timeout kills the process group and errors",
			// The background sleep is a grandchild holding the output pipe: only killing
			// the group lets grading return promptly.
			te:  task.TestExecution{Command: sh("echo started; sleep 30 & sleep 30"), TimeoutS: 0.3},
			err: `Grading error: test_execution: the verifier command ["sh" "-c" "echo started; sleep 30 & sleep 30"] did not finish within 300ms; its process group was killed; output tail: "started"`,
		},
		{
			name: "a command that does not exist is an error naming it",
			te:   task.TestExecution{Command: []string{"/nonexistent/verify"}},
			err:  `Grading error: test_execution: start the verifier command ["/nonexistent/verify"]: fork/exec /nonexistent/verify: no such file or directory`,
		},
		{
			name: "the verifier sees a minimal environment, not the runner's",
			te:   task.TestExecution{Command: sh(`test -z "$JUDGE_SECRET_TEST" && test "$TRIAL_ID" = verify:1 && test "$HOME" = "$PWD"`)},
			want: &runnerpb.Grade{BinaryPass: true, Score: 1, Components: unset,
				Reasons: "Test execution: score=1 (no reward file declared; verifier exit code 0)"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("JUDGE_SECRET_TEST", "sk-should-not-leak")
			te := c.te
			env := testExecEnv(t, &te, c.threshold)
			// t.TempDir may be a symlinked path; the verifier's $PWD is what the
			// kernel resolved.
			dir, err := filepath.EvalSymlinks(env.workDir)
			if err != nil {
				t.Fatal(err)
			}
			env.workDir = dir
			if c.setup != nil {
				c.setup(t, dir)
			}
			start := time.Now()
			g, err := New().Grade(context.Background(), env, Request{TerminationReason: "agent_done"})
			if elapsed := time.Since(start); elapsed > 10*time.Second {
				t.Errorf("grading took %s: the verifier's processes were not killed", elapsed)
			}
			if c.err != "" {
				want := strings.ReplaceAll(c.err, "{dir}", dir)
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("error = %v, want it to contain %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatalf("Grade: %v", err)
			}
			want := proto.Clone(c.want).(*runnerpb.Grade)
			want.Reasons = strings.ReplaceAll(want.Reasons, "{dir}", dir)
			if !proto.Equal(g, want) {
				t.Fatalf("grade:\n got %v\nwant %v", g, want)
			}
		})
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The verifier runs under the runner's tool rlimits: the pack's code gets no
// more room in the shared pod than its tools do.
//
// The launcher is the small tolokaforge-toolexec, as in production: this test
// binary as the launcher (the default when none is beside it) sets RLIMIT_AS
// on itself before it execs the verifier, and under -race its shadow memory
// already exceeds 256 MiB, so a GC cycle between the two crashed it now and
// then on a loaded machine.
func TestVerifierRunsUnderTheToolLimits(t *testing.T) {
	launcher := filepath.Join(t.TempDir(), "tolokaforge-toolexec")
	build := exec.Command("go", "build", "-o", launcher, "tolokaforge.io/operator/runner/proc/toolexec")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the tool launcher: %v\n%s", err, out)
	}
	if err := proc.SetLauncher(launcher); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proc.SetLauncher("") })
	// ulimit -v and -n report RLIMIT_AS (in KiB) and RLIMIT_NOFILE.
	te := task.TestExecution{Command: sh(`test "$(ulimit -v)" = 262144 && test "$(ulimit -n)" = 64`)}
	for _, c := range []struct {
		name   string
		limits proc.Limits
		score  float64
	}{
		{"with limits", proc.Limits{AddressSpace: 256 << 20, OpenFiles: 64}, 1},
		{"without", proc.Limits{}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := testExecEnv(t, &te, nil)
			g, err := New(WithVerifierLimits(c.limits)).Grade(context.Background(), env, Request{TerminationReason: "agent_done"})
			if err != nil {
				t.Fatalf("Grade: %v", err)
			}
			if g.GetScore() != c.score {
				t.Fatalf("score %v, want %v: %s", g.GetScore(), c.score, g.GetReasons())
			}
		})
	}
}
