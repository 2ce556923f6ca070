package runner_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner"
	"tolokaforge.io/operator/runner/proc"
)

// asRunnerBinary is the binary's runner path (cmd/tolokaforge/cli.Main): scrub the environment, then Main.
func asRunnerBinary(args []string) int {
	if err := proc.ScrubEnvironment(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := runner.Main(ctx, args); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// A tool that reads the runner's environment (/proc/1/environ in a pod: the
// runner is PID 1; here its parent), its own, and PID 1's finds no provider
// key, although the runner was started with one in its environment.
func TestToolsFindNoProviderKeyInAnyEnviron(t *testing.T) {
	const fakeKey = "sk-fake-provider-key-that-must-not-leak"
	db := startDB(t)
	dir := t.TempDir()
	// A free port for the subprocess (it cannot tell us which it picked).
	addr := freeAddr(t)

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The parent's whole environment plus provider keys, as a careless pod
	// spec or a shell would pass them.
	c, _ := startRunnerProcess(t, addr, []string{self, "runner", "--listen=" + addr, "--db-service-url=" + db.url,
		"--work-dir=" + filepath.Join(dir, "work"), "--log-level=error", "--drain-timeout=1s"},
		"OPENAI_API_KEY="+fakeKey, "ANTHROPIC_API_KEY="+fakeKey, "JUDGE_KEY="+fakeKey)

	// The tool's parent is its supervisor, the runner the supervisor's
	// parent. It writes where it may (its trial's files folder) and execs
	// what it may: the runner's binary, this test binary, which serves
	// `mcp testkit`.
	script := `pp=$(cut -d' ' -f4 /proc/$PPID/stat); for p in 1 $pp self; do echo "== $p"; tr '\0' '\n' < /proc/$p/environ 2>&1; done > "$TOLOKAFORGE_FILES_DIR/environs"; exec "$SELF" mcp testkit`
	tl := tool("echo")
	tl["source"] = obj{"toolset": "testkit", "module_path": "", "class_name": "echo", "invocation_style": "mcp_server",
		"extra": obj{"command": []any{"sh", "-c", script}, "env": obj{"SELF": self}}}
	spec := specJSON(t, "env", baseTask([]any{tl}, nil, nil))
	resp, err := c.RegisterTrial(ctxT(t), &runnerpb.RegisterTrialRequest{TrialId: "env", TrialSpecJson: spec, EngineProtocolVersion: task.EngineProtocolVersion})
	if err != nil || !resp.GetSuccess() {
		t.Fatalf("RegisterTrial: %v %s", err, resp.GetError())
	}
	outs, _ := filepath.Glob(filepath.Join(dir, "work", "trial-env-*", "files", "environs"))
	if len(outs) != 1 {
		t.Fatalf("the tool's environ dump: %v, want one file", outs)
	}
	raw, err := os.ReadFile(outs[0])
	if err != nil {
		t.Fatal(err)
	}
	got := string(raw)
	if strings.Contains(got, fakeKey) {
		t.Fatalf("a tool found the provider key:\n%s", got)
	}
	// The reads worked: the runner's environment is unreadable (it is not
	// dumpable; a root with capabilities still reads it, scrubbed to what
	// it needs), and the tool's own is the minimal one.
	sections := strings.Split(got, "== ")
	if len(sections) != 4 || !(strings.Contains(sections[2], "PATH=") || strings.Contains(sections[2], "Permission denied")) ||
		!strings.Contains(sections[3], "TOLOKAFORGE_TRIAL_DIR=") {
		t.Fatalf("environ dump is not what the test expects:\n%s", got)
	}
	for _, k := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "JUDGE_KEY"} {
		if strings.Contains(sections[2], k+"=") || strings.Contains(sections[3], k+"=") {
			t.Errorf("%s is set (empty or not) in the runner's or the tool's environment", k)
		}
	}
}
