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

// TestBinary builds the static binary and drives it as a subprocess: the
// central reaper (ReapAll) dispatching statuses by pid, a background child
// not holding the reply, KillAll of a double fork, the token kept from
// children, and SIGTERM ending it with status 0.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "tolokaforge-execagent")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X main.version=v-test", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if fi, err := os.Stat(bin); err == nil {
		t.Logf("binary size: %d bytes (%.1f MiB)", fi.Size(), float64(fi.Size())/(1<<20))
	}
	token, err := authn.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--listen", "127.0.0.1:0", "--state-dir", filepath.Join(dir, "state"))
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
	logMu.Lock()
	leaked := strings.Contains(logs.String(), token)
	logMu.Unlock()
	if leaked {
		t.Fatal("the agent logged its token")
	}
	c, err := client.Dial(addr, client.Options{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	h, err := c.Health(ctx)
	if err != nil || h.Version != "v-test" {
		t.Fatalf("health %v %v, want version v-test", h, err)
	}

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
