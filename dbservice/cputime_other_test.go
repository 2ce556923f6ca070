//go:build !linux

package dbservice

import "time"

var cpuEpoch = time.Now()

// threadCPU falls back to wall time where per-thread CPU time is not available.
func threadCPU() time.Duration { return time.Since(cpuEpoch) }
