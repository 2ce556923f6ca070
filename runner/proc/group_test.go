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

// A group whose leader exited leaves its background children running;
// KillGroup kills them, reaps the ones adopted as subreaper, and returns
// only once none is left, while a process of another group lives on.
func TestKillGroupKillsAndReapsTheWholeGroup(t *testing.T) {
	if err := proc.SetSubreaper(); err != nil {
		t.Fatal(err)
	}
	pidfile := filepath.Join(t.TempDir(), "pids")
	cmd := exec.Command("sh", "-c", `sleep 600 & a=$!; (sleep 600 & echo $! > "$PIDFILE.2") ; echo $a > "$PIDFILE.1"`)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "PIDFILE=" + pidfile}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	bystander := exec.Command("sleep", "600")
	bystander.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := bystander.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bystander.Process.Kill(); _ = bystander.Wait() })
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, suffix := range []string{".1", ".2"} {
		raw, err := os.ReadFile(pidfile + suffix)
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
		if err != nil || !alive(pid) {
			t.Fatalf("background child %q is not running (%v): the test proves nothing", raw, err)
		}
		pids = append(pids, pid)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if err := proc.KillGroup(ctx, pgid); err != nil {
		t.Fatalf("KillGroup: %v", err)
	}
	for _, pid := range pids {
		// Gone, not merely signalled and not a zombie of ours: the
		// subshell's sleep was reparented to this process and reaped here.
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
			stat, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
			t.Errorf("pid %d of the group is left after KillGroup: %s", pid, stat)
		}
	}
	if !alive(bystander.Process.Pid) {
		t.Error("KillGroup killed a process of another group")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("KillGroup took %s", d)
	}
	// An empty group is already gone.
	if err := proc.KillGroup(ctx, pgid); err != nil {
		t.Errorf("KillGroup of an empty group: %v", err)
	}
}

func TestKillGroupRefusesPgidsItMustNotSignal(t *testing.T) {
	for _, pgid := range []int{-1, 0, 1} {
		if err := proc.KillGroup(context.Background(), pgid); err == nil || !strings.Contains(err.Error(), "not a group a caller starts") {
			t.Errorf("KillGroup(%d) = %v, want a refusal", pgid, err)
		}
	}
}
