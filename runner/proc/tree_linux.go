package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// SetSubreaper makes the calling process the reaper of its orphaned
// descendants (PR_SET_CHILD_SUBREAPER): a tool that double-forks stays in
// the runner's process tree instead of escaping to init, and KillTagged
// reaps what it kills. In a pod the runner is PID 1 and already is.
func SetSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("proc: PR_SET_CHILD_SUBREAPER: %w", err)
	}
	return nil
}

// SetNotDumpable clears the calling process's dumpable flag
// (PR_SET_DUMPABLE 0): its /proc/<pid>/environ, mem, maps and fds become
// root's, so no process of the same user (a tool, a check) reads the
// environment it started with (a CLI's provider keys) or its memory, nor
// ptraces it. Its children get the flag back when they exec. The cost: no
// core dump and no debugger attaching without privilege.
func SetNotDumpable() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("proc: PR_SET_DUMPABLE 0: %w", err)
	}
	return nil
}

// tags remembers, per process, the value of the tag's variable its
// environment was first seen with, so a scan reads each process's environ
// once in its life instead of once per pass of every cleanup: the in-process
// runners of `tolokaforge dev` and the benchmarks share one /proc of a few
// hundred processes, where the rereads were a tenth of the process's CPU. A
// process is known by pid and start time (a reused pid is another process).
// Only a present variable is remembered: a child between fork and exec still
// has the runner's environment, without it, and is read again after its
// exec. What is remembered stays: a tool that rewrites or clears its
// environment later (exec with env -i) is still its trial's.
var tags = struct {
	sync.Mutex
	m map[int]tagEntry
}{m: map[int]tagEntry{}}

type tagEntry struct {
	start string
	value string
}

// tagOf is the value of key in pid's environment, and whether it is there.
func tagOf(pid int, name, start string, key []byte) (string, bool) {
	tags.Lock()
	e, ok := tags.m[pid]
	tags.Unlock()
	if ok && e.start == start {
		return e.value, true
	}
	env, err := os.ReadFile("/proc/" + name + "/environ")
	if err != nil {
		return "", false
	}
	for _, kv := range bytes.Split(env, []byte{0}) {
		if v, found := bytes.CutPrefix(kv, key); found {
			tags.Lock()
			tags.m[pid] = tagEntry{start: start, value: string(v)}
			tags.Unlock()
			return string(v), true
		}
	}
	return "", false
}

// forgetGone drops the remembered tags of processes a scan did not find.
func forgetGone(live map[int]int) {
	tags.Lock()
	defer tags.Unlock()
	for pid := range tags.m {
		if _, ok := live[pid]; !ok {
			delete(tags.m, pid)
		}
	}
}

// scan is one pass over /proc: each live process's parent and whether its
// environment holds tag (KEY=VALUE).
func scan(tag []byte) (parents map[int]int, tagged, zombies map[int]bool, err error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("proc: list /proc: %w", err)
	}
	k, v, _ := bytes.Cut(tag, []byte{'='})
	key, value := append(append([]byte(nil), k...), '='), string(v)
	parents, tagged, zombies = map[int]int{}, map[int]bool{}, map[int]bool{}
	self := os.Getpid()
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
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 {
			continue
		}
		pp, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		parents[pid] = pp
		if f[0] == "Z" {
			// A zombie runs nothing (and has no environment to read).
			zombies[pid] = true
			continue
		}
		start := ""
		if len(f) > 19 {
			start = f[19] // starttime, field 22 of stat
		}
		if v, ok := tagOf(pid, e.Name(), start, key); ok && v == value {
			tagged[pid] = true
		}
	}
	forgetGone(parents)
	return parents, tagged, zombies, nil
}

// KillTagged kills every process whose environment holds the entry tag
// (KEY=VALUE, inherited by everything a tool starts unless it clears its
// environment) and every descendant of one, and reaps those that were
// reparented to the caller. It repeats until a pass finds nothing (a process
// may fork while the previous pass kills) or ctx ends, and returns the pids
// it killed.
func KillTagged(ctx context.Context, tag string) ([]int, error) {
	var killed []int
	seen := map[int]bool{}
	self := os.Getpid()
	for pass := 0; ; pass++ {
		parents, tagged, zombies, err := scan([]byte(tag))
		if err != nil {
			return killed, err
		}
		doomed := map[int]bool{}
		mark := func(pid int) bool {
			// A process is doomed if it or an ancestor is tagged.
			for p, depth := pid, 0; p > 1 && depth < 4096; p, depth = parents[p], depth+1 {
				if tagged[p] || doomed[p] {
					return true
				}
			}
			return false
		}
		for pid := range parents {
			if mark(pid) {
				doomed[pid] = true
			}
		}
		reaped := reapZombies(parents, doomed, self)
		live := 0
		for pid := range doomed {
			if reaped[pid] || zombies[pid] {
				continue
			}
			if err := syscall.Kill(pid, syscall.SIGKILL); err == nil {
				live++
				if !seen[pid] {
					seen[pid] = true
					killed = append(killed, pid)
				}
			}
		}
		if live == 0 {
			// Nothing left running; reap what the last pass killed.
			waitReap(ctx, killed, self)
			return killed, nil
		}
		select {
		case <-ctx.Done():
			return killed, fmt.Errorf("proc: %d processes still alive when the deadline came: %w", live, ctx.Err())
		case <-time.After(time.Duration(min(pass+1, 10)) * 5 * time.Millisecond):
		}
	}
}

// reapZombies waits for doomed processes that are the caller's children
// (orphans adopted as subreaper or PID 1) and have exited. Only those: the
// caller's own exec.Cmd children are waited by their Cmd.
func reapZombies(parents map[int]int, doomed map[int]bool, self int) map[int]bool {
	out := map[int]bool{}
	for pid := range doomed {
		if parents[pid] != self {
			continue
		}
		var ws syscall.WaitStatus
		if got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); err == nil && got == pid {
			out[pid] = true
		}
	}
	return out
}

// waitReap reaps killed children of the caller until they are all gone or
// ctx ends, so none lingers as a zombie.
func waitReap(ctx context.Context, pids []int, self int) {
	for _, pid := range pids {
		for {
			stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
			if err != nil {
				break // gone
			}
			i := bytes.LastIndexByte(stat, ')')
			f := strings.Fields(string(stat[i+1:]))
			if len(f) < 2 || f[1] != strconv.Itoa(self) {
				break // someone else's to reap
			}
			var ws syscall.WaitStatus
			got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
			if got == pid || errors.Is(err, syscall.ECHILD) {
				break
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
}
