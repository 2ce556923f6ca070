package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// gone reports whether pid no longer runs. A zombie counts as gone: an orphaned
// grandchild is reaped by whatever init the container has, which may take its time.
// waitStopped waits until every thread of pid is stopped: SIGSTOP's group stop
// reaches each thread on its own, so a busy multi-threaded server can still answer
// a request for a moment after kill(2) returned.
func waitStopped(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
		stopped := len(tasks) > 0
		for _, f := range tasks {
			stat, err := os.ReadFile(f)
			i := strings.LastIndexByte(string(stat), ')')
			if err != nil || i < 0 || len(stat) <= i+2 || (stat[i+2] != 'T' && stat[i+2] != 't') {
				stopped = false
				break
			}
		}
		if stopped {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d did not stop within 5s of SIGSTOP", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// Format: pid (comm) state ...; comm may contain spaces, so split after ')'.
	i := strings.LastIndexByte(string(stat), ')')
	return i > 0 && len(stat) > i+2 && stat[i+2] == 'Z'
}

// waitGone polls until pid has gone or the deadline passes (a bound, not an
// assertion on how fast).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !gone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still running", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCloseKillsTheProcessGroup: the server's shell forks a long sleep (a helper
// that would outlive a plain kill of the leader) and then execs the shop. Close must
// take both down.
func TestCloseKillsTheProcessGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "grandchild.pid")
	s := startShop(t, func(c *Config) {
		c.Command = []string{"sh", "-c", `sleep 300 & echo $! > "$1"; exec "$0"`, shopServer, pidFile}
	})
	leader := s.PID()
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	grandchild, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	if gone(leader) || gone(grandchild) {
		t.Fatalf("leader %d or grandchild %d not running before Close", leader, grandchild)
	}
	if pgid, _ := syscall.Getpgid(grandchild); pgid != leader {
		t.Fatalf("grandchild's process group = %d, want the leader's %d", pgid, leader)
	}
	mustCall(t, s, "list_products", `{}`)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if !gone(leader) {
		t.Errorf("leader %d still running after Close returned", leader)
	}
	waitGone(t, grandchild)
}

// TestCloseKillsAServerIgnoringSIGTERM: a leader that ignores SIGTERM and stdin EOF
// is killed after KillGrace.
func TestCloseKillsAServerIgnoringSIGTERM(t *testing.T) {
	s := startShop(t, func(c *Config) {
		// The shell traps TERM and keeps running after the shop (its child) exits.
		c.Command = []string{"sh", "-c", `trap '' TERM; "$0"; sleep 300`, shopServer}
		c.KillGrace = 100 * time.Millisecond
	})
	leader := s.PID()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if !gone(leader) {
		t.Errorf("leader %d survived Close", leader)
	}
}

// TestTimeoutThenRestart: a wedged server (SIGSTOP) makes a call hit its deadline;
// Restart replaces the process, and after the state is pushed again calls work.
func TestTimeoutThenRestart(t *testing.T) {
	s := startShop(t, nil)
	ctx := testCtx(t)
	if err := s.SetState(ctx, initialTables(t)); err != nil {
		t.Fatal(err)
	}
	old := s.PID()
	if err := syscall.Kill(old, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitStopped(t, old)
	callCtx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, _, err := s.Call(callCtx, "list_products", nil)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Call on a stopped server: err = %v, want DeadlineExceeded", err)
	}
	if err := s.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if !gone(old) {
		t.Errorf("old server %d still running after Restart", old)
	}
	if s.PID() == old || s.PID() == 0 {
		t.Fatalf("PID after Restart = %d (old %d)", s.PID(), old)
	}
	got, err := s.GetState(ctx)
	if err != nil || stateString(t, got) != emptyState {
		t.Fatalf("state after Restart (err %v) =\n%s\nwant the new server's empty state", err, stateString(t, got))
	}
	if err := s.SetState(ctx, initialTables(t)); err != nil {
		t.Fatal(err)
	}
	if out := mustCall(t, s, "get_customer", `{"customer_id":"C-101"}`); !strings.Contains(out, `"balance": 300.0`) {
		t.Errorf("get_customer after Restart = %s", out)
	}
}

