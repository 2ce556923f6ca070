package runner_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"tolokaforge.io/operator/runner"
	"tolokaforge.io/operator/runner/proc"
)

// A tool that leaves its process group (a double fork into a new session
// with setsid) still dies with its trial: CleanupTrial finds it by the
// trial's environment entry, kills it and, as subreaper, reaps it.
func TestCleanupKillsDetachedDescendants(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid(1) here")
	}
	scratch := t.TempDir()
	h := startRunner(t, nil, withToolRW(scratch))
	pidfile := filepath.Join(scratch, "detached")
	script := `(setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo $! > "$DETACHED_PIDFILE"); exec "$SELF" mcp testkit`
	tl := tool("echo")
	tl["source"] = obj{"toolset": "testkit", "module_path": "", "class_name": "echo", "invocation_style": "mcp_server",
		"extra": obj{"command": []any{"sh", "-c", script}, "env": obj{"DETACHED_PIDFILE": pidfile, "SELF": selfBin}}}
	h.mustRegister(t, "detach", baseTask([]any{tl}, nil, nil))
	if out := h.mustExec(t, "detach", call{tool: "echo", args: `{"text":"hi"}`, callID: "c1"}); out != "hi" {
		t.Fatalf("echo = %q", out)
	}
	raw, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil || !alive(pid) {
		t.Fatalf("detached sleep %q is not running (%v)", raw, err)
	}
	stat, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	t.Logf("detached process before cleanup: %s", strings.TrimSpace(string(stat)))

	start := time.Now()
	if resp := h.cleanup(t, "detach"); !resp.GetSuccess() {
		t.Fatalf("CleanupTrial: %s", resp.GetError())
	}
	// Gone when CleanupTrial returns: not merely signalled, not a zombie.
	if alive(pid) {
		t.Fatalf("detached pid %d survived CleanupTrial", pid)
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
		stat, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		t.Fatalf("pid %d left behind after CleanupTrial: %s", pid, stat)
	}
	t.Logf("CleanupTrial took %s", time.Since(start))
}

// A tool that allocates past its RLIMIT_AS fails, and the error names the
// limits it ran under beside what the tool said.
func TestToolOverAddressSpaceLimitFailsClearly(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 here")
	}
	limits := proc.Limits{AddressSpace: 256 << 20, Processes: 0, OpenFiles: 256}
	h := startRunner(t, nil, func(c *runner.Config) { c.ToolLimits = limits })
	tl := tool("hog")
	tl["source"] = obj{"toolset": "hog", "module_path": "", "class_name": "hog", "invocation_style": "mcp_server",
		"extra": obj{"command": []any{py, "-c", "b = bytearray(1 << 30)"}}}
	resp := h.register(t, "hog", baseTask([]any{tl}, nil, nil))
	if resp.GetSuccess() {
		t.Fatal("a tool allocating 1 GiB under a 256 MiB RLIMIT_AS started")
	}
	for _, want := range []string{"MemoryError", "RLIMIT_AS=268435456"} {
		if !strings.Contains(resp.GetError(), want) {
			t.Errorf("error %q does not say %q", resp.GetError(), want)
		}
	}
	assertNothingLeft(t, h, "hog")
}
