package grading

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"tolokaforge.io/operator/api/task"
)

func TestSandboxRewardPath(t *testing.T) {
	const climbs = `" leaves the verifier's sandbox through "..": name a file inside it ` +
		`(an absolute path such as /logs/verifier/reward.txt is read as <sandbox>/logs/verifier/reward.txt)`
	for _, c := range []struct {
		in, want, err string
	}{
		{in: "", want: ""},
		{in: "/logs/verifier/reward.txt", want: "logs/verifier/reward.txt"},
		{in: "//logs//verifier/./reward.txt", want: "logs/verifier/reward.txt"},
		{in: "logs/reward.txt", want: "logs/reward.txt"},
		{in: "./reward.txt", want: "reward.txt"},
		{in: "reward..txt", want: "reward..txt"},
		{in: "../reward.txt", err: `task.grading.test_execution.reward_file: "../reward.txt` + climbs},
		{in: "logs/../../etc/passwd", err: `task.grading.test_execution.reward_file: "logs/../../etc/passwd` + climbs},
		// path.Clean would keep this one inside; it is refused all the same: the
		// author meant to climb.
		{in: "/../etc/passwd", err: `task.grading.test_execution.reward_file: "/../etc/passwd` + climbs},
		{in: "logs/..", err: `task.grading.test_execution.reward_file: "logs/..` + climbs},
		{in: "/", err: `task.grading.test_execution.reward_file: "/" names a directory, not a file`},
		{in: ".", err: `task.grading.test_execution.reward_file: "." names a directory, not a file`},
		{in: "logs/verifier/", err: `task.grading.test_execution.reward_file: "logs/verifier/" names a directory, not a file`},
		{in: "a\x00b", err: `task.grading.test_execution.reward_file: "a\x00b" contains a NUL byte`},
	} {
		got, err := sandboxRewardPath(c.in)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("sandboxRewardPath(%q) = %q, %v\nwant the error %s", c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("sandboxRewardPath(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

// Whatever reward_file says, an accepted name stays inside the sandbox and names
// a file in it; the seeds run as regression cases.
func FuzzSandboxRewardPath(f *testing.F) {
	for _, s := range []string{"", "/logs/verifier/reward.txt", "../x", "a/../../b", "/", ".", "a/", "..", "...", "a\x00", `..\x`, "//a//b/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		rel, err := sandboxRewardPath(name)
		if err != nil {
			if !strings.HasPrefix(err.Error(), rewardFileKey+": ") {
				t.Fatalf("error %q does not name %s", err, rewardFileKey)
			}
			return
		}
		if name == "" {
			if rel != "" {
				t.Fatalf("no reward file resolved to %q", rel)
			}
			return
		}
		if rel == "" || rel == "." || path.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, "../") || path.Clean(rel) != rel {
			t.Fatalf("sandboxRewardPath(%q) = %q: not a clean file name inside the sandbox", name, rel)
		}
		root := "/sandbox"
		if j := path.Join(root, rel); !strings.HasPrefix(j, root+"/") {
			t.Fatalf("sandboxRewardPath(%q) = %q joins to %q, outside %s", name, rel, j, root)
		}
	})
}

func TestCheckTestExecution(t *testing.T) {
	spec := func(reward string) *task.TrialSpec {
		return &task.TrialSpec{Task: &task.TaskDescription{Grading: &task.GradingConfig{
			GradingMethod: task.GradingTestExecution,
			TestExecution: &task.TestExecution{Command: []string{"true"}, RewardFile: reward},
		}}}
	}
	if err := CheckTestExecution(spec("/logs/verifier/reward.txt")); err != nil {
		t.Errorf("upstream's reward_file refused: %v", err)
	}
	if err := CheckTestExecution(&task.TrialSpec{Task: &task.TaskDescription{}}); err != nil {
		t.Errorf("a task without grading refused: %v", err)
	}
	err := CheckTestExecution(spec("../../etc/shadow"))
	if err == nil || !strings.HasPrefix(err.Error(), `task.grading.test_execution.reward_file: "../../etc/shadow" leaves the verifier's sandbox`) {
		t.Errorf("CheckTestExecution(../../etc/shadow) = %v", err)
	}
}

func TestTestFiles(t *testing.T) {
	registered := map[string]string{
		"tests/run.sh": "", "tests/sub/data.json": "", "./tests/x.py": "",
		"run-tests.sh": "", "verify/check.sh": "", "src/main.py": "", "README.md": "", "tests": "",
	}
	for _, c := range []struct {
		name     string
		reg      map[string]string
		argv     []string
		files    []string
		replaced bool
	}{
		{"tests/ and the named scripts", registered, []string{"bash", "run-tests.sh", "./verify/check.sh", "/bin/sh", "-c"},
			[]string{"run-tests.sh", "tests/run.sh", "tests/sub/data.json", "tests/x.py", "verify/check.sh"}, true},
		{"nothing registered", nil, []string{"sh", "tests/run.sh"}, nil, false},
		{"no tests/, an inline script", map[string]string{"answer.txt": "", "src/main.py": ""}, []string{"sh", "-c", "grep 42 answer.txt"}, nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			files, replaced := testFiles(c.reg, c.argv)
			if !reflect.DeepEqual(files, c.files) || replaced != c.replaced {
				t.Errorf("testFiles = %q, %v; want %q, %v", files, replaced, c.files, c.replaced)
			}
		})
	}
}

// The sandbox is the agent's files with the task's test files as registered: an
// agent's symlinks are copied as links and never followed by the runner, neither
// to lay the tests nor to prepare the reward file, and a FIFO does not hang it.
func TestNewSandboxNeverFollowsTheAgentsSymlinks(t *testing.T) {
	work, site, outside := t.TempDir(), t.TempDir(), t.TempDir()
	td := &task.TaskDescription{InitialState: &task.InitialState{Filesystem: map[string]string{
		"tests/run.sh": "the task's run.sh", "check.sh": "the task's check.sh", "src/main.py": "print('bug')",
	}}}
	writeFile(t, filepath.Join(work, "src", "main.py"), "print('fixed')")
	writeFile(t, filepath.Join(work, "bin", "tool"), "#!/bin/sh\n")
	if err := os.Chmod(filepath.Join(work, "bin", "tool"), 0o750); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(outside, "victim"), "keep me")
	// tests -> outside, logs -> outside, check.sh -> outside/victim.
	for link, target := range map[string]string{"tests": outside, "logs": outside, "check.sh": filepath.Join(outside, "victim"), "ans": "src/main.py"} {
		if err := os.Symlink(target, filepath.Join(work, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(work, "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}

	done := make(chan struct{})
	var sb *sandbox
	var err error
	go func() {
		defer close(done)
		sb, err = newSandbox(VerifierSite{Dir: site}, work, td, []string{"sh", "check.sh"}, "logs/verifier/reward.txt")
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("newSandbox hangs")
	}
	if err != nil {
		t.Fatal(err)
	}
	if rel, rerr := filepath.Rel(site, sb.dir); rerr != nil || strings.Contains(rel, "..") {
		t.Fatalf("sandbox %s is not under the site %s", sb.dir, site)
	}
	read := func(rel string) string {
		b, err := sb.root.ReadFile(rel)
		if err != nil {
			return "error: " + err.Error()
		}
		return string(b)
	}
	for rel, want := range map[string]string{
		"tests/run.sh": "the task's run.sh", "check.sh": "the task's check.sh",
		"src/main.py": "print('fixed')", "ans": "print('fixed')",
	} {
		if got := read(rel); got != want {
			t.Errorf("sandbox %s = %q, want %q", rel, got, want)
		}
	}
	for _, rel := range []string{"tests", "logs", "logs/verifier"} {
		if fi, err := sb.root.Lstat(rel); err != nil || !fi.IsDir() {
			t.Errorf("sandbox %s is not a real directory: %v %v", rel, fi, err)
		}
	}
	if target, err := sb.root.Readlink("ans"); err != nil || target != "src/main.py" {
		t.Errorf("the agent's symlink ans -> %q %v, want it copied as a link", target, err)
	}
	if fi, err := sb.root.Stat("bin/tool"); err != nil || fi.Mode().Perm() != 0o750 {
		t.Errorf("bin/tool mode %v %v, want the agent's 0750", fi, err)
	}
	if _, err := sb.root.Lstat("pipe"); err == nil {
		t.Error("the agent's FIFO was copied")
	}
	ents, _ := os.ReadDir(outside)
	if len(ents) != 1 || ents[0].Name() != "victim" {
		t.Errorf("outside the trial now holds %v", ents)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "victim")); string(b) != "keep me" {
		t.Errorf("outside/victim = %q", b)
	}
	// The agent's own files are untouched by building the sandbox.
	if target, err := os.Readlink(filepath.Join(work, "tests")); err != nil || target != outside {
		t.Errorf("the agent's tests link became %q %v", target, err)
	}
	sb.remove()
	if _, err := os.Stat(sb.dir); !os.IsNotExist(err) {
		t.Errorf("the sandbox is left after remove: %v", err)
	}
}

// A reward file the verifier made a symlink out of the sandbox is not followed:
// the grade fails naming it rather than reading someone else's file.
func TestRewardSymlinkOutOfTheSandboxIsNotRead(t *testing.T) {
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "secret"), "1")
	te := task.TestExecution{Command: sh(`mkdir -p logs && ln -s ` + strconv.Quote(filepath.Join(outside, "secret")) + ` logs/reward.txt`), RewardFile: "logs/reward.txt"}
	env := testExecEnv(t, &te, nil)
	_, err := New().Grade(context.Background(), env, Request{TerminationReason: "agent_done"})
	if err == nil || !strings.HasPrefix(err.Error(), "Grading error: test_execution: open the reward file logs/reward.txt in the verifier's sandbox: ") {
		t.Fatalf("Grade = %v, want the reward file refused", err)
	}
}

// The verifier's verdict is final when its main process exits: a background child
// holding the output pipe neither delays nor loses it, and is killed.
func TestVerifierBackgroundChildDoesNotHoldTheGrade(t *testing.T) {
	// The child's pid comes back in the output: the verifier writes nothing
	// outside its sandbox.
	te := task.TestExecution{Command: sh(`sleep 600 & echo "child $!"; echo done; echo 0.5 > reward.txt`), RewardFile: "reward.txt"}
	env := testExecEnv(t, &te, nil)
	start := time.Now()
	g, err := New().Grade(context.Background(), env, Request{TerminationReason: "agent_done"})
	if err != nil {
		t.Fatalf("Grade: %v", err)
	}
	if d := time.Since(start); d > verifierDrainGrace+3*time.Second {
		t.Errorf("grading took %s", d)
	}
	m := regexp.MustCompile(`^Test execution: score=0\.5 \(reward 0\.5 from reward\.txt, verifier exit code 0\); output tail: "child (\d+)\\ndone"$`).FindStringSubmatch(g.GetReasons())
	if g.GetScore() != 0.5 || m == nil {
		t.Fatalf("grade = %v, want score 0.5 and the output tail \"child <pid>\\ndone\"", g)
	}
	pid, _ := strconv.Atoi(m[1])
	if pid <= 0 || processRuns(pid) {
		t.Errorf("the verifier's child %d still runs", pid)
	}
}

func processRuns(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

// The verifier runs in the sandbox, not in the agent's files: what it writes
// there does not reach the agent's files, and the sandbox is gone after.
func TestVerifierRunsInTheSandbox(t *testing.T) {
	te := task.TestExecution{Command: sh(`test "$PWD" = "$HOME" && test "$TEST_DIR" = "$PWD/tests" && test "$REWARD_FILE" = "$PWD/logs/verifier/reward.txt" && echo scribble > answer.txt && echo 1 > "$REWARD_FILE"`),
		RewardFile: "/logs/verifier/reward.txt"}
	env := testExecEnv(t, &te, nil)
	writeFile(t, filepath.Join(env.workDir, "answer.txt"), "42")
	g, err := New().Grade(context.Background(), env, Request{TerminationReason: "agent_done"})
	if err != nil {
		t.Fatalf("Grade: %v", err)
	}
	if g.GetScore() != 1 {
		t.Errorf("grade = %v", g)
	}
	if b, _ := os.ReadFile(filepath.Join(env.workDir, "answer.txt")); string(b) != "42" {
		t.Errorf("the agent's answer.txt = %q after grading", b)
	}
	if ents, _ := os.ReadDir(env.site.Dir); len(ents) != 0 {
		t.Errorf("the verifier's site holds %v after grading", ents)
	}
}
