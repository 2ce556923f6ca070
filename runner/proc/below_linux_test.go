package proc_test

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"tolokaforge.io/operator/runner/proc"
)

// Below lists what runs below this process with the owner its environment or
// its nearest tagged ancestor names, and leaves out zombies and everything
// that is not below it.
func TestBelowNamesEachProcesssOwner(t *testing.T) {
	const key = "TOLOKAFORGE_TEST_OWNER"
	path := "PATH=" + os.Getenv("PATH")
	start := func(env []string, script string) (*exec.Cmd, int) {
		t.Helper()
		cmd := exec.Command("sh", "-c", script)
		cmd.Env = env
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			t.Fatalf("%s: %v", script, err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(line))
		if err != nil {
			t.Fatalf("%s printed %q", script, line)
		}
		return cmd, pid
	}
	// A tagged shell whose child cleared its environment before anyone saw it:
	// the child's owner is its parent's.
	tagged, cleared := start([]string{path, key + "=trial-a"}, `env -i sleep 30 & echo $!; wait`)
	// A process nobody tagged.
	_, plain := start([]string{path}, `sleep 30 & echo $!; wait`)
	// A zombie: exited, not yet waited.
	zombie := exec.Command("true")
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = zombie.Wait() }()
	waitState(t, zombie.Process.Pid, "Z")
	waitComm(t, cleared, "sleep")

	got, err := proc.Below(key)
	if err != nil {
		t.Fatal(err)
	}
	byPid := map[int]proc.Process{}
	for _, p := range got {
		byPid[p.PID] = p
	}
	for _, tc := range []struct {
		name      string
		pid       int
		comm      string
		owner     string
		wantFound bool
	}{
		{"the tagged shell", tagged.Process.Pid, "sh", "trial-a", true},
		{"its child with an empty environment", cleared, "sleep", "trial-a", true},
		{"an untagged process", plain, "sleep", "", true},
		{"a zombie", zombie.Process.Pid, "", "", false},
		{"init", 1, "", "", false},
		{"this process", os.Getpid(), "", "", false},
	} {
		p, found := byPid[tc.pid]
		if found != tc.wantFound {
			t.Errorf("%s (pid %d): listed %t, want %t (%+v)", tc.name, tc.pid, found, tc.wantFound, got)
			continue
		}
		if found && (p.Comm != tc.comm || p.Owner != tc.owner) {
			t.Errorf("%s: %+v, want comm %q owner %q", tc.name, p, tc.comm, tc.owner)
		}
	}
}

// waitState waits (bounded) for pid's state letter in /proc/<pid>/stat.
func waitState(t *testing.T, pid int, state string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		stat, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		s := string(stat)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && strings.HasPrefix(s[i+1:], " "+state) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d: stat %q, want state %s", pid, s, state)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitComm waits (bounded) for pid to have exec'd comm.
func waitComm(t *testing.T, pid int, comm string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		if strings.TrimSpace(string(b)) == comm {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d: comm %q, want %q", pid, b, comm)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
