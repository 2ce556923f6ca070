//go:build linux

package dbservice

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU returns the CPU time consumed by the calling OS thread; callers lock the
// goroutine to its thread. Benchmarks compare CPU time because the machine is shared and
// wall time mostly measures the neighbours. CLOCK_THREAD_CPUTIME_ID is exact, where
// getrusage only advances at scheduler ticks.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
