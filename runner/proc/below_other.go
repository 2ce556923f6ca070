//go:build !linux

package proc

import "errors"

// Process is one live process below the caller (Below).
type Process struct {
	PID, PPID   int
	Comm, Owner string
}

// Below cannot tell what runs below the caller where there is no /proc: a
// slot's baseline check must fail rather than vouch for what it cannot see.
func Below(string) ([]Process, error) {
	return nil, errors.New("proc: listing the processes below the runner needs Linux's /proc")
}
