package proc

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// Environment markers of the wrapper; removed before the tool starts.
const (
	envLimits    = "TOLOKAFORGE_PROC_RLIMITS"
	envPath      = "TOLOKAFORGE_PROC_PATH"
	envSupervise = "TOLOKAFORGE_PROC_SUPERVISE"
	envConfine   = "TOLOKAFORGE_PROC_CONFINE"
	// envConfineExec marks the supervisor's child: confine this thread,
	// then exec the tool.
	envConfineExec = "TOLOKAFORGE_PROC_CONFINE_EXEC"
)

// Limits are the resource limits of one tool process and everything it
// starts (rlimits are inherited). Zero leaves a limit as the runner's.
type Limits struct {
	// AddressSpace is RLIMIT_AS in bytes: an allocation beyond it fails
	// (ENOMEM) instead of pushing the pod to its memory limit, where the
	// OOM killer would take the runner and every trial with it.
	AddressSpace uint64
	// Processes is RLIMIT_NPROC: the most processes (threads, on Linux) the
	// pod's user may have, so a fork bomb stops at the limit. It counts every
	// process of the user, the runner's threads included, and does not bind
	// root.
	Processes uint64
	// OpenFiles is RLIMIT_NOFILE.
	OpenFiles uint64
}

// DefaultLimits are the runner binary's: generous for a real tool (a Go or
// Python MCP server reserves far more address space than it touches), tight
// enough that one runaway tool cannot take the pod down. RLIMIT_NPROC counts
// every process of the UID on the node (without a user namespace), other
// pods running as the same user included, so it is only a backstop against
// fork bombs; the kubelet's pod PID limit is the precise bound.
var DefaultLimits = Limits{AddressSpace: 4 << 30, Processes: 4096, OpenFiles: 1024}

// IsZero reports whether no limit is set.
func (l Limits) IsZero() bool { return l == Limits{} }

func (l Limits) String() string {
	return fmt.Sprintf("RLIMIT_AS=%d RLIMIT_NPROC=%d RLIMIT_NOFILE=%d", l.AddressSpace, l.Processes, l.OpenFiles)
}

func (l Limits) encode() string {
	return fmt.Sprintf("as=%d,nproc=%d,nofile=%d", l.AddressSpace, l.Processes, l.OpenFiles)
}

func decode(s string) (Limits, error) {
	var l Limits
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return l, fmt.Errorf("malformed limit %q", kv)
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return l, fmt.Errorf("limit %s: %w", k, err)
		}
		switch k {
		case "as":
			l.AddressSpace = n
		case "nproc":
			l.Processes = n
		case "nofile":
			l.OpenFiles = n
		default:
			return l, fmt.Errorf("unknown limit %q", k)
		}
	}
	return l, nil
}

// errUnsupported is returned by Apply where rlimits cannot be set before
// exec (not Linux).
var errUnsupported = errors.New("proc: resource limits for tool processes need Linux")

// Apply makes cmd start under l: cmd runs the Launcher (the small
// tolokaforge-toolexec, or the current executable), whose init applies the
// limits and execs cmd's original program with cmd's arguments. Call it
// after exec.Command and before Start. A zero l changes nothing.
func Apply(cmd *exec.Cmd, l Limits) error {
	if l.IsZero() {
		return nil
	}
	if !supported {
		return errUnsupported
	}
	if cmd.Err != nil {
		return cmd.Err
	}
	wrapper, err := Launcher()
	if err != nil {
		return err
	}
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(append([]string(nil), env...), envLimits+"="+l.encode(), envPath+"="+cmd.Path)
	cmd.Path = wrapper
	return nil
}

// Supervise is Apply (with l, which may be zero) and more: the wrapper does
// not exec the tool but stays as its supervisor, a child subreaper
// (PR_SET_CHILD_SUBREAPER) that runs the tool as its child. Whatever the
// tool starts stays below the supervisor, whatever it does to its
// environment, group or session: an orphan reparents to the supervisor, not
// to the runner. When the tool exits, or the supervisor gets SIGTERM (see
// Stop), it kills and reaps everything below it and exits with the tool's
// status; so cmd's process is gone only when its whole tree is.
//
// A non-nil c confines the tool's file system access (Landlock, where the
// kernel has it; see Confinement and LandlockABI).
func Supervise(cmd *exec.Cmd, l Limits, c *Confinement) error {
	if !supported {
		return Apply(cmd, l)
	}
	if cmd.Err != nil {
		return cmd.Err
	}
	if _, err := exec.LookPath(cmd.Path); err != nil {
		// Not startable: left unwrapped, so Start reports it as it would
		// (the supervisor could only exit 127 after a successful Start).
		return nil
	}
	wrapper, err := Launcher()
	if err != nil {
		return err
	}
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(append([]string(nil), env...), envLimits+"="+l.encode(), envPath+"="+cmd.Path, envSupervise+"=1")
	if c != nil {
		spec, err := json.Marshal(c)
		if err != nil {
			return fmt.Errorf("proc: encode the confinement: %w", err)
		}
		cmd.Env = append(cmd.Env, envConfine+"="+string(spec))
	}
	cmd.Path = wrapper
	return nil
}

// withoutMarkers is env without the wrapper's variables.
func withoutMarkers(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if strings.HasPrefix(kv, envLimits+"=") || strings.HasPrefix(kv, envPath+"=") || strings.HasPrefix(kv, envSupervise+"=") ||
			strings.HasPrefix(kv, envConfine+"=") || strings.HasPrefix(kv, envConfineExec+"=") {
			continue
		}
		out = append(out, kv)
	}
	return out
}
