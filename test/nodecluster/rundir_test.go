package nodecluster

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// longDir is a cluster directory under base whose absolute path is n bytes.
func longDir(t *testing.T, base string, n int) string {
	t.Helper()
	d := filepath.Join(base, "clone")
	for len(d) < n-len("/bin/cluster") {
		d += strings.Repeat("x", min(40, n-len("/bin/cluster")-len(d)))
		if len(d) < n-len("/bin/cluster") {
			d += "/"
		}
	}
	d = filepath.Join(d, "bin", "cluster")
	if len(d) != n {
		t.Fatalf("long dir is %d bytes, want %d: %s", len(d), n, d)
	}
	return d
}

// TestRunDirFitsSocketsWhateverTheCheckoutPath: a checkout at 150 bytes
// (and at 400) still gets socket paths that fit, the same directory for the
// same cluster directory (Up and Down agree), another for another; sockets
// under the cluster directory itself, as before, would not have fit.
func TestRunDirFitsSocketsWhateverTheCheckoutPath(t *testing.T) {
	for _, n := range []int{40, 150, 400} {
		dir := longDir(t, "/tmp", n)
		run := DefaultRunDir(dir)
		if !strings.HasPrefix(run, RunRoot+"/") || len(run) != len(RunRoot)+1+12 {
			t.Errorf("%d: DefaultRunDir = %q, want %s/<12 hex>", n, run, RunRoot)
		}
		if err := checkSocketPaths(run); err != nil {
			t.Errorf("%d: %v", n, err)
		}
		if again := DefaultRunDir(dir); again != run {
			t.Errorf("%d: DefaultRunDir not stable: %s then %s", n, run, again)
		}
		if other := DefaultRunDir(dir + "2"); other == run {
			t.Errorf("%d: two cluster directories share %s", n, run)
		}
		if n >= 150 {
			err := checkSocketPaths(dir)
			if err == nil || !strings.Contains(err.Error(), "containerd.sock") || !strings.Contains(err.Error(), "over the 104") {
				t.Errorf("%d: sockets under the checkout itself: %v, want a refusal naming containerd.sock", n, err)
			}
		}
	}
}

// TestWaitEndsWhenAProcessExits: a process that exits before it is ready
// ends the wait at once with its exit status and its log's last lines, not
// a timeout that hides why.
func TestWaitEndsWhenAProcessExits(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	procs := &watchSet{}
	_, w, err := startProc(dir, "containerd", "sh", "-c", `for i in $(seq 1 30); do echo "line $i"; done; echo 'failed to get listener: unix socket path too long (> 104)'; exit 3`)
	if err != nil {
		t.Fatal(err)
	}
	procs.add(w)
	err = waitFor(context.Background(), 10*time.Minute, "containerd socket", procs, func(context.Context) error {
		return os.ErrNotExist
	})
	if err == nil {
		t.Fatal("wait passed")
	}
	msg := err.Error()
	for _, want := range []string{"waiting for containerd socket", "containerd exited (exit status 3)", "unix socket path too long (> 104)", "line 30", filepath.Join(dir, "logs", "containerd.log")} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "line 10\n") || strings.Contains(msg, "not reached") {
		t.Errorf("error should keep only the log's last 20 lines and not report a timeout:\n%s", msg)
	}
}

// TestWaitTimesOutWhileProcessesRun: with every process alive the wait still
// ends at its deadline, naming the check's last error.
func TestWaitTimesOutWhileProcessesRun(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	procs := &watchSet{}
	p, w, err := startProc(dir, "sleeper", "sleep", "60")
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(p.PID, syscall.SIGKILL)
	procs.add(w)
	err = waitFor(context.Background(), 300*time.Millisecond, "the node", procs, func(context.Context) error {
		return os.ErrNotExist
	})
	if err == nil || !strings.Contains(err.Error(), "the node not reached in 300ms: file does not exist") {
		t.Errorf("err = %v, want the timeout naming the check's error", err)
	}
}

// TestContainerdServesFromALongCheckout starts the real containerd with the
// cluster's config for a cluster directory 150 bytes long: its sockets in
// the run directory, it answers. Needs root and Debian's containerd (make
// e2e installs it and runs this with E2E_REQUIRE_NODE=1, so it cannot skip
// there).
func TestContainerdServesFromALongCheckout(t *testing.T) {
	if os.Getuid() != 0 {
		skipOrFail(t, "needs root")
	}
	for _, tool := range []string{"containerd", "ctr"} {
		if _, err := exec.LookPath(tool); err != nil {
			skipOrFail(t, tool+" not installed (apt-get install containerd)")
		}
	}
	dir := longDir(t, t.TempDir(), 150)
	run := DefaultRunDir(dir)
	t.Cleanup(func() { _ = os.RemoveAll(run); _ = os.Remove(RunRoot) })
	ctrDir := filepath.Join(run, "containerd")
	for _, d := range []string{filepath.Join(dir, "logs"), filepath.Join(dir, "cni/net.d"), ctrDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(ctrDir, "config.toml")
	if err := os.WriteFile(cfg, []byte(containerdConfig(ctrDir, filepath.Join(dir, "cni/net.d"), filepath.Join(ctrDir, "certs.d"))), 0o644); err != nil {
		t.Fatal(err)
	}
	p, w, err := startProc(dir, "containerd", "containerd", "--config="+cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(p.PID, syscall.SIGTERM)
		select {
		case <-w.done:
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
			<-w.done
		}
		_ = exec.Command("umount", "-R", ctrDir).Run()
	})
	procs := &watchSet{}
	procs.add(w)
	sock := filepath.Join(ctrDir, "containerd.sock")
	if err := waitFor(context.Background(), 60*time.Second, "containerd socket", procs, func(ctx context.Context) error {
		return exec.CommandContext(ctx, "ctr", "--address", sock, "version").Run()
	}); err != nil {
		t.Fatalf("cluster directory %d bytes long (%s): %v", len(dir), dir, err)
	}
}

func skipOrFail(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("E2E_REQUIRE_NODE") == "1" {
		t.Fatalf("E2E_REQUIRE_NODE=1 but %s", why)
	}
	t.Skip(why)
}
