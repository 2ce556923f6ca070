package envtools_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner/tools/envtools"
)

func TestRegisterWithoutEnvironmentURLIsRefused(t *testing.T) {
	w := newWorld(t)
	resp, err := w.runner.RegisterTrial(ctxT(t), &runnerpb.RegisterTrialRequest{
		TrialId: "t-nourl", TrialSpecJson: w.spec(t, "t-nourl", w.terminalTask(taskOpts{testSh: "true"}), false),
		EngineProtocolVersion: task.EngineProtocolVersion,
	})
	if err != nil {
		t.Fatal(err)
	}
	msg := resp.GetError()
	if resp.GetSuccess() || !strings.Contains(msg, `"term-1"`) || !strings.Contains(msg, "environment_url") || !strings.Contains(msg, "cluster") {
		t.Fatalf("RegisterTrial without environment_url: success=%v %q", resp.GetSuccess(), msg)
	}
}

func TestBash(t *testing.T) {
	w := newWorld(t)
	w.register(t, "bash", taskOpts{testSh: "true"})
	big := strings.Repeat("x", 40<<10)
	for _, tc := range []struct {
		name    string
		args    map[string]any
		want    []string
		notWant []string
	}{
		{"exit code and both streams", map[string]any{"command": "echo out; echo err >&2; exit 3"},
			[]string{"exit code 3", "--- stdout ---\nout", "--- stderr ---\nerr"}, nil},
		{"workdir and env", map[string]any{"command": "pwd; echo $TASK_MARK"},
			[]string{"exit code 0", w.work, "from-env"}, nil},
		{"head and tail kept", map[string]any{"command": "echo HEAD; printf '" + big + "'; echo; echo TAIL"},
			[]string{"HEAD", "TAIL", "bytes cut ...]"}, []string{big}},
		{"timeout", map[string]any{"command": "sleep 30", "timeout_s": 1},
			[]string{"timed out after 1 s"}, nil},
		{"killed by a signal", map[string]any{"command": "kill -9 $$"},
			[]string{"killed by SIGKILL"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			out := w.mustCall(t, "bash", "bash", tc.args)
			for _, s := range tc.want {
				if !strings.Contains(out, s) {
					t.Errorf("output lacks %q:\n%.600s", s, out)
				}
			}
			for _, s := range tc.notWant {
				if strings.Contains(out, s) {
					t.Errorf("output holds %.40q... uncut", s)
				}
			}
			if len(out) > 2*envtools.ShownStreamBytes+1024 {
				t.Errorf("output is %d bytes, over the cap", len(out))
			}
			if took := time.Since(start); took > 15*time.Second {
				t.Errorf("took %s", took)
			}
		})
	}
}

func TestFilesGoThroughTheEnvironment(t *testing.T) {
	w := newWorld(t)
	w.register(t, "files", taskOpts{testSh: "true"})
	out := w.mustCall(t, "files", "write_file", map[string]any{"path": "sub/dir/a.txt", "content": "hello\n"})
	if !strings.Contains(out, "wrote 6 bytes") {
		t.Fatalf("write_file: %q", out)
	}
	onDisk, err := os.ReadFile(filepath.Join(w.work, "sub/dir/a.txt"))
	if err != nil || string(onDisk) != "hello\n" {
		t.Fatalf("the environment's file: %q, %v", onDisk, err)
	}
	// Not in the runner's own trial directory.
	_ = filepath.WalkDir(w.runWork, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "a.txt" {
			t.Errorf("write_file landed in the runner's directory: %s", p)
		}
		return nil
	})
	if got := w.mustCall(t, "files", "read_file", map[string]any{"path": "sub/dir/a.txt"}); got != "hello\n" {
		t.Errorf("read_file relative: %q", got)
	}
	if got := w.mustCall(t, "files", "read_file", map[string]any{"path": filepath.Join(w.work, "sub/dir/a.txt")}); got != "hello\n" {
		t.Errorf("read_file absolute: %q", got)
	}
	if got := w.mustCall(t, "files", "list_dir", map[string]any{"path": "sub/dir"}); !strings.Contains(got, "a.txt\t6 bytes") {
		t.Errorf("list_dir: %q", got)
	}
	if got := w.mustCall(t, "files", "list_dir", map[string]any{}); !strings.Contains(got, "sub/") {
		t.Errorf("list_dir of the workdir: %q", got)
	}
	// A big file is cut with a note, within the runner's bound on a tool's
	// result (1 MiB) so it is not refused; invalid UTF-8 (each byte shown
	// as a three-byte U+FFFD) too.
	for name, b := range map[string]byte{"big": 'y', "binary": 0xff} {
		if err := os.WriteFile(filepath.Join(w.work, name), bytes.Repeat([]byte{b}, envtools.MaxReadBytes+10), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := w.mustCall(t, "files", "read_file", map[string]any{"path": name}); !strings.Contains(got, "[truncated: ") || len(got) > envtools.MaxReadBytes {
			t.Errorf("read_file of %s: %d bytes, ends %q; want at most %d with a note", name, len(got), got[max(0, len(got)-100):], envtools.MaxReadBytes)
		}
	}
	// A missing file is the tool's answer, not the environment's failure.
	resp := w.call(t, "files", "read_file", map[string]any{"path": "nope"})
	if resp.GetStatus() != runnerpb.ExecutionStatus_EXECUTION_STATUS_ERROR || task.IsEnvironmentError(resp.GetErrorMessage()) {
		t.Errorf("read_file of a missing file: %s %q", resp.GetStatus(), resp.GetErrorMessage())
	}
}

