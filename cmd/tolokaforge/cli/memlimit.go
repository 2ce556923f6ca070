package cli

import (
	"fmt"
	"math"
	"runtime/debug"
	"strconv"
	"strings"
)

// MemoryLimitEnv names the container's memory limit in bytes, as the
// manifests set it from the downward API (resourceFieldRef limits.memory).
const MemoryLimitEnv = "TOLOKAFORGE_MEMORY_LIMIT"

// memoryLimitShare of the container's limit is the Go runtime's soft limit:
// the collector works harder as the heap nears it, and the rest is headroom
// for what the runtime does not count (thread stacks, cgo, the page cache of
// mapped files) before the kernel's OOM killer would act.
const memoryLimitShare = 0.9

// memoryLimit says which soft memory limit the process should run under:
// none when GOMEMLIMIT is set (the runtime has applied it; an operator's
// explicit choice wins) or the container has no limit; otherwise 90% of
// the limit in MemoryLimitEnv. A value that is not a positive byte count is
// an error naming the variable, so a broken manifest fails at start rather
// than running without the limit unnoticed.
func memoryLimit(getenv func(string) string) (int64, error) {
	if getenv("GOMEMLIMIT") != "" {
		return 0, nil
	}
	v := strings.TrimSpace(getenv(MemoryLimitEnv))
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s=%q: want the container's memory limit as a positive number of bytes (resourceFieldRef limits.memory)", MemoryLimitEnv, v)
	}
	if n == math.MaxInt64 {
		// The downward API's value for a container without a limit is the
		// node's allocatable memory, never this; treat it as no limit.
		return 0, nil
	}
	return int64(float64(n) * memoryLimitShare), nil
}

// applyMemoryLimit sets the runtime's soft memory limit from the
// environment and returns it (0: unchanged).
func applyMemoryLimit(getenv func(string) string) (int64, error) {
	n, err := memoryLimit(getenv)
	if err != nil || n == 0 {
		return 0, err
	}
	debug.SetMemoryLimit(n)
	return n, nil
}
