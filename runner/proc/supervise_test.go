package proc_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"tolokaforge.io/operator/runner/proc"
)

// detachScript leaves a process behind the way a hostile tool does: a
// subshell that calls setsid, whose child execs a loop with an empty
// environment (env -i) writing its pid to $1, then (per $2) exits with a
// status, kills itself, or sleeps.
const detachScript = `setsid sh -c 'exec env -i sh -c "echo \$\$ > $0; while :; do sleep 0.02; done" "$0"' "$1" </dev/null >/dev/null 2>&1 &
while [ ! -s "$1" ]; do sleep 0.01; done
case "$2" in exit3) exit 3 ;; killed) kill -9 $$ ;; *) sleep 600 ;; esac`

// A supervised tool's detached descendants (new session, empty
// environment) die with it: when it exits (with its own status passed
// through), and when Stop ends it while it runs.
func TestSuperviseKillsTheWholeTree(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid(1) here")
	}
	for _, tc := range []struct {
		name, mode string
		stop       bool
		wantExit   string
	}{
		{name: "the tool exits 3", mode: "exit3", wantExit: "exit status 3"},
		{name: "the tool is killed by a signal", mode: "killed", wantExit: "signal: killed"},
		{name: "Stop while the tool runs", mode: "sleep", stop: true, wantExit: "exit status 143"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pidfile := filepath.Join(t.TempDir(), "pid")
			cmd := exec.Command("sh", "-c", detachScript, "sh", pidfile, tc.mode)
			cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := proc.Supervise(cmd, proc.Limits{}, nil); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan struct{})
			var waitErr error
			go func() { waitErr = cmd.Wait(); close(exited) }()
			t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); <-exited })
			var pid int
			deadline := time.Now().Add(5 * time.Second)
			for pid == 0 {
				raw, _ := os.ReadFile(pidfile)
				pid, _ = strconv.Atoi(strings.TrimSpace(string(raw)))
				if time.Now().After(deadline) {
					t.Fatal("the detached loop never started")
				}
				time.Sleep(10 * time.Millisecond)
			}
			if tc.stop {
				if !alive(pid) {
					t.Fatal("the detached loop is not running: the test proves nothing")
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				if err := proc.Stop(ctx, cmd.Process.Pid, exited); err != nil {
					t.Fatalf("Stop: %v", err)
				}
			}
			select {
			case <-exited:
			case <-time.After(5 * time.Second):
				t.Fatal("the supervisor did not exit")
			}
			if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
				stat, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
				t.Fatalf("detached pid %d outlived its supervisor: %s", pid, stat)
			}
			if got := errString(waitErr); got != tc.wantExit {
				t.Errorf("Wait = %q, want %q (the tool's own status)", got, tc.wantExit)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// A supervised tool runs under its limits and the supervisor does not: a
// tight RLIMIT_AS (256 MiB, where a Go supervisor's threads failed to start
// and it aborted) and RLIMIT_NOFILE reach the tool, confined or not, and the
// tool's output and status come back.
func TestSuperviseAppliesLimitsToTheToolOnly(t *testing.T) {
	l, wantAS := proc.Limits{AddressSpace: 256 << 20, OpenFiles: 64}, "262144"
	if raceEnabled {
		// The wrapper (this binary) is started under the limits too.
		l.AddressSpace, wantAS = 0, "unlimited"
	}
	for _, tc := range []struct {
		name string
		c    *proc.Confinement
	}{
		{"unconfined", nil},
		{"confined", &proc.Confinement{ReadWrite: []string{t.TempDir()}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("/bin/sh", "-c", `echo "$(ulimit -v) $(ulimit -n)"; exit 4`)
			cmd.Env = []string{"PATH=/usr/bin:/bin"}
			if err := proc.Supervise(cmd, l, tc.c); err != nil {
				t.Fatal(err)
			}
			out, err := cmd.CombinedOutput()
			if got, want := string(out), wantAS+" 64\n"; got != want {
				t.Errorf("the tool saw limits %.500q, want %q", got, want)
			}
			if got := errString(err); got != "exit status 4" {
				t.Errorf("Wait = %q, want the tool's exit status 4", got)
			}
		})
	}
}

// SignalTool reaches the tool, not its supervisor: a tool that traps
// SIGTERM runs its handler and exits with its own status, which the
// supervisor passes on (a SIGTERM to the supervisor would end the tree with
// 143).
func TestSignalToolReachesTheToolOnly(t *testing.T) {
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	cmd := exec.Command("/bin/sh", "-c", `trap 'echo got TERM; exit 7' TERM; : > "$0"; while :; do sleep 0.01; done`, ready)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	if err := proc.Supervise(cmd, proc.DefaultLimits, &proc.Confinement{ReadWrite: []string{dir}}); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the tool never set its trap")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := proc.SignalTool(cmd.Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatalf("SignalTool: %v", err)
	}
	select {
	case err := <-exited:
		if got := errString(err); got != "exit status 7" || out.String() != "got TERM\n" {
			t.Errorf("Wait = %q, output %q; want the tool's own exit status 7 and %q", got, out.String(), "got TERM\n")
		}
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		t.Fatal("the tool did not exit on SIGTERM")
	}
	if err := proc.SignalTool(1, syscall.SIGTERM); err == nil {
		t.Error("SignalTool(1) = nil, want a refusal")
	}
}