func TestToolsRefusedOnceGradingBegan(t *testing.T) {
	w := newWorld(t)
	w.register(t, "over", taskOpts{testSh: `echo 1 > "$LOGS/reward.txt"`})
	w.mustCall(t, "over", "bash", map[string]any{"command": "true"})
	if g := w.mustGrade(t, "over"); g.GetScore() != 1 {
		t.Fatalf("grade: %v", g)
	}
	for _, tool := range []string{"bash", "write_file"} {
		resp := w.call(t, "over", tool, map[string]any{"command": "touch x", "path": "x", "content": ""})
		if resp.GetStatus() != runnerpb.ExecutionStatus_EXECUTION_STATUS_ERROR || !strings.Contains(resp.GetErrorMessage(), "the agent's turn is over") {
			t.Errorf("%s after grading: %s %q", tool, resp.GetStatus(), resp.GetErrorMessage())
		}
	}
	if _, err := os.Stat(filepath.Join(w.work, "x")); err == nil {
		t.Error("a tool ran after grading began")
	}
	rr, err := w.runner.ResetTrial(ctxT(t), &runnerpb.ResetTrialRequest{TrialId: "over"})
	if err != nil || rr.GetSuccess() || !strings.Contains(rr.GetError(), "cannot be reset") {
		t.Errorf("ResetTrial: %v %v", rr, err)
	}
}

