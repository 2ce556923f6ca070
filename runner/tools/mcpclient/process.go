package mcpclient

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"

	"tolokaforge.io/operator/runner/proc"
)

const (
	// maxStderrLine bounds one logged stderr line; a server writing megabytes
	// without a newline must not grow the runner's memory.
	maxStderrLine = 16 << 10
	// stderrTail is how many recent stderr lines a failed start reports.
	stderrTail = 5
	// drainWait bounds how long stop waits for the stderr reader to reach EOF after
	// the group is dead (a descendant that escaped the group could hold the pipe).
	drainWait = time.Second
)

// process is one stdio server in its own process group. The runner holds our ends
// of three os.Pipes; exec gets the other ends directly, so Wait never races the
// readers and closing our ends unblocks them.
type process struct {
	pid int
	// supervised: pid is the server's supervisor (Config.Confine), which
	// ends the server's whole subtree when it exits or is stopped.
	supervised bool
	cmd        *exec.Cmd
	log        logr.Logger
	stdin      *os.File // our write end
	stdout     *os.File // our read end
	stderr     *os.File // our read end

	exited  chan struct{} // closed once Wait has returned
	waitErr error         // valid after exited
	drained chan struct{} // closed once the stderr reader has stopped

	mu   sync.Mutex
	tail []string // last stderrTail lines
}

func spawn(cfg *Config) (*process, error) {
	argv, err := cfg.argv()
	if err != nil {
		return nil, err
	}
	// exec.Command, not CommandContext: the server lives as long as the session,
	// not as long as the context of the call that started it.
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = cfg.Dir
	cmd.Env = cfg.childEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	supervised := cfg.Confine != nil
	if supervised {
		// The supervisor's child is the server: it keeps the pipes (the
		// supervisor passes fds 0-2 on and drops its own copies), so the
		// transport is the same as unsupervised.
		c := *cfg.Confine
		if err := proc.Supervise(cmd, cfg.Limits, &c); err != nil {
			return nil, fmt.Errorf("mcpclient: start %q under a supervisor (%s; %s): %w", cfg.Command[0], cfg.Limits, &c, err)
		}
	} else if err := proc.Apply(cmd, cfg.Limits); err != nil {
		return nil, fmt.Errorf("mcpclient: start %q under %s: %w", cfg.Command[0], cfg.Limits, err)
	}

	var ours, theirs []*os.File
	closeAll := func(fs []*os.File) {
		for _, f := range fs {
			f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err != nil {
			closeAll(ours)
			closeAll(theirs)
		}
		return r, w, err
	}
	stdinR, stdinW, err := pipe()
	if err != nil {
		return nil, fmt.Errorf("mcpclient: stdin pipe: %w", err)
	}
	ours, theirs = append(ours, stdinW), append(theirs, stdinR)
	stdoutR, stdoutW, err := pipe()
	if err != nil {
		return nil, fmt.Errorf("mcpclient: stdout pipe: %w", err)
	}
	ours, theirs = append(ours, stdoutR), append(theirs, stdoutW)
	stderrR, stderrW, err := pipe()
	if err != nil {
		return nil, fmt.Errorf("mcpclient: stderr pipe: %w", err)
	}
	ours, theirs = append(ours, stderrR), append(theirs, stderrW)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, stdoutW, stderrW

	if err := cmd.Start(); err != nil {
		closeAll(ours)
		closeAll(theirs)
		return nil, fmt.Errorf("mcpclient: start %q: %w", cfg.Command[0], err)
	}
	// The child has its copies; keeping ours would hide its EOFs from us.
	closeAll(theirs)

	p := &process{
		pid:        cmd.Process.Pid,
		supervised: supervised,
		cmd:        cmd,
		log:        cfg.Logger.WithValues("pid", cmd.Process.Pid, "command", cfg.Command[0]),
		stdin:      stdinW,
		stdout:     stdoutR,
		stderr:     stderrR,
		exited:     make(chan struct{}),
		drained:    make(chan struct{}),
	}
	go p.drain()
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	p.log.V(1).Info("mcp server started")
	return p, nil
}

// drain logs the child's stderr one entry per line until EOF.
func (p *process) drain() {
	defer close(p.drained)
	r := bufio.NewReaderSize(p.stderr, 4<<10)
	var line []byte
	truncated := false
	flush := func() {
		s := string(line)
		if truncated {
			p.log.Info("mcp server stderr", "line", s, "truncated", true)
		} else {
			p.log.Info("mcp server stderr", "line", s)
		}
		p.mu.Lock()
		p.tail = append(p.tail, s)
		if len(p.tail) > stderrTail {
			p.tail = p.tail[1:]
		}
		p.mu.Unlock()
		line, truncated = line[:0], false
	}
	for {
		chunk, isPrefix, err := r.ReadLine()
		if room := maxStderrLine - len(line); len(chunk) > room {
			chunk, truncated = chunk[:room], true
		}
		line = append(line, chunk...)
		if err != nil {
			if len(line) > 0 {
				flush()
			}
			return
		}
		if !isPrefix {
			flush()
		}
	}
}

// stderrTail returns the last lines of stderr, for a start failure's message.
func (p *process) recentStderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.tail, " | ")
}

