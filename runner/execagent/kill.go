package execagent

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

	"google.golang.org/grpc/codes"

	pb "tolokaforge.io/operator/api/execagentpb"
)

// KillAll sends SIGTERM (and SIGCONT) to every process of the container but
// the agent, waits grace_ms for them to exit, sends SIGKILL to whatever is
// left (repeating while processes fork), and waits until they are reaped.
// As PID 1 that is every other process of the PID namespace; otherwise it
// is the agent's descendants (by PPid chains; orphans come back to the
// agent, a child subreaper).
func (s *Server) KillAll(ctx context.Context, req *pb.KillAllRequest) (*pb.KillAllResponse, error) {
	grace := time.Duration(req.GetGraceMs()) * time.Millisecond
	if grace <= 0 {
		grace = DefaultKillGraceMS * time.Millisecond
	}
	killed, err := s.killAll(ctx, grace)
	if err != nil {
		return nil, fail(codes.Unavailable, err, "kill all (%d signalled)", killed)
	}
	return &pb.KillAllResponse{Killed: int32(killed)}, nil
}

func (s *Server) killAll(ctx context.Context, grace time.Duration) (int, error) {
	self := os.Getpid()
	seen := map[int]bool{}
	targets, err := s.targets(self)
	if err != nil {
		return 0, err
	}
	for pid, st := range targets {
		if st.zombie {
			continue
		}
		if syscall.Kill(pid, syscall.SIGTERM) == nil {
			seen[pid] = true
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}
	deadline := time.Now().Add(grace)
	for pass := 0; ; pass++ {
		targets, err := s.targets(self)
		if err != nil {
			return len(seen), err
		}
		live := 0
		for pid, st := range targets {
			if st.zombie {
				continue
			}
			live++
			if time.Now().After(deadline) {
				if syscall.Kill(pid, syscall.SIGKILL) == nil {
					seen[pid] = true
				}
			}
		}
		s.reapAdopted(targets, self)
		if live == 0 && s.zombiesGone(targets, self) {
			return len(seen), nil
		}
		select {
		case <-ctx.Done():
			return len(seen), fmt.Errorf("%d processes still alive: %w", live, ctx.Err())
		case <-time.After(time.Duration(min(pass+1, 10)) * 5 * time.Millisecond):
		}
	}
}

// procState is one process as /proc shows it.
type procState struct {
	ppid   int
	zombie bool
}

// targets are the processes KillAll is after: every process but self when
// self is PID 1, else self's descendants.
func (s *Server) targets(self int) (map[int]procState, error) {
	all, err := scanProc()
	if err != nil {
		return nil, err
	}
	delete(all, self)
	if self == 1 {
		return all, nil
	}
	out := map[int]procState{}
	for pid, st := range all {
		for p, depth := st.ppid, 0; p > 0 && depth < 4096; depth++ {
			if p == self {
				out[pid] = st
				break
			}
			parent, ok := all[p]
			if !ok {
				break
			}
			p = parent.ppid
		}
	}
	return out, nil
}

// reapAdopted waits (without blocking) for exited targets that are the
// agent's children and nobody else waits for. With ReapAll the reaper
// collects them.
func (s *Server) reapAdopted(targets map[int]procState, self int) {
	if s.opts.ReapAll {
		return
	}
	for pid, st := range targets {
		if st.ppid != self || !st.zombie || s.reaper.registered(pid) {
			continue
		}
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
	}
}

// zombiesGone says no zombie among targets is still the agent's to reap
// (a zombie whose parent is another target goes when its parent dies).
func (s *Server) zombiesGone(targets map[int]procState, self int) bool {
	for pid, st := range targets {
		if st.zombie && st.ppid == self && !s.reaper.registered(pid) {
			if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
				return false
			}
		}
	}
	return true
}

// scanProc is one pass over /proc: each process's parent and whether it is
// a zombie.
func scanProc() (map[int]procState, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list /proc: %w", err)
	}
	out := map[int]procState{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
				continue // gone
			}
			continue
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
		ppid, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		out[pid] = procState{ppid: ppid, zombie: f[0] == "Z" || f[0] == "X"}
	}
	return out, nil
}
