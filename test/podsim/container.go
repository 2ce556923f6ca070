package podsim

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
)

var (
	// errKilled is the cancellation cause an in-process container sees when
	// Simulator.Kill injects pod loss.
	errKilled = errors.New("podsim: container killed")
	// errTerminated is the cancellation cause for pod deletion and shutdown.
	errTerminated = errors.New("podsim: container terminated")
)

// maxMessage mirrors kubelet's cap on a container's termination message.
const maxMessage = 4096

// exitStatus is how a container ended, in containerStatuses terms.
type exitStatus struct {
	code    int32
	reason  string
	message string
}

// runningContainer is one started container, process or in-process alike.
type runningContainer struct {
	pid    int // 0 for in-process
	done   chan struct{}
	signal func(syscall.Signal)

	once   sync.Once
	mu     sync.Mutex
	killed bool
	exit   exitStatus // valid once done is closed
}

func newRunningContainer() *runningContainer {
	return &runningContainer{done: make(chan struct{})}
}

// finish records the first exit only: a forced finish after an in-process
// function ignored cancellation must not be overwritten by its late return.
func (c *runningContainer) finish(st exitStatus) {
	c.once.Do(func() {
		c.mu.Lock()
		if c.killed {
			st = exitStatus{code: 137, reason: "Error", message: "killed by the pod simulator (injected pod loss)"}
		}
		if len(st.message) > maxMessage {
			st.message = st.message[len(st.message)-maxMessage:]
		}
		c.exit = st
		c.mu.Unlock()
		close(c.done)
	})
}

func (c *runningContainer) exitStatus() exitStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exit
}

func (c *runningContainer) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// kill is SIGKILL semantics: exit code 137 whatever the container does next.
// It returns once the container is gone; an in-process function that ignores
// its context is declared dead after wait and left to leak.
func (c *runningContainer) kill(wait time.Duration, log logr.Logger) {
	c.mu.Lock()
	if !c.exited() {
		c.killed = true
	}
	c.mu.Unlock()
	c.signal(syscall.SIGKILL)
	c.await(wait, log)
}

// stop is kubelet's graceful termination: SIGTERM, then SIGKILL after grace,
// then at most wait for the container to go.
func (c *runningContainer) stop(grace, wait time.Duration, log logr.Logger) {
	if c.exited() {
		return
	}
	c.signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-c.done:
		return
	case <-t.C:
	}
	if grace > 0 {
		log.Info("container ignored SIGTERM, sending SIGKILL", "grace", grace)
	}
	c.signal(syscall.SIGKILL)
	c.await(wait, log)
}

func (c *runningContainer) await(wait time.Duration, log logr.Logger) {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
		log.Error(nil, "container did not exit after SIGKILL or cancellation; declaring it dead", "waited", wait)
		c.finish(exitStatus{code: 137, reason: "Error", message: "container did not stop; abandoned by the pod simulator"})
	}
}

// exitCoder lets an in-process function choose its exit code, the way
// *exec.ExitError reports one.
type exitCoder interface{ ExitCode() int }

func startInProcess(parent context.Context, fn InProcessFunc, args []string) *runningContainer {
	ctx, cancel := context.WithCancelCause(parent)
	c := newRunningContainer()
	c.signal = func(sig syscall.Signal) {
		if sig == syscall.SIGKILL {
			cancel(errKilled)
			return
		}
		cancel(errTerminated)
	}
	go func() {
		defer cancel(nil)
		c.finish(inProcessExit(callRecovering(ctx, fn, args)))
	}()
	return c
}

type panicError struct {
	value any
	stack []byte
}

func (p *panicError) Error() string { return fmt.Sprintf("panic: %v\n\n%s", p.value, p.stack) }

// callRecovering keeps a panicking server from taking the test binary down;
// the panic becomes exit code 2, as it would for a Go process.
func callRecovering(ctx context.Context, fn InProcessFunc, args []string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &panicError{value: r, stack: debug.Stack()}
		}
	}()
	return fn(ctx, args)
}

func inProcessExit(err error) exitStatus {
	if err == nil {
		return exitStatus{code: 0, reason: "Completed"}
	}
	var pe *panicError
	if errors.As(err, &pe) {
		return exitStatus{code: 2, reason: "Error", message: err.Error()}
	}
	code := int32(1)
	var ec exitCoder
	if errors.As(err, &ec) {
		code = int32(ec.ExitCode())
	}
	if code == 0 {
		return exitStatus{code: 0, reason: "Completed", message: err.Error()}
	}
	return exitStatus{code: code, reason: "Error", message: err.Error()}
}