func TestVerifier(t *testing.T) {
	pytestOut := func(lines ...string) string {
		return "cat <<'EOF'\n============ short test summary info ============\n" + strings.Join(lines, "\n") + "\nEOF\n"
	}
	for _, tc := range []struct {
		name  string
		opts  taskOpts
		score float64
		want  []string // in the reasons
		infra string   // a GradeTrial error with task.EnvironmentErrorPrefix holding this
	}{
		{name: "reward.txt", opts: taskOpts{testSh: `echo hi; echo 0.75 > "$LOGS/reward.txt"`}, score: 0.75,
			want: []string{"reward 0.75", "reward.txt", `test output: "hi"`}},
		{name: "reward.json named reward", opts: taskOpts{testSh: `echo '{"reward": 1, "style": 0.5}' > "$LOGS/reward.json"`}, score: 1,
			want: []string{"style=0.5"}},
		{name: "reward.json mean", opts: taskOpts{testSh: `echo '{"a": 1, "b": 0.5}' > "$LOGS/reward.json"; echo 0 > "$LOGS/reward.txt"`}, score: 0.75,
			want: []string{"mean of 2", "a=1", "b=0.5"}},
		{name: "tests run from the workdir with a clean env", opts: taskOpts{testSh: `[ "$PWD" = "$W" ] && [ -z "$TASK_MARK" ] && [ -x "$TESTS/test.sh" ] && [ -f "$TESTS/helper.txt" ] && echo 1 > "$LOGS/reward.txt"`,
			files: map[string]string{"tests/helper.txt": "h"}}, score: 1},
		{name: "a file by its base name", opts: taskOpts{testSh: `bash "$TESTS/run-tests.sh"`, files: map[string]string{"x/run-tests.sh": `echo 1 > "$LOGS/reward.txt"`},
			tests: []string{"tests", "x/run-tests.sh"}}, score: 1},
		{name: "pytest all passed", opts: taskOpts{parser: "pytest", testSh: pytestOut("PASSED tests/test_a.py::test_one", "PASSED tests/test_a.py::test_two")}, score: 1,
			want: []string{"2 of 2 tests passed", "tests/test_a.py::test_one=PASSED"}},
		{name: "pytest one failed", opts: taskOpts{parser: "pytest", testSh: pytestOut("PASSED tests/test_a.py::test_one", "FAILED tests/test_a.py::test_two - assert 1 == 2")}, score: 0,
			want: []string{"1 of 2 tests passed", "tests/test_a.py::test_two=FAILED"}},
		{name: "pytest no tests", opts: taskOpts{parser: "pytest", testSh: "echo nothing"}, score: 0, want: []string{"no test results"}},
		{name: "timeout scores 0", opts: taskOpts{testSh: `echo 1 > "$LOGS/reward.txt"; sleep 30`, timeoutS: 1}, score: 0,
			want: []string{"the tests timed out after 1 s"}},
		{name: "missing reward", opts: taskOpts{testSh: "echo no reward"}, infra: "wrote neither reward.json nor reward.txt"},
		{name: "reward out of range", opts: taskOpts{testSh: `echo 1.5 > "$LOGS/reward.txt"`}, infra: "not a number in [0, 1]"},
		{name: "reward.json garbage", opts: taskOpts{testSh: `echo '{"a": "yes"}' > "$LOGS/reward.json"`}, infra: "not a number in [0, 1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			tc.opts.testSh = "W=" + w.work + "\n" + tc.opts.testSh
			w.register(t, "v", tc.opts)
			resp := w.grade(t, "v")
			if tc.infra != "" {
				if resp.GetSuccess() || !task.IsEnvironmentError(resp.GetError()) || !strings.Contains(resp.GetError(), tc.infra) {
					t.Fatalf("want an environment error holding %q, got success=%v %q (grade %v)", tc.infra, resp.GetSuccess(), resp.GetError(), resp.GetGrade())
				}
				return
			}
			if !resp.GetSuccess() {
				t.Fatalf("GradeTrial: %s", resp.GetError())
			}
			g := resp.GetGrade()
			if g.GetScore() != tc.score || g.GetBinaryPass() != (tc.score >= 1) {
				t.Errorf("score %v pass %v, want %v: %s", g.GetScore(), g.GetBinaryPass(), tc.score, g.GetReasons())
			}
			for _, s := range tc.want {
				if !strings.Contains(g.GetReasons(), s) {
					t.Errorf("reasons lack %q: %s", s, g.GetReasons())
				}
			}
		})
	}
}

