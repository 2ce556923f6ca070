package proc

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Process is one live process below the caller (Below).
type Process struct {
	PID  int
	PPID int
	// Comm is the kernel's short command name (/proc/<pid>/stat), for
	// messages.
	Comm string
	// Owner is the value of Below's variable in the environment of the
	// process or of its nearest ancestor below the caller that carries it,
	// as each was first seen (a process that cleared its environment later
	// keeps its owner); "" when none does.
	Owner string
}

// Below lists every live (not zombie, not dead) process that descends from
// the calling process, naming the owner each carries in the environment
// variable key (the runner's trial tag, TOLOKAFORGE_TRIAL_DIR): a slot's
// runner checks, after a trial's cleanup, that whatever still runs below it
// belongs to a trial still registered. As subreaper (PID 1 in a pod) the
// runner is the ancestor of every orphan its tools left, whatever session or
// environment they took.
func Below(key string) ([]Process, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("proc: list /proc: %w", err)
	}
	k := []byte(key + "=")
	self := os.Getpid()
	type info struct {
		ppid        int
		comm, owner string
		tagged      bool
		live        bool
	}
	all := map[int]*info{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone, or not ours to read
		}
		// The command name is in parentheses and may hold anything; the
		// fields after its last ')' are state, ppid, ...
		open, end := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
		if open < 0 || end < open {
			continue
		}
		f := strings.Fields(string(stat[end+1:]))
		if len(f) < 2 {
			continue
		}
		pp, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		in := &info{ppid: pp, comm: string(stat[open+1 : end]), live: f[0] != "Z" && f[0] != "X"}
		if in.live {
			start := ""
			if len(f) > 19 {
				start = f[19] // starttime, field 22 of stat
			}
			in.owner, in.tagged = tagOf(pid, e.Name(), start, k)
		}
		all[pid] = in
	}
	var out []Process
	for pid, in := range all {
		if !in.live {
			continue
		}
		below, owner, found := false, in.owner, in.tagged
		for p, depth := in.ppid, 0; depth < 4096; depth++ {
			if p == self {
				below = true
				break
			}
			a, ok := all[p]
			if !ok {
				break // reached init, or a process outside our view
			}
			if !found && a.tagged {
				owner, found = a.owner, true
			}
			p = a.ppid
		}
		if below {
			out = append(out, Process{PID: pid, PPID: in.ppid, Comm: in.comm, Owner: owner})
		}
	}
	return out, nil
}
