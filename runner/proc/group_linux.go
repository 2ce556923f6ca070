package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// KillGroup kills every process of process group pgid and returns once none
// of them runs: the members that are the caller's children (orphans it
// adopted as subreaper or PID 1) are reaped too, so none lingers as a
// zombie; a zombie some other process will reap does not hold it up. It is
// for a group the caller started (Setpgid) and whose leader it has already
// waited for: the group's id outlives its leader while members remain. It
// gives up when ctx ends, naming how many members were still running.
func KillGroup(ctx context.Context, pgid int) error {
	if pgid <= 1 {
		return fmt.Errorf("proc: kill process group %d: not a group a caller starts", pgid)
	}
	self := os.Getpid()
	for pass := 0; ; pass++ {
		err := syscall.Kill(-pgid, syscall.SIGKILL)
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		members, serr := groupMembers(pgid)
		if serr != nil {
			return serr
		}
		// Pending: a member still running, or a zombie that is the caller's
		// to reap and was not yet (it exited after the signal).
		pending := 0
		for _, m := range members {
			if m.ppid == self {
				var ws syscall.WaitStatus
				if got, werr := syscall.Wait4(m.pid, &ws, syscall.WNOHANG, nil); got == m.pid || errors.Is(werr, syscall.ECHILD) {
					continue
				}
				pending++
				continue
			}
			if !m.zombie {
				pending++
			}
		}
		if pending == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("proc: %d processes of group %d still running: %w", pending, pgid, ctx.Err())
		case <-time.After(time.Duration(min(pass+1, 10)) * 2 * time.Millisecond):
		}
	}
}

type member struct {
	pid, ppid int
	zombie    bool
}

// groupMembers is one pass over /proc: the processes of group pgid.
func groupMembers(pgid int) ([]member, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("proc: list /proc: %w", err)
	}
	want := strconv.Itoa(pgid)
	var out []member
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone
		}
		// The fields after the command's last ')' are state, ppid, pgrp, ...
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 3 || f[2] != want {
			continue
		}
		ppid, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		out = append(out, member{pid: pid, ppid: ppid, zombie: f[0] == "Z" || f[0] == "X"})
	}
	return out, nil
}
