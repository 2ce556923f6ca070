package proc_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"tolokaforge.io/operator/runner/proc"
	"tolokaforge.io/operator/test/toollauncher"
)

// limitsProbe is a tool that reports what it runs under.
func limitsProbe() *exec.Cmd {
	cmd := exec.Command("sh", "-c", `cat /proc/self/limits; echo "argv: $0 $1"; echo "markers: $(env | grep -c TOLOKAFORGE_PROC_)"`, "arg0", "arg1")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	return cmd
}

// checkProbe runs a limitsProbe Apply prepared and checks the tool saw
// every limit, neither the wrapper's markers nor a different argv.
func checkProbe(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, want := range []string{
		"Max address space         536870912            536870912            bytes",
		"Max open files            64                   64                   files",
		"Max processes             300                  300                  processes",
		"argv: arg0 arg1",
		"markers: 0",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the tool's view lacks %q:\n%s", want, out)
		}
	}
}

var probeLimits = proc.Limits{AddressSpace: 512 << 20, OpenFiles: 64, Processes: 300}

// probeThrough applies probeLimits to the probe, which must then start
// through wrapper, and checks what the tool sees.
func probeThrough(t *testing.T, wrapper string) {
	t.Helper()
	cmd := limitsProbe()
	if err := proc.Apply(cmd, probeLimits); err != nil {
		t.Fatal(err)
	}
	if cmd.Path != wrapper {
		t.Fatalf("cmd.Path = %s, want the wrapper %s", cmd.Path, wrapper)
	}
	checkProbe(t, cmd)
}

// Without a launcher beside it (the test binary's directory has none) the
// running binary is the wrapper: it sets every limit before the tool runs.
func TestApplySetsLimitsBeforeTheToolStarts(t *testing.T) {
	if err := proc.SetLauncher(""); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	probeThrough(t, self)
}

// launcherDir holds tolokaforge-toolexec, compiled once per test binary;
// TestMain removes it.
var launcherDir string

var launcherOnce = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "proc-launcher-")
	if err != nil {
		return "", err
	}
	launcherDir = dir
	return toollauncher.Build(dir)
})

func TestMain(m *testing.M) {
	code := m.Run()
	if launcherDir != "" {
		_ = os.RemoveAll(launcherDir)
	}
	os.Exit(code)
}

func builtLauncher(t *testing.T) string {
	t.Helper()
	path, err := launcherOnce()
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// With a launcher set, the tool starts through it, not through the running
// binary, under the same limits.
func TestApplyThroughTheLauncher(t *testing.T) {
	launcher := builtLauncher(t)
	if err := proc.SetLauncher(launcher); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proc.SetLauncher("") })
	if got, err := proc.Launcher(); got != launcher || err != nil {
		t.Fatalf("Launcher() = %s, %v; want %s", got, err, launcher)
	}
	probeThrough(t, launcher)
}

// Started by hand (no markers), the launcher says what it is for and fails
// like a command that could not run.
func TestLauncherWithoutMarkersExits127(t *testing.T) {
	cmd := exec.Command(builtLauncher(t))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 127 || !strings.Contains(string(out), "not started by a tolokaforge runner") {
		t.Fatalf("launcher alone: %v %q, want exit 127 and the reason", err, out)
	}
}

// An explicit launcher that is not there is an error naming it, and the
// previous choice stays: no silent fall back to the self re-exec.
func TestSetLauncherRejectsAMissingPath(t *testing.T) {
	t.Cleanup(func() { _ = proc.SetLauncher("") })
	before, err := proc.Launcher()
	if err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "no-such-launcher")
	notExec := filepath.Join(t.TempDir(), "not-executable")
	if err := os.WriteFile(notExec, []byte("#!/bin/true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{missing, "no such file"},
		{notExec, "not executable"},
		{t.TempDir(), "not a regular file"},
	} {
		err := proc.SetLauncher(tc.path)
		if err == nil || !strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("SetLauncher(%s) = %v, want an error naming it and saying %q", tc.path, err, tc.want)
		}
		if got, _ := proc.Launcher(); got != before {
			t.Errorf("after SetLauncher(%s) failed, Launcher() = %s, want %s unchanged", tc.path, got, before)
		}
	}
}

func TestApplyZeroChangesNothing(t *testing.T) {
	cmd := exec.Command("sh", "-c", "true")
	path := cmd.Path
	if err := proc.Apply(cmd, proc.Limits{}); err != nil || cmd.Path != path || cmd.Env != nil {
		t.Fatalf("zero limits altered the command: %v %s %v", err, cmd.Path, cmd.Env)
	}
}

func TestApplyUnknownCommand(t *testing.T) {
	cmd := exec.Command("no-such-tool-anywhere")
	if err := proc.Apply(cmd, proc.DefaultLimits); err == nil || !strings.Contains(err.Error(), "no-such-tool-anywhere") {
		t.Fatalf("Apply = %v, want the lookup error", err)
	}
}

// A process past its address space limit fails its allocation.
func TestAddressSpaceLimitStopsAnAllocation(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 here")
	}
	run := func(l proc.Limits) (string, error) {
		cmd := exec.Command(py, "-c", "b = bytearray(512 << 20); print('allocated')")
		if err := proc.Apply(cmd, l); err != nil {
			t.Fatal(err)
		}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run(proc.Limits{}); err != nil || !strings.Contains(out, "allocated") {
		t.Fatalf("without limits: %v %s", err, out)
	}
	out, err := run(proc.Limits{AddressSpace: 256 << 20})
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !strings.Contains(out, "MemoryError") {
		t.Fatalf("under RLIMIT_AS=256Mi: %v %q, want a MemoryError exit", err, out)
	}
}

