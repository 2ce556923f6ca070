package proc

import (
	"encoding/json"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

const supported = true

// init is the limits wrapper: in a process started by Apply it sets the
// limits and replaces itself with the tool before anything else runs.
func init() {
	spec, ok := os.LookupEnv(envLimits)
	if !ok {
		return
	}
	path := os.Getenv(envPath)
	fail := func(err error) {
		fmt.Fprintf(os.Stderr, "tolokaforge: start %s under resource limits: %v\n", path, err)
		os.Exit(127)
	}
	l, err := decode(spec)
	if err != nil {
		fail(err)
	}
	if os.Getenv(envSupervise) != "" {
		// The supervisor runs outside the tool's limits: a Go runtime
		// starts threads and reserves address space a tight RLIMIT_AS or
		// RLIMIT_NPROC would refuse, and it must outlive a tool that hits
		// them. Its child sets them (below) before it execs the tool.
		var c *Confinement
		if spec := os.Getenv(envConfine); spec != "" {
			c = &Confinement{}
			if err := json.Unmarshal([]byte(spec), c); err != nil {
				fail(fmt.Errorf("decode the confinement: %w", err))
			}
		}
		os.Exit(supervise(path, os.Args, withoutMarkers(os.Environ()), l, c))
	}
	for _, r := range []struct {
		res int
		v   uint64
	}{{unix.RLIMIT_AS, l.AddressSpace}, {unix.RLIMIT_NPROC, l.Processes}, {unix.RLIMIT_NOFILE, l.OpenFiles}} {
		if r.v == 0 {
			continue
		}
		// syscall's Setrlimit, not unix's: it also updates the NOFILE limit
		// the runtime would otherwise restore on exec.
		if err := syscall.Setrlimit(r.res, &syscall.Rlimit{Cur: r.v, Max: r.v}); err != nil {
			fail(fmt.Errorf("setrlimit %d: %w", r.res, err))
		}
	}
	if spec := os.Getenv(envConfineExec); spec != "" {
		// The supervisor's child: Landlock on this thread (init runs on
		// the main thread, the one that execs), then the tool, which keeps
		// it. The tool's domain is its own: the supervisor and the runner
		// are outside it, so it cannot signal them (Landlock's signal
		// scope).
		var c Confinement
		if err := json.Unmarshal([]byte(spec), &c); err != nil {
			fail(fmt.Errorf("decode the confinement: %w", err))
		}
		if err := c.restrictThread(path); err != nil {
			fail(err)
		}
		fail(syscall.Exec(path, os.Args, withoutMarkers(os.Environ())))
	}
	fail(syscall.Exec(path, os.Args, withoutMarkers(os.Environ())))
}