// TestCallAfterServerDiedIsAnError: a crash is a session failure (err), not a tool
// error, and Restart recovers.
func TestCallAfterServerDiedIsAnError(t *testing.T) {
	s := startShop(t, nil)
	pid := s.PID()
	syscall.Kill(pid, syscall.SIGKILL)
	waitGone(t, pid)
	_, isErr, err := s.Call(testCtx(t), "list_products", nil)
	if err == nil || isErr {
		t.Fatalf("Call on a dead server: isError=%v err=%v, want a session error", isErr, err)
	}
	if err := s.Restart(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	mustCall(t, s, "list_products", `{}`)
}

func TestStderrIsDrainedIntoTheLogger(t *testing.T) {
	logger, entries := newCapture()
	s := startShop(t, func(c *Config) {
		c.Logger = logger
		// A line longer than the bound and one without a final newline.
		c.Command = []string{"sh", "-c", `head -c 20000 /dev/zero | tr '\0' x >&2; echo >&2; echo "before exec" >&2; exec "$0"`, shopServer}
	})
	pid := s.PID()
	s.Close()
	lines := stderrLines(entries())
	want := []string{strings.Repeat("x", maxStderrLine), "before exec", "shop: serving MCP on stdio (products=0 customers=0 orders=0)"}
	if !slices.Equal(lines, want) {
		short := make([]string, len(lines))
		for i, l := range lines {
			short[i] = fmt.Sprintf("%.60s (len %d)", l, len(l))
		}
		t.Fatalf("stderr lines = %q", short)
	}
	for _, e := range entries() {
		if e.msg == "mcp server stderr" && e.values["pid"] != pid {
			t.Errorf("stderr entry without the server's pid: %v", e.values)
		}
		if e.msg == "mcp server stderr" && e.values["line"] == want[0] && e.values["truncated"] != true {
			t.Errorf("long line not marked truncated: %v", e.values["truncated"])
		}
	}
}

// TestChildEnvironmentIsMinimal: the runner's secrets do not reach the server; it
// sees PATH, HOME=Dir, TMPDIR, LANG and Config.Env only.
func TestChildEnvironmentIsMinimal(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-sentinel")
	t.Setenv("TOLOKAFORGE_SECRET", "sentinel-2")
	logger, entries := newCapture()
	dir := t.TempDir()
	s := startShop(t, func(c *Config) {
		c.Logger = logger
		c.Dir = dir
		c.Env = []string{"SHOP_EXTRA=1", "LANG=en_US.UTF-8"}
		c.Command = []string{"sh", "-c", `env >&2; pwd >&2; exec "$0"`, shopServer}
	})
	s.Close()
	env := map[string]string{}
	var pwd string
	for _, line := range stderrLines(entries()) {
		if strings.HasPrefix(line, "shop: ") {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = v
		} else if strings.HasPrefix(line, "/") {
			pwd = line
		}
		if strings.Contains(line, "sentinel") {
			t.Errorf("a secret of the runner's environment leaked: %q", line)
		}
	}
	if env["HOME"] != dir || env["TMPDIR"] != os.TempDir() || env["PATH"] != os.Getenv("PATH") || env["SHOP_EXTRA"] != "1" || env["LANG"] != "en_US.UTF-8" {
		t.Errorf("child env = %v", env)
	}
	allowed := map[string]bool{"PATH": true, "HOME": true, "TMPDIR": true, "LANG": true, "SHOP_EXTRA": true,
		"PWD": true, "OLDPWD": true, "SHLVL": true, "_": true} // the last four are set by sh itself
	for k := range env {
		if !allowed[k] {
			t.Errorf("unexpected variable %s in the child's environment", k)
		}
	}
	if pwd != dir {
		t.Errorf("child cwd = %q, want %q", pwd, dir)
	}
}

// TestSelfCommandRunsTheRunnerBinary: Command[0] "tolokaforge" is os.Executable()
// (here the test binary, whose TestMain serves `mcp shop`).
func TestSelfCommandRunsTheRunnerBinary(t *testing.T) {
	s := startShop(t, func(c *Config) { c.Command = []string{selfCommand, "mcp", "shop"} })
	if err := s.SetState(testCtx(t), initialTables(t)); err != nil {
		t.Fatal(err)
	}
	mustCall(t, s, "place_order", goldenPlaceOrder)
	mustCall(t, s, "confirm_payment", `{"order_id":"O-001"}`)
	got, err := s.GetState(testCtx(t))
	if err != nil || stateString(t, got) != goldenState {
		t.Fatalf("state (err %v) =\n%s", err, stateString(t, got))
	}
}

func TestStartErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	os.WriteFile(file, nil, 0o600)
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"nothing", Config{}, "mcpclient: config sets neither Command nor URL"},
		{"both", Config{Command: []string{"x"}, URL: "http://127.0.0.1:1/mcp", Dir: dir}, "mcpclient: config sets both Command and URL; set one"},
		{"no dir", Config{Command: []string{shopServer}}, "mcpclient: Dir is required for a stdio server (it is the server's cwd and HOME)"},
		{"dir is a file", Config{Command: []string{shopServer}, Dir: file}, fmt.Sprintf("mcpclient: Dir %q is not a directory", file)},
		{"missing dir", Config{Command: []string{shopServer}, Dir: filepath.Join(dir, "nope")}, "mcpclient: Dir: stat " + filepath.Join(dir, "nope") + ": no such file or directory"},
		{"bad env", Config{Command: []string{shopServer}, Dir: dir, Env: []string{"A=1", "sk-secret-without-key"}}, "mcpclient: Env[1] is not KEY=VALUE"},
		{"empty argv0", Config{Command: []string{""}, Dir: dir}, "mcpclient: Command[0] is empty"},
		{"relative URL", Config{URL: "/mcp"}, `mcpclient: URL "/mcp" is not an absolute http(s) URL`},
		{"missing binary", Config{Command: []string{filepath.Join(dir, "no-such-server")}, Dir: dir},
			`mcpclient: start "` + filepath.Join(dir, "no-such-server") + `": fork/exec ` + filepath.Join(dir, "no-such-server") + `: no such file or directory`},
		{"server exits at once", Config{Command: []string{shopServer, "--state", "/nonexistent.json"}, Dir: dir},
			`mcpclient: initialize "` + shopServer + `": `},
	}
	for _, c := range cases {
		_, err := Start(testCtx(t), c.cfg)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: Start error = %v, want prefix %q", c.name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "sk-secret") {
			t.Errorf("%s: error leaks an Env entry: %v", c.name, err)
		}
	}
	// The start failure carries the server's last stderr lines.
	_, err := Start(testCtx(t), Config{Command: []string{shopServer, "--state", "/nonexistent.json"}, Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "(stderr: mcp shop: --state: open /nonexistent.json: no such file or directory)") {
		t.Errorf("start failure = %v, want the server's stderr in it", err)
	}
}
