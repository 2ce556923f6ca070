package podsim

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
)

// processSpec is everything needed to exec one container as a subprocess.
type processSpec struct {
	binary string
	args   []string // argv[1:]
	env    []string
	dir    string
	log    logr.Logger
	// fallbackToLogs is terminationMessagePolicy FallbackToLogsOnError: the
	// log tail becomes the termination message of a failed container.
	fallbackToLogs bool
}

// pipeDrainTimeout bounds waiting for output after the process group is
// gone; a daemonised grandchild could otherwise hold the pipe forever.
const pipeDrainTimeout = time.Second

func startProcess(spec processSpec) (*runningContainer, error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(outR, outW)
		return nil, fmt.Errorf("stderr pipe: %w", err)
	}
	cmd := exec.Command(spec.binary, spec.args...)
	cmd.Env = spec.env
	cmd.Dir = spec.dir
	// *os.File outputs make Wait return when the process exits instead of
	// when every holder of the pipe has closed it.
	cmd.Stdout, cmd.Stderr = outW, errW
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		closeAll(outR, outW, errR, errW)
		return nil, fmt.Errorf("exec %s: %w", spec.binary, err)
	}
	closeAll(outW, errW)
	pid := cmd.Process.Pid

	tail := newTailBuffer(maxMessage)
	var readers sync.WaitGroup
	readers.Go(func() { drainLines(outR, spec.log.WithValues("stream", "stdout"), tail) })
	readers.Go(func() { drainLines(errR, spec.log.WithValues("stream", "stderr"), tail) })

	c := newRunningContainer()
	c.pid = pid
	// The whole process group is the container: signals reach children too.
	c.signal = func(sig syscall.Signal) { _ = syscall.Kill(-pid, sig) }
	go func() {
		werr := cmd.Wait()
		st := processExit(cmd.ProcessState, werr)
		// A container's processes die with it; so do the leader's orphans.
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		drained := make(chan struct{})
		go func() { readers.Wait(); close(drained) }()
		select {
		case <-drained:
		case <-time.After(pipeDrainTimeout):
			closeAll(outR, errR)
			<-drained
		}
		closeAll(outR, errR)
		if spec.fallbackToLogs && st.code != 0 {
			st.message = tail.String()
		}
		c.finish(st)
	}()
	return c, nil
}

func processExit(ps *os.ProcessState, werr error) exitStatus {
	if ps == nil {
		return exitStatus{code: 128, reason: "StartError", message: fmt.Sprint(werr)}
	}
	code := ps.ExitCode()
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		code = 128 + int(ws.Signal())
	}
	if code == 0 {
		return exitStatus{code: 0, reason: "Completed"}
	}
	return exitStatus{code: int32(code), reason: "Error"}
}

func closeAll(cs ...io.Closer) {
	for _, c := range cs {
		_ = c.Close()
	}
}