// signalGroup signals every process of the server's group. ESRCH (nothing left) is
// not an error.
func (p *process) signalGroup(sig syscall.Signal) {
	if err := syscall.Kill(-p.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		p.log.Error(err, "signal mcp server process group", "signal", sig.String())
	}
}

// stop ends the server: stdin is closed (the MCP way to ask a stdio server to
// exit) and the group gets SIGTERM (with SIGCONT, so a stopped process sees it);
// after grace, or as soon as the leader has exited, whatever remains of the group
// (helpers it forked, a leader ignoring SIGTERM) gets SIGKILL. It returns once the
// leader is reaped.
func (p *process) stop(grace time.Duration) {
	if p.supervised {
		p.stopSupervised(grace)
		return
	}
	p.stdin.Close()
	p.signalGroup(syscall.SIGTERM)
	p.signalGroup(syscall.SIGCONT)
	if grace > 0 {
		t := time.NewTimer(grace)
		select {
		case <-p.exited:
		case <-t.C:
		}
		t.Stop()
	}
	p.signalGroup(syscall.SIGKILL)
	<-p.exited
	// A descendant that left the group may still hold stderr.
	p.release("mcp server stderr still open after the process group was killed; abandoning it")
}

// release closes the pipes of an exited server: stdout at once, stderr once
// its reader drained it or after drainWait (stuck is logged then), and
// returns when the reader has stopped.
func (p *process) release(stuck string) {
	p.stdout.Close()
	t := time.NewTimer(drainWait)
	select {
	case <-p.drained:
	case <-t.C:
		p.log.Info(stuck)
	}
	t.Stop()
	p.stderr.Close()
	<-p.drained
	p.log.V(1).Info("mcp server stopped", "status", exitStatus(p.waitErr))
}

// stopSupervisorWait bounds how long stopSupervised waits for the
// supervisor to end the server's tree after SIGTERM before it kills what is
// left itself (proc.Stop).
const stopSupervisorWait = 5 * time.Second

// stopSupervised ends a supervised server as stop does an unsupervised one:
// stdin is closed and the server itself (not its supervisor) gets SIGTERM,
// with grace to exit on its own (its supervisor then kills and reaps
// whatever it left below); after that the supervisor gets SIGTERM and ends
// the whole subtree, detached descendants included. It returns once the
// supervisor is reaped and the stderr reader has stopped.
func (p *process) stopSupervised(grace time.Duration) {
	p.stdin.Close()
	if grace > 0 {
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGCONT} {
			if err := proc.SignalTool(p.pid, sig); err != nil {
				p.log.Error(err, "signal the mcp server", "signal", sig.String())
			}
		}
		t := time.NewTimer(grace)
		select {
		case <-p.exited:
		case <-t.C:
		}
		t.Stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), stopSupervisorWait)
	defer cancel()
	if err := proc.Stop(ctx, p.pid, p.exited); err != nil {
		p.log.Error(err, "stop the mcp server's supervisor")
	}
	<-p.exited
	// The tree is gone, so nothing holds stderr open any more: the reader
	// reaches EOF.
	p.release("mcp server stderr still open after its supervisor ended its tree; abandoning it")
}

func exitStatus(err error) string {
	if err == nil {
		return "exit 0"
	}
	return err.Error()
}
