package execagent_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	pb "tolokaforge.io/operator/api/execagentpb"
)

// alive says whether pid runs (a zombie does not).
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i > 0 && !strings.HasPrefix(strings.TrimSpace(string(stat[i+1:])), "Z")
}

func TestKillAllDoubleForked(t *testing.T) {
	a := startAgent(t, nil)
	// A detached grandchild in its own session that ignores TERM: its
	// parent exits at once, so it is an orphan the agent adopted.
	resp := a.run(t, `( setsid bash -c 'trap "" TERM; exec sleep 1000' </dev/null >/dev/null 2>&1 & echo $! ) `)
	pid, err := strconv.Atoi(strings.TrimSpace(string(resp.Stdout)))
	if err != nil {
		t.Fatalf("stdout %q: %v", resp.Stdout, err)
	}
	deadline := time.Now().Add(2 * time.Second)
	// Wait for the exec: before it, the process may not ignore TERM yet.
	for comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm"); string(comm) != "sleep\n"; comm, _ = os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm") {
		if time.Now().After(deadline) {
			t.Fatalf("the double-forked process %d never became sleep (%q)", pid, comm)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if pp := ppid(pid); pp != os.Getpid() {
		t.Fatalf("process %d has parent %d, not this process %d (a subreaper)", pid, pp, os.Getpid())
	}
	start := time.Now()
	k, err := a.c.KillAll(context.Background(), &pb.KillAllRequest{GraceMs: 200})
	if err != nil {
		t.Fatal(err)
	}
	if k.Killed < 1 {
		t.Fatalf("killed %d, want at least 1", k.Killed)
	}
	if alive(pid) {
		t.Fatalf("process %d survived KillAll", pid)
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
		t.Fatalf("process %d is a zombie nobody reaped", pid)
	}
	if took := time.Since(start); took < 200*time.Millisecond {
		t.Fatalf("KillAll took %s: the TERM-ignoring process died before the grace", took)
	}
	// KillAll spares the agent: it still answers.
	if r := a.run(t, "echo still"); string(r.Stdout) != "still\n" {
		t.Fatalf("after KillAll: %q", r.Stdout)
	}
}

func ppid(pid int) int {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(stat), ')')
	f := strings.Fields(string(stat[i+1:]))
	n, _ := strconv.Atoi(f[1])
	return n
}
