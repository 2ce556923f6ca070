package execagent

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// reaper starts children and delivers each one's exit status to whoever
// started it. With all set it collects every child of the process
// (wait4(-1) on SIGCHLD and on a slow tick), orphans adopted as PID 1 or
// subreaper included, and dispatches by pid; otherwise it waits for each pid
// it started and nothing else, so it never steals the status of a child
// someone else in the process started (the test binary's).
type reaper struct {
	all     bool
	mu      sync.Mutex
	waiting map[int]chan syscall.WaitStatus
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

func newReaper(all bool) *reaper {
	r := &reaper{all: all, waiting: map[int]chan syscall.WaitStatus{}, stop: make(chan struct{}), done: make(chan struct{})}
	if all {
		go r.loop()
	} else {
		close(r.done)
	}
	return r
}

// start forks and execs argv0 and registers its pid before the reaper can
// see it exit: the registration happens under the lock the reap loop takes
// to dispatch.
func (r *reaper) start(argv0 string, argv []string, attr *syscall.ProcAttr) (int, <-chan syscall.WaitStatus, error) {
	ch := make(chan syscall.WaitStatus, 1)
	r.mu.Lock()
	pid, err := syscall.ForkExec(argv0, argv, attr)
	if err != nil {
		r.mu.Unlock()
		return 0, nil, fmt.Errorf("start %s: %w", argv0, err)
	}
	r.waiting[pid] = ch
	r.mu.Unlock()
	if !r.all {
		go r.waitOne(pid, ch)
	}
	return pid, ch, nil
}

// registered says whether pid is a child some call waits for.
func (r *reaper) registered(pid int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.waiting[pid]
	return ok
}

func (r *reaper) waitOne(pid int, ch chan syscall.WaitStatus) {
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(pid, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			// ECHILD: someone reaped it; report a kill rather than hang.
			ws = syscall.WaitStatus(syscall.SIGKILL)
		}
		break
	}
	r.mu.Lock()
	delete(r.waiting, pid)
	r.mu.Unlock()
	ch <- ws
}

func (r *reaper) loop() {
	defer close(r.done)
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGCHLD)
	defer signal.Stop(sigs)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		r.reapAll()
		select {
		case <-r.stop:
			return
		case <-sigs:
		case <-tick.C:
		}
	}
}

// reapAll collects every exited child and hands each status to its waiter;
// an orphan's status is dropped.
func (r *reaper) reapAll() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || pid <= 0 {
			return
		}
		r.mu.Lock()
		ch := r.waiting[pid]
		delete(r.waiting, pid)
		r.mu.Unlock()
		if ch != nil {
			ch <- ws
		}
	}
}

func (r *reaper) close() {
	r.once.Do(func() { close(r.stop) })
	<-r.done
}
