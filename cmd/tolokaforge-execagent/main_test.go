package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"tolokaforge.io/operator/api/authn"
	pb "tolokaforge.io/operator/api/execagentpb"
	"tolokaforge.io/operator/runner/execagent"
	"tolokaforge.io/operator/runner/execagent/client"
)

// buildBinary builds the static binary once per test run.
var buildBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "execagent-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "tolokaforge-execagent")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X main.version=v-test", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

func TestMain(m *testing.M) {
	code := m.Run()
	if bin, err := buildBinary(); err == nil {
		os.RemoveAll(filepath.Dir(bin))
	}
	os.Exit(code)
}

// running is the agent binary running as a subprocess.
type running struct {
	cmd    *exec.Cmd
	c      *client.Client
	token  string
	exited chan error
}

// startBinary runs the binary, behind prefix (a command that execs it),
// with its token in the environment, and waits until it serves.
func startBinary(t *testing.T, prefix ...string) *running {
	t.Helper()
	bin, err := buildBinary()
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(bin); err == nil {
		t.Logf("binary size: %d bytes (%.1f MiB)", fi.Size(), float64(fi.Size())/(1<<20))
	}
	token, err := authn.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	args := append(append([]string(nil), prefix...), bin, "--listen", "127.0.0.1:0", "--state-dir", filepath.Join(t.TempDir(), "state"))
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), execagent.TokenEnv+"="+token)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	var logs strings.Builder
	var logMu sync.Mutex
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logMu.Lock()
			logs.WriteString(sc.Text() + "\n")
			logMu.Unlock()
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "serving" {
				addrc <- line.Addr
			}
		}
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		logMu.Lock()
		defer logMu.Unlock()
		if strings.Contains(logs.String(), token) {
			t.Error("the agent logged its token")
		}
		if t.Failed() {
			t.Logf("agent log:\n%s", logs.String())
		}
	})
	var addr string
	select {
	case addr = <-addrc:
	case err := <-exited:
		t.Fatalf("the agent exited: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("the agent did not start serving")
	}
	c, err := client.Dial(addr, client.Options{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	h, err := c.Health(ctx)
	if err != nil || h.Version != "v-test" {
		t.Fatalf("health %v %v, want version v-test", h, err)
	}
	return &running{cmd: cmd, c: c, token: token, exited: exited}
}

// TestBinary drives the static binary as a subprocess: the central reaper
// (ReapAll) dispatching statuses by pid, a background child not holding
// the reply, KillAll of a double fork, the token kept from children, and
// SIGTERM ending it with status 0.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	r := startBinary(t)
	c, token, cmd, exited := r.c, r.token, r.cmd, r.exited
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	t.Run("statuses by pid", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make(chan error, 20)
		for i := 0; i < 20; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				r, err := c.Exec(ctx, &pb.ExecRequest{Command: fmt.Sprintf("sleep 0.0%d; echo %d; exit %d", i%10, i, i), TimeoutMs: 20_000})
				if err != nil {
					errs <- err
					return
				}
				if r.ExitCode != int32(i) || string(r.Stdout) != fmt.Sprintf("%d\n", i) {
					errs <- fmt.Errorf("command %d: exit %d stdout %q", i, r.ExitCode, r.Stdout)
				}
			}(i)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})

	t.Run("background child does not block", func(t *testing.T) {
		start := time.Now()
		r, err := c.Exec(ctx, &pb.ExecRequest{Command: "sleep 1000 & echo hi", TimeoutMs: 10_000})
		if err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > time.Second || string(r.Stdout) != "hi\n" {
			t.Fatalf("took %s, stdout %q; want under 1s and \"hi\\n\"", took, r.Stdout)
		}
	})

	t.Run("token not inherited", func(t *testing.T) {
		r, err := c.Exec(ctx, &pb.ExecRequest{Command: "env", TimeoutMs: 10_000})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(r.Stdout), token) || strings.Contains(string(r.Stdout), execagent.TokenEnv) {
			t.Fatalf("a child sees the token:\n%s", r.Stdout)
		}
	})

	t.Run("commands start with default signal dispositions", func(t *testing.T) {
		r, err := c.Exec(ctx, &pb.ExecRequest{Command: "grep SigIgn /proc/self/status; yes | head -c 3 >/dev/null; echo ${PIPESTATUS[0]}", TimeoutMs: 10_000})
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Fields(string(r.Stdout))
		if len(lines) != 3 {
			t.Fatalf("stdout %q", r.Stdout)
		}
		ign, err := strconv.ParseUint(lines[1], 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		for _, sig := range []syscall.Signal{syscall.SIGPIPE, syscall.SIGUSR1, syscall.SIGUSR2} {
			if ign&(1<<(uint(sig)-1)) != 0 {
				t.Errorf("commands start with %v ignored (SigIgn %s)", sig, lines[1])
			}
		}
		if lines[2] != "141" { // 128 + SIGPIPE: yes died of it
			t.Errorf("yes | head: yes ended with %s, want 141 (SIGPIPE)", lines[2])
		}
	})

	t.Run("KillAll of a double fork", func(t *testing.T) {
		r, err := c.Exec(ctx, &pb.ExecRequest{Command: `( setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo $! )`, TimeoutMs: 10_000})
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(r.Stdout)))
		if err != nil {
			t.Fatalf("stdout %q: %v", r.Stdout, err)
		}
		k, err := c.KillAll(ctx, &pb.KillAllRequest{GraceMs: 500})
		if err != nil {
			t.Fatal(err)
		}
		if k.Killed < 2 { // this sleep and the one of the previous subtest
			t.Fatalf("killed %d, want at least 2", k.Killed)
		}
		// The agent (its central reaper) reaps it: not even a zombie stays.
		deadline := time.Now().Add(5 * time.Second)
		for {
			if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err != nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("process %d is still there after KillAll", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	})

	t.Run("SIGTERM stops it", func(t *testing.T) {
		r, err := c.Exec(ctx, &pb.ExecRequest{Command: "sleep 1000 >/dev/null 2>&1 & echo $!", TimeoutMs: 10_000})
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(r.Stdout)))
		if err != nil {
			t.Fatalf("stdout %q: %v", r.Stdout, err)
		}
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("the agent exited with %v, want status 0", err)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("the agent did not exit after SIGTERM")
		}
		// It killed what it had started on the way out.
		deadline := time.Now().Add(5 * time.Second)
		for {
			stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
			if err != nil || strings.Contains(string(stat), ") Z ") {
				break
			}
			if time.Now().After(deadline) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("process %d outlived the agent", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// TestBinaryAsPID1 runs the agent as PID 1 of a new PID namespace (as in
// its container): it reaps the orphans that come to it, KillAll kills
// every other process of the namespace and spares the agent, and SIGTERM
// from inside stops it with status 0.
func TestBinaryAsPID1(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if os.Getuid() != 0 {
		t.Skip("a new PID namespace needs root; this test runs as uid", os.Getuid())
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare(1) to make a PID namespace:", err)
	}
	if out, err := exec.Command(unshare, "-p", "-f", "--mount-proc", "true").CombinedOutput(); err != nil {
		t.Skipf("unshare cannot make a PID namespace here: %v %s", err, out)
	}
	r := startBinary(t, unshare, "-p", "-f", "--kill-child", "--mount-proc")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	run := func(cmd string) *pb.ExecResponse {
		t.Helper()
		resp, err := r.c.Exec(ctx, &pb.ExecRequest{Command: cmd, TimeoutMs: 20_000})
		if err != nil {
			t.Fatalf("exec %q: %v", cmd, err)
		}
		return resp
	}
	if got := run(`tr '\0' ' ' </proc/1/cmdline`); !strings.Contains(string(got.Stdout), "tolokaforge-execagent") {
		t.Fatalf("PID 1 is %q, not the agent", got.Stdout)
	}
	// Orphans that exit come to PID 1, which reaps them.
	run(`for i in 1 2 3; do ( sleep 0.05 & ); done; sleep 0.3`)
	deadline := time.Now().Add(5 * time.Second)
	for {
		z := run(`grep -l '^State:.*Z' /proc/[0-9]*/status 2>/dev/null | wc -l`)
		if strings.TrimSpace(string(z.Stdout)) == "0" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s zombies stay under PID 1", strings.TrimSpace(string(z.Stdout)))
		}
		time.Sleep(50 * time.Millisecond)
	}
	pid := strings.TrimSpace(string(run(`( setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo $! )`).Stdout))
	run(`sleep 1000 >/dev/null 2>&1 &`)
	k, err := r.c.KillAll(ctx, &pb.KillAllRequest{GraceMs: 300})
	if err != nil {
		t.Fatal(err)
	}
	if k.Killed < 2 {
		t.Fatalf("killed %d, want at least 2", k.Killed)
	}
	if got := run(`ls -d /proc/[0-9]* | wc -l; kill -0 ` + pid + ` 2>/dev/null && echo alive || echo gone`); !strings.HasSuffix(string(got.Stdout), "gone\n") {
		t.Fatalf("after KillAll: %q", got.Stdout)
	}
	// SIGTERM to PID 1 from inside the namespace: the agent has a handler.
	_, _ = r.c.Exec(ctx, &pb.ExecRequest{Command: "kill -TERM 1; sleep 30", TimeoutMs: 20_000})
	select {
	case err := <-r.exited:
		if err != nil {
			t.Fatalf("the agent exited with %v, want status 0", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the agent did not exit after SIGTERM")
	}
}

// TestInstall: --install DEST copies the binary itself to DEST, mode 0755,
// replacing what was there, leaves no temporary file beside it, and the
// copy runs; a DEST in a missing folder fails naming it.
func TestInstall(t *testing.T) {
	bin, err := buildBinary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	dest := filepath.Join(dir, "tolokaforge-execagent")
	if err := os.WriteFile(dest, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	// No token in the environment: --install needs none.
	cmd := exec.Command(bin, "--install", dest)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	if out, err := cmd.CombinedOutput(); err != nil || len(out) != 0 {
		t.Fatalf("--install: %v, output %q", err, out)
	}
	want, _ := os.ReadFile(bin)
	got, err := os.ReadFile(dest)
	if err != nil || string(got) != string(want) {
		t.Fatalf("installed copy differs from the binary (%d vs %d bytes): %v", len(got), len(want), err)
	}
	st, _ := os.Stat(dest)
	if st.Mode().Perm() != 0o755 {
		t.Errorf("mode %v, want 0755", st.Mode().Perm())
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("the folder holds %d entries, want only the installed binary", len(ents))
	}
	if out, err := exec.Command(dest, "--version").Output(); err != nil || strings.TrimSpace(string(out)) != "v-test" {
		t.Errorf("installed copy --version: %q, %v", out, err)
	}
	out, err := exec.Command(bin, "--install", filepath.Join(dir, "missing", "agent")).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "install:") || !strings.Contains(string(out), filepath.Join(dir, "missing")) {
		t.Errorf("--install into a missing folder: %v, %q; want a failure naming the folder", err, out)
	}
}
