package proc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// supervise runs the tool at path as a child of this process, a child
// subreaper, and returns the exit code to leave with once the tool and
// everything below this process are gone (see Supervise).
func supervise(path string, argv, env []string, l Limits, c *Confinement) int {
	say := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "tolokaforge supervisor of %s: "+format+"\n", append([]any{path}, a...)...)
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		say("PR_SET_CHILD_SUBREAPER: %v", err)
		return 127
	}
	// With limits or a confinement, the child is this binary again: it
	// sets the limits and applies Landlock to itself alone, then execs the
	// tool (see envConfineExec), so the supervisor stays outside both.
	exe, childEnv := path, env
	if c != nil || !l.IsZero() {
		self, err := os.Executable()
		if err != nil {
			say("resolve the wrapper binary: %v", err)
			return 127
		}
		exe = self
		childEnv = append(append([]string(nil), env...), envLimits+"="+l.encode(), envPath+"="+path)
		if c != nil {
			spec, err := json.Marshal(c)
			if err != nil {
				say("encode the confinement: %v", err)
				return 127
			}
			childEnv = append(childEnv, envConfineExec+"="+string(spec))
		}
	}
	// SIGTERM (Stop) and the signals a terminal sends end the tree.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	pid, err := syscall.ForkExec(exe, argv, &syscall.ProcAttr{Env: childEnv, Files: []uintptr{0, 1, 2}})
	if err != nil {
		say("start: %v", err)
		return 127
	}
	// The tool holds the pipes now; this process's copies would keep them
	// open after the tool's tree is gone.
	if null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0); err == nil {
		for fd := 0; fd <= 2; fd++ {
			_ = unix.Dup2(int(null.Fd()), fd)
		}
		_ = null.Close()
	}
	// Reap as the tree's processes exit (orphans land here), until the tool
	// itself exits.
	toolDone := make(chan syscall.WaitStatus, 1)
	go func() {
		for {
			var ws syscall.WaitStatus
			got, err := syscall.Wait4(-1, &ws, 0, nil)
			if got == pid {
				toolDone <- ws
				return
			}
			if errors.Is(err, syscall.ECHILD) {
				return
			}
		}
	}()
	var ws syscall.WaitStatus
	stopped := false
	select {
	case ws = <-toolDone:
	case <-sigs:
		stopped = true
	}
	killBelow(os.Getpid())
	if stopped {
		return 128 + int(syscall.SIGTERM)
	}
	if ws.Signaled() {
		// Leave as the tool did, so the runner reads the same status.
		signal.Reset(ws.Signal())
		_ = syscall.Kill(os.Getpid(), ws.Signal())
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// killBelow kills every process below self (a child subreaper: each orphan
// of its tree reparents to it) and reaps them, pass after pass, until it has
// no child left.
func killBelow(self int) {
	for pass := 0; ; pass++ {
		kids, err := childrenOf(self)
		if err != nil {
			kids = nil
		}
		for _, k := range kids {
			_ = syscall.Kill(k, syscall.SIGKILL)
		}
		for {
			var ws syscall.WaitStatus
			got, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if errors.Is(err, syscall.ECHILD) {
				return
			}
			if got <= 0 {
				break
			}
		}
		time.Sleep(time.Duration(min(pass+1, 10)) * time.Millisecond)
	}
}

// childrenOf lists the live (not zombie) children of pid from /proc.
func childrenOf(pid int) ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("proc: list /proc: %w", err)
	}
	want := strconv.Itoa(pid)
	var out []int
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 || f[1] != want || f[0] == "Z" {
			continue
		}
		out = append(out, p)
	}
	return out, nil
}

// Stop ends a supervised process (Supervise) and its whole tree: SIGTERM to
// the supervisor, which kills and reaps everything below it and exits. It
// returns once exited is closed (the caller's Wait returned), or, when ctx
// ends first, kills what is left (the supervisor's group and whatever is
// still below it) and names it in the error.
func Stop(ctx context.Context, pid int, exited <-chan struct{}) error {
	if pid <= 1 {
		return fmt.Errorf("proc: stop supervised process %d: not a process a caller starts", pid)
	}
	select {
	case <-exited:
		return nil // reaped: the pid may be another process's now
	default:
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	select {
	case <-exited:
		return nil
	case <-ctx.Done():
	}
	below := descendants(pid)
	for _, p := range below {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	return fmt.Errorf("proc: the supervisor %d did not end its tree in time; killed it and %d processes below it %v: %w", pid, len(below), below, ctx.Err())
}

// SignalTool sends sig to the tool a supervisor (Supervise) runs: its
// direct children, not the supervisor, which would end the whole tree at
// once on SIGTERM. It lets a caller ask the tool to exit on its own first
// (an MCP server's SIGTERM before its grace runs out). Nothing to signal is
// not an error.
func SignalTool(pid int, sig syscall.Signal) error {
	if pid <= 1 {
		return fmt.Errorf("proc: signal the tool of supervisor %d: not a process a caller starts", pid)
	}
	kids, err := childrenOf(pid)
	if err != nil {
		return err
	}
	for _, k := range kids {
		if err := syscall.Kill(k, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("proc: signal the tool %d of supervisor %d: %w", k, pid, err)
		}
	}
	return nil
}

// descendants lists every live process below pid.
func descendants(pid int) []int {
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		kids, _ := childrenOf(p)
		out = append(out, kids...)
		queue = append(queue, kids...)
	}
	return out
}
