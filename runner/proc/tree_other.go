//go:build !linux

package proc

import (
	"context"
	"errors"
	"syscall"
)

// SetSubreaper is a no-op where there is no PR_SET_CHILD_SUBREAPER.
func SetSubreaper() error { return nil }

// SetNotDumpable is a no-op where there is no PR_SET_DUMPABLE.
func SetNotDumpable() error { return nil }

// KillTagged finds nothing where there is no /proc.
func KillTagged(context.Context, string) ([]int, error) { return nil, nil }

// KillGroup signals the group; where there is no /proc it cannot wait for
// the members to be gone.
func KillGroup(_ context.Context, pgid int) error {
	if pgid <= 1 {
		return nil
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	return nil
}

// Stop kills the process group where there is no supervisor.
func Stop(_ context.Context, pid int, exited <-chan struct{}) error {
	if pid > 1 {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
	<-exited
	return nil
}

// SignalTool signals pid itself where there is no supervisor (Supervise
// started the tool directly).
func SignalTool(pid int, sig syscall.Signal) error {
	if pid <= 1 {
		return errors.New("proc: signal a tool: not a process a caller starts")
	}
	if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// LandlockABI is 0 where there is no Landlock.
func LandlockABI() (int, error) {
	return 0, errors.New("proc: Landlock needs Linux")
}