// The agent tries to forge its grade; the real test.sh writes 0 unless it
// finds the agent's conftest.py, so every forgery must score 0.
func TestForgingScoresZero(t *testing.T) {
	const testSh = `echo 0 > "$LOGS/reward.txt"
[ -e "$TESTS/conftest.py" ] && echo 1 > "$LOGS/reward.txt"
sleep 0.3
exit 0
`
	for _, tc := range []struct {
		name  string
		agent func(w *world) []map[string]any // bash commands or writes, in order
		check func(t *testing.T, w *world)
	}{
		{name: "planted reward.txt", agent: func(w *world) []map[string]any {
			return []map[string]any{{"command": "mkdir -p " + w.logs + " && echo 1 > " + w.logs + "/reward.txt && chmod 444 " + w.logs + "/reward.txt"}}
		}},
		{name: "planted reward.json", agent: func(w *world) []map[string]any {
			return []map[string]any{{"path": w.logs + "/reward.json", "content": `{"reward": 1}`}}
		}},
		{name: "verifier directory a symbolic link", agent: func(w *world) []map[string]any {
			return []map[string]any{{"command": "mkdir -p " + w.root + "/fake " + filepath.Dir(w.logs) + " && echo 1 > " + w.root + "/fake/reward.txt && ln -s " + w.root + "/fake " + w.logs}}
		}, check: func(t *testing.T, w *world) {
			if b, _ := os.ReadFile(filepath.Join(w.root, "fake/reward.txt")); string(b) != "1\n" {
				t.Errorf("the link's target was touched: %q", b)
			}
		}},
		{name: "rewritten test.sh", agent: func(w *world) []map[string]any {
			return []map[string]any{{"path": w.tests + "/test.sh", "content": `echo 1 > "$LOGS/reward.txt"`}}
		}},
		{name: "planted conftest.py", agent: func(w *world) []map[string]any {
			return []map[string]any{{"path": w.tests + "/conftest.py", "content": "import os\n"}}
		}, check: func(t *testing.T, w *world) {
			if _, err := os.Stat(filepath.Join(w.tests, "conftest.py")); err == nil {
				t.Error("conftest.py survived the upload")
			}
		}},
		{name: "background rewriter", agent: func(w *world) []map[string]any {
			return []map[string]any{{"command": "mkdir -p " + w.logs + "; nohup bash -c 'while true; do echo 1 > " + w.logs + "/reward.txt 2>/dev/null; sleep 0.01; done' >/dev/null 2>&1 &"}}
		}},
		{name: "detached background rewriter", agent: func(w *world) []map[string]any {
			return []map[string]any{{"command": "mkdir -p " + w.logs + "; setsid bash -c 'trap \"\" TERM; while true; do echo 1 > " + w.logs + "/reward.txt 2>/dev/null; sleep 0.01; done' </dev/null >/dev/null 2>&1 &"}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.register(t, "f", taskOpts{testSh: testSh})
			for _, a := range tc.agent(w) {
				tool := "bash"
				if _, ok := a["path"]; ok {
					tool = "write_file"
				}
				w.mustCall(t, "f", tool, a)
			}
			time.Sleep(50 * time.Millisecond)
			g := w.mustGrade(t, "f")
			if g.GetScore() != 0 || g.GetBinaryPass() {
				t.Errorf("forged grade: score %v: %s", g.GetScore(), g.GetReasons())
			}
			if tc.check != nil {
				tc.check(t, w)
			}
		})
	}
}

// keep_agent_processes keeps a server the agent started while the tests run.
func TestKeepAgentProcesses(t *testing.T) {
	const testSh = `if kill -0 "$(cat "$W/server.pid")" 2>/dev/null; then echo 1; else echo 0; fi > "$LOGS/reward.txt"`
	for _, keep := range []bool{true, false} {
		t.Run(map[bool]string{true: "kept", false: "killed"}[keep], func(t *testing.T) {
			w := newWorld(t)
			w.register(t, "k", taskOpts{testSh: "W=" + w.work + "\n" + testSh, keep: keep})
			w.mustCall(t, "k", "bash", map[string]any{"command": "nohup sleep 300 >/dev/null 2>&1 & echo $! > server.pid"})
			g := w.mustGrade(t, "k")
			want := 0.0
			if keep {
				want = 1
				if !strings.Contains(g.GetReasons(), "keep_agent_processes") {
					t.Errorf("reasons do not say the agent's processes were kept: %s", g.GetReasons())
				}
			}
			if g.GetScore() != want {
				t.Errorf("score %v, want %v: %s", g.GetScore(), want, g.GetReasons())
			}
		})
	}
}

// An exec agent that stops mid-trial: the tool call is an ERROR naming the
// environment, and the grade an environment (infrastructure) error.
func TestExecAgentStopped(t *testing.T) {
	w := newWorld(t)
	w.register(t, "dead", taskOpts{testSh: `echo 1 > "$LOGS/reward.txt"`})
	w.mustCall(t, "dead", "bash", map[string]any{"command": "true"})
	w.stopAgt()
	resp := w.call(t, "dead", "bash", map[string]any{"command": "true"})
	if resp.GetStatus() != runnerpb.ExecutionStatus_EXECUTION_STATUS_ERROR || !task.IsEnvironmentError(resp.GetErrorMessage()) || !strings.Contains(resp.GetErrorMessage(), w.agentAt) {
		t.Errorf("bash with the exec agent gone: %s %q", resp.GetStatus(), resp.GetErrorMessage())
	}
	gr := w.grade(t, "dead")
	if gr.GetSuccess() || !task.IsEnvironmentError(gr.GetError()) {
		t.Errorf("grade with the exec agent gone: success=%v %q", gr.GetSuccess(), gr.GetError())
	}
}

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		name  string
		data  string
		total int64
		limit int
		want  string
	}{
		{"short", "abc", 3, 10, "abc"},
		{"cut", "0123456789", 10, 4, "01\n[... 6 bytes cut ...]\n89"},
		{"already cut upstream", "01ab", 100, 4, "01\n[... 96 bytes cut ...]\nab"},
		{"rune boundary", "é" + "xx" + "é", 6, 3, "\n[... 4 bytes cut ...]\né"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := envtools.Cut([]byte(tc.data), tc.total, tc.limit); got != tc.want {
				t.Errorf("Cut(%q, %d, %d) = %q, want %q", tc.data, tc.total, tc.limit, got, tc.want)
			}
		})
	}
}