func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// KillTagged finds a process that left its group and session, kills what
// carries the tag (and its descendants) and leaves everything else alone.
func TestKillTaggedKillsDetachedAndSparesOthers(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid(1) here")
	}
	if err := proc.SetSubreaper(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	start := func(tag, pidfile string) *exec.Cmd {
		cmd := exec.Command("sh", "-c", `(setsid sh -c 'sleep 1000 & echo $! > "$1"; wait' sh "$PIDFILE" </dev/null >/dev/null 2>&1 &); sleep 1000`)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "PIDFILE=" + pidfile, tag}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
		return cmd
	}
	readPid := func(path string) int {
		deadline := time.Now().Add(5 * time.Second)
		for {
			raw, _ := os.ReadFile(path)
			if n, err := strconv.Atoi(strings.TrimSpace(string(raw))); err == nil {
				return n
			}
			if time.Now().After(deadline) {
				t.Fatalf("no pid in %s", path)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	mine := start("TRIAL_TAG=mine", filepath.Join(dir, "mine"))
	other := start("TRIAL_TAG=other", filepath.Join(dir, "other"))
	minePid, otherPid := readPid(filepath.Join(dir, "mine")), readPid(filepath.Join(dir, "other"))
	t.Cleanup(func() { _, _ = proc.KillTagged(context.Background(), "TRIAL_TAG=other") })

	// The group kill a server's stop does, which the detached process escapes.
	_ = syscall.Kill(-mine.Process.Pid, syscall.SIGKILL)
	_ = mine.Wait()
	if !alive(minePid) {
		t.Fatal("the detached process died with its group; the test proves nothing")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	killed, err := proc.KillTagged(ctx, "TRIAL_TAG=mine")
	if err != nil {
		t.Fatal(err)
	}
	if alive(minePid) {
		t.Fatalf("detached pid %d survived KillTagged (killed %v)", minePid, killed)
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(minePid)); err == nil {
		t.Fatalf("pid %d was killed but not reaped", minePid)
	}
	if !alive(otherPid) || !alive(other.Process.Pid) {
		t.Fatal("KillTagged killed another trial's processes")
	}
}

func TestScrubbedEnvKeepsOnlyWhatARunnerNeeds(t *testing.T) {
	in := []string{"PATH=/bin", "POD_IP=10.0.0.1", "OPENAI_API_KEY=sk-x", "HOME=/h", "KUBERNETES_SERVICE_HOST=10.96.0.1", "AWS_SECRET_ACCESS_KEY=y", "HTTPS_PROXY=http://proxy:3128",
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4317", "OTEL_EXPORTER_OTLP_HEADERS=api-key=secret"}
	got := strings.Join(proc.ScrubbedEnv(in), " ")
	if want := "PATH=/bin POD_IP=10.0.0.1 HOME=/h HTTPS_PROXY=http://proxy:3128 OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4317"; got != want {
		t.Fatalf("ScrubbedEnv = %q, want %q", got, want)
	}
}

// A tool seen once with its trial's tag stays its trial's: exec'ing with an
// empty environment afterwards (env -i) does not let it outlive CleanupTrial.
func TestKillTaggedRemembersATagTheToolDropped(t *testing.T) {
	if _, err := exec.LookPath("env"); err != nil {
		t.Skip("no env(1) here")
	}
	dir := t.TempDir()
	gate := filepath.Join(dir, "go")
	cmd := exec.Command("sh", "-c", `while [ ! -e "$GATE" ]; do sleep 0.01; done; exec env -i sleep 1000`)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "GATE=" + gate, "TRIAL_TAG=dropper"}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid := cmd.Process.Pid

	// Another trial's cleanup passes over it while it still carries the tag.
	if killed, err := proc.KillTagged(context.Background(), "TRIAL_TAG=someone-else"); err != nil || len(killed) != 0 {
		t.Fatalf("another trial's cleanup killed %v (%v)", killed, err)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		env, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
		if comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm"); strings.TrimSpace(string(comm)) == "sleep" && !strings.Contains(string(env), "TRIAL_TAG") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the tool did not exec env -i sleep")
		}
		time.Sleep(10 * time.Millisecond)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	killed, err := proc.KillTagged(ctx, "TRIAL_TAG=dropper")
	if err != nil {
		t.Fatal(err)
	}
	if len(killed) != 1 || killed[0] != pid {
		t.Fatalf("KillTagged killed %v, want the tool %d that dropped its tag", killed, pid)
	}
}

// BenchmarkKillTaggedScan is one cleanup's scan of /proc with 100 processes
// of other trials alive and nothing of this trial's, against a bare listing
// of /proc in the same run (scan_vs_readdir).
func BenchmarkKillTaggedScan(b *testing.B) {
	for i := range 100 {
		cmd := exec.Command("sleep", "1000")
		cmd.Env = []string{"TRIAL_TAG=other-" + strconv.Itoa(i)}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	}
	// The baseline is timed inside the same loop, so load drifting on a
	// shared machine weighs on both alike.
	var readdir, scanning time.Duration
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		if _, err := os.ReadDir("/proc"); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if killed, err := proc.KillTagged(context.Background(), "TRIAL_TAG=mine"); err != nil || len(killed) != 0 {
			b.Fatalf("killed %v (%v)", killed, err)
		}
		readdir, scanning = readdir+t1.Sub(t0), scanning+time.Since(t1)
	}
	b.ReportMetric(float64(scanning)/float64(readdir), "scan_vs_readdir")
}
