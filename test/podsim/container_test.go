package podsim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
)

type codeErr int

func (c codeErr) Error() string { return fmt.Sprintf("exit %d", int(c)) }
func (c codeErr) ExitCode() int { return int(c) }

func TestInProcessExit(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want exitStatus
	}{
		{"nil", nil, exitStatus{code: 0, reason: "Completed"}},
		{"plain error", errors.New("bad flag"), exitStatus{code: 1, reason: "Error", message: "bad flag"}},
		{"exit coder", fmt.Errorf("wrapped: %w", codeErr(4)), exitStatus{code: 4, reason: "Error", message: "wrapped: exit 4"}},
		{"exit coder zero", codeErr(0), exitStatus{code: 0, reason: "Completed", message: "exit 0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := inProcessExit(tc.err); got != tc.want {
				t.Fatalf("exit = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func waitDone(t *testing.T, c *runningContainer) exitStatus {
	t.Helper()
	select {
	case <-c.done:
		return c.exitStatus()
	case <-time.After(10 * time.Second):
		t.Fatal("container did not finish")
		return exitStatus{}
	}
}

func TestInProcessContainer(t *testing.T) {
	t.Run("returns nil", func(t *testing.T) {
		c := startInProcess(context.Background(), func(context.Context, []string) error { return nil }, nil)
		if got := waitDone(t, c); got.code != 0 || got.reason != "Completed" {
			t.Fatalf("exit = %+v", got)
		}
	})
	t.Run("kill cancels with ErrKilled and reports 137", func(t *testing.T) {
		cause := make(chan error, 1)
		c := startInProcess(context.Background(), func(ctx context.Context, _ []string) error {
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return nil // even a clean return after SIGKILL is 137
		}, nil)
		c.kill(time.Second, discard)
		if got := c.exitStatus(); got.code != 137 || got.reason != "Error" || !strings.Contains(got.message, "injected pod loss") {
			t.Fatalf("exit = %+v", got)
		}
		if err := <-cause; !errors.Is(err, errKilled) {
			t.Fatalf("cause = %v, want ErrKilled", err)
		}
	})
	t.Run("stop cancels with ErrTerminated", func(t *testing.T) {
		cause := make(chan error, 1)
		c := startInProcess(context.Background(), func(ctx context.Context, args []string) error {
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return nil
		}, []string{"--x"})
		c.stop(time.Second, time.Second, discard)
		if got := c.exitStatus(); got.code != 0 {
			t.Fatalf("exit = %+v", got)
		}
		if err := <-cause; !errors.Is(err, errTerminated) {
			t.Fatalf("cause = %v, want ErrTerminated", err)
		}
	})
	t.Run("ignoring cancellation is abandoned after grace", func(t *testing.T) {
		release := make(chan struct{})
		defer close(release)
		c := startInProcess(context.Background(), func(context.Context, []string) error { <-release; return nil }, nil)
		c.stop(20*time.Millisecond, 20*time.Millisecond, discard)
		if got := c.exitStatus(); got.code != 137 || !strings.Contains(got.message, "abandoned") {
			t.Fatalf("exit = %+v", got)
		}
	})
	t.Run("panic is exit 2", func(t *testing.T) {
		c := startInProcess(context.Background(), func(context.Context, []string) error { panic("kaboom") }, nil)
		if got := waitDone(t, c); got.code != 2 || !strings.HasPrefix(got.message, "panic: kaboom") {
			t.Fatalf("exit = %+v", got)
		}
	})
	t.Run("args passed", func(t *testing.T) {
		got := make(chan []string, 1)
		c := startInProcess(context.Background(), func(_ context.Context, args []string) error { got <- args; return nil }, []string{"--a=1", "b"})
		waitDone(t, c)
		if a := <-got; strings.Join(a, " ") != "--a=1 b" {
			t.Fatalf("args = %v", a)
		}
	})
}

func TestProcessContainer(t *testing.T) {
	started := make(chan struct{}, 1)
	// The helper announces itself once its signal handlers are installed.
	log := funcr.New(func(_, args string) {
		if strings.Contains(args, "simserver starting") {
			started <- struct{}{}
		}
	}, funcr.Options{})
	spec := func(fallback bool, args ...string) processSpec {
		return processSpec{binary: simserverBin, args: args, env: []string{"PATH=/usr/bin:/bin"}, dir: t.TempDir(), log: log, fallbackToLogs: fallback}
	}
	cases := []struct {
		name   string
		spec   processSpec
		action func(*runningContainer)
		want   exitStatus
	}{
		{"exit 0", spec(false, "--exit-code=0"), nil, exitStatus{code: 0, reason: "Completed"}},
		{"exit 3 without log fallback", spec(false, "--exit-code=3", "--stderr=fatal: bad pack"), nil, exitStatus{code: 3, reason: "Error"}},
		// stdout and stderr are separate pipes, so only the content of the
		// tail is certain, not the interleaving.
		{"exit 3 with log fallback", spec(true, "--exit-code=3", "--stderr=fatal: bad pack"), nil,
			exitStatus{code: 3, reason: "Error", message: "fatal: bad pack\nsimserver starting PID\n"}},
		{"SIGTERM handled", spec(false), func(c *runningContainer) { c.stop(5*time.Second, 5*time.Second, discard) }, exitStatus{code: 0, reason: "Completed"}},
		{"SIGTERM ignored escalates to SIGKILL", spec(false, "--ignore-sigterm"), func(c *runningContainer) { c.stop(300*time.Millisecond, 5*time.Second, discard) },
			exitStatus{code: 137, reason: "Error"}},
		{"kill", spec(false), func(c *runningContainer) { c.kill(5*time.Second, discard) },
			exitStatus{code: 137, reason: "Error", message: "killed by the pod simulator (injected pod loss)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := startProcess(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-started:
			case <-time.After(10 * time.Second):
				t.Fatal("helper did not start")
			}
			if tc.action != nil {
				tc.action(c)
			}
			got := waitDone(t, c)
			// The helper prints its pid, which varies.
			got.message = strings.Replace(got.message, fmt.Sprint(c.pid), "PID", 1)
			if lines := strings.SplitAfter(got.message, "\n"); len(lines) == 3 && strings.HasPrefix(lines[0], "simserver") {
				got.message = lines[1] + lines[0]
			}
			if got != tc.want {
				t.Fatalf("exit = %+v, want %+v", got, tc.want)
			}
		})
	}
	if _, err := startProcess(processSpec{binary: "/nonexistent/bin", log: discard}); err == nil || !strings.Contains(err.Error(), "exec /nonexistent/bin") {
		t.Fatalf("missing binary err = %v", err)
	}
}