// The model sees each stream of a bash call cut to ShownStreamBytes; the
// whole output (each stream up to KeptStreamBytes) travels beside the
// response in the ToolOutputTrailer, which the host keeps as the call's
// artifact. Other tools send none.
func TestBashWholeOutputTrailer(t *testing.T) {
	w := newWorld(t)
	w.register(t, "whole", taskOpts{testSh: "true"})
	n := 0
	call := func(tool string, args obj) (*runnerpb.ExecuteToolResponse, []byte) {
		t.Helper()
		b, _ := json.Marshal(args)
		var md metadata.MD
		n++
		resp, err := w.runner.ExecuteTool(ctxT(t), &runnerpb.ExecuteToolRequest{TrialId: "whole", ToolName: tool, ArgumentsJson: string(b), CallId: fmt.Sprintf("whole-%d", n)}, grpc.Trailer(&md))
		if err != nil || resp.GetStatus() != runnerpb.ExecutionStatus_EXECUTION_STATUS_SUCCESS {
			t.Fatalf("%s: %v %v", tool, resp, err)
		}
		return resp, runnerpb.ToolOutputFromMD(md)
	}
	// 200 KiB of numbered lines: the model's view is cut, the artifact not.
	resp, whole := call("bash", obj{"command": "seq 1 40000; echo ERR >&2"})
	if !strings.Contains(resp.GetOutput(), "bytes cut ...]") || strings.Contains(resp.GetOutput(), "\n20000\n") {
		t.Fatalf("the model's output is not cut:\n%.300s", resp.GetOutput())
	}
	text := string(whole)
	if !strings.HasPrefix(text, "exit code 0\n--- stdout ---\n1\n2\n") || !strings.Contains(text, "\n20000\n") ||
		!strings.Contains(text, "\n40000\n\n--- stderr ---\nERR") || strings.Contains(text, "bytes cut") {
		t.Fatalf("the whole output (%d bytes) is not whole:\n%.200s ... %.200s", len(whole), text, text[max(0, len(text)-200):])
	}
	// Past KeptStreamBytes the artifact keeps the stream's head and tail.
	_, whole = call("bash", obj{"command": "head -c 7340032 /dev/zero | tr '\\0' 'y'"})
	if len(whole) > 2*envtools.KeptStreamBytes+1024 || !strings.Contains(string(whole), "bytes cut ...]") {
		t.Fatalf("a 7 MiB stream kept as %d bytes", len(whole))
	}
	if _, whole := call("list_dir", obj{}); whole != nil {
		t.Fatalf("list_dir sent %d bytes of whole output", len(whole))
	}
}

// The tests' whole output travels beside GradeTrial's response in the
// TestOutputTrailer (the host keeps it as tests-output.txt); the grade's
// reasons keep its head and tail only.
func TestGradeSendsTheTestsWholeOutput(t *testing.T) {
	w := newWorld(t)
	w.register(t, "testout", taskOpts{testSh: `seq 1 100000; echo TAIL-OF-TESTS; echo oops >&2; echo 1 > "$LOGS/reward.txt"`})
	var md metadata.MD
	resp, err := w.runner.GradeTrial(ctxT(t), &runnerpb.GradeTrialRequest{TrialId: "testout"}, grpc.Trailer(&md))
	if err != nil || !resp.GetSuccess() || resp.GetGrade().GetScore() != 1 {
		t.Fatalf("GradeTrial: %v %v", resp, err)
	}
	out := string(runnerpb.TestOutputFromMD(md))
	if !strings.HasPrefix(out, "--- stdout (") || !strings.Contains(out, "\n50000\n") || !strings.Contains(out, "TAIL-OF-TESTS\n\n--- stderr (5 bytes) ---\noops") {
		t.Fatalf("tests' output (%d bytes): %.120q ... %q", len(out), out, out[max(0, len(out)-120):])
	}
	if strings.Contains(resp.GetGrade().GetReasons(), "\n50000\n") {
		t.Fatal("the grade's reasons hold the whole output")
	}
}
