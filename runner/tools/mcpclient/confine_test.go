package mcpclient

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"tolokaforge.io/operator/runner/proc"
)

// debianPython is the system interpreter (standard library only): the
// fixture server below needs nothing else.
const debianPython = "/usr/bin/python3"

// hostileServer is a standard-library stdio MCP server (initialize,
// tools/list, tools/call) whose tools play a hostile pack: detach forks,
// setsid()s, forks again and execs a shell loop with an empty environment
// that appends its pid to loop in the server's working directory every
// 20 ms; read answers a file's contents or the error opening it; big
// answers n bytes; echo answers its text.
const hostileServer = `
import json, os, sys
def detach():
    path = os.path.join(os.getcwd(), 'loop')
    pid = os.fork()
    if pid == 0:
        os.setsid()
        if os.fork() == 0:
            os.execve('/bin/sh', ['sh', '-c', 'while :; do echo $$ >> "$0"; sleep 0.02; done', path], {})
        os._exit(0)
    os.waitpid(pid, 0)
    return 'detached'
def read(a):
    try:
        with open(a['path']) as f:
            return 'READ ' + f.read()
    except OSError as e:
        return 'ERROR ' + type(e).__name__
def call(name, a):
    if name == 'detach':
        return detach()
    if name == 'read':
        return read(a)
    if name == 'big':
        return 'x' * a['n']
    return a.get('text', '')
TOOLS = [{"name": n, "inputSchema": {"type": "object"}} for n in ("detach", "read", "big", "echo")]
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    m = msg.get("method")
    if m == "initialize":
        res = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
               "serverInfo": {"name": "hostile", "version": "1"}}
    elif m == "tools/list":
        res = {"tools": TOOLS}
    elif m == "tools/call":
        p = msg["params"]
        res = {"content": [{"type": "text", "text": call(p["name"], p.get("arguments") or {})}]}
    else:
        res = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": res}) + "\n")
    sys.stdout.flush()
`

// startHostile starts hostileServer from its own (read-only) folder with
// Dir as its working directory, under cfg's changes.
func startHostile(t *testing.T, mutate func(*Config)) (*Server, string) {
	t.Helper()
	if _, err := os.Stat(debianPython); err != nil {
		t.Skipf("no %s here", debianPython)
	}
	scripts, dir := t.TempDir(), t.TempDir()
	script := filepath.Join(scripts, "server.py")
	if err := os.WriteFile(script, []byte(hostileServer), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Command: []string{debianPython, "-I", "-B", script}, Dir: dir, KillGrace: time.Second,
		Limits:  proc.DefaultLimits,
		Confine: &proc.Confinement{ReadOnly: []string{scripts}, ReadWrite: []string{dir}}}
	if mutate != nil {
		mutate(&cfg)
	}
	s, err := Start(testCtx(t), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, dir
}

// loopOf waits for the detached loop's first line in path and returns its
// pid, checking that it runs in an empty environment in a session other
// than the server's (else the test proves nothing).
func loopOf(t *testing.T, path string, server int) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		raw, _ := os.ReadFile(path)
		if line, _, ok := strings.Cut(string(raw), "\n"); ok {
			pid, err := strconv.Atoi(line)
			if err != nil {
				t.Fatalf("loop wrote %q", line)
			}
			if env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid)); err != nil || len(env) != 0 {
				t.Fatalf("the loop's environment is %q (%v), want empty", env, err)
			}
			sid, err := getsid(pid)
			serverSid, serr := getsid(server)
			if err != nil || serr != nil || sid == serverSid {
				t.Fatalf("the loop's session is %d (%v), the server's %d (%v): want another", sid, err, serverSid, serr)
			}
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("the detached loop never wrote %s", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func getsid(pid int) (int, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return strconv.Atoi(f[3]) // state ppid pgrp session
}

// A supervised server's tool that double-forks a setsid child with an empty
// environment leaves nothing behind: Close (and Restart) end the
// supervisor's whole subtree, so the loop is gone and its file stops
// growing.
func TestSupervisedServerLeavesNothingBehind(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh here")
	}
	for _, end := range []string{"Close", "Restart"} {
		t.Run(end, func(t *testing.T) {
			s, dir := startHostile(t, nil)
			if out := mustCall(t, s, "detach", `{}`); out != "detached" {
				t.Fatalf("detach = %q", out)
			}
			loop := filepath.Join(dir, "loop")
			pid := loopOf(t, loop, s.PID())
			switch end {
			case "Close":
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			case "Restart":
				if err := s.Restart(testCtx(t)); err != nil {
					t.Fatal(err)
				}
				if out := mustCall(t, s, "echo", `{"text":"again"}`); out != "again" {
					t.Errorf("echo after Restart = %q", out)
				}
			}
			if !gone(pid) {
				t.Fatalf("the detached loop %d survived %s", pid, end)
			}
			before, err := os.ReadFile(loop)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond)
			after, _ := os.ReadFile(loop)
			if len(after) != len(before) {
				t.Errorf("%s grew from %d to %d bytes after %s: a writer survived", loop, len(before), len(after), end)
			}
		})
	}
}

// A supervised server's tool reads only what its Confinement allows: a
// file in another folder (another trial's, a secret) is an error, its own
// working folder is not.
func TestSupervisedServerCannotReadOutside(t *testing.T) {
	if v, err := proc.LandlockABI(); err != nil {
		t.Skipf("no Landlock on this kernel (%v): nothing confines the server", err)
	} else {
		t.Logf("Landlock ABI %d", v)
	}
	secret := filepath.Join(t.TempDir(), "judge-api-key")
	if err := os.WriteFile(secret, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, dir := startHostile(t, nil)
	own := filepath.Join(dir, "own.txt")
	if err := os.WriteFile(own, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, path, want string }{
		{"a file outside its folders", secret, "ERROR PermissionError"},
		{"a file in its folder", own, "READ mine"},
	} {
		args, _ := json.Marshal(map[string]string{"path": tc.path})
		if got := mustCall(t, s, "read", string(args)); got != tc.want {
			t.Errorf("%s: read = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A result over MaxOutput (default 1 MiB) is a tool error naming its size
// and the limit, in the Python tool host's words, and the same server
// answers the next call.
func TestCallOverMaxOutputIsAToolError(t *testing.T) {
	for _, tc := range []struct {
		name    string
		limit   int
		n       int
		wantErr string // "": the n bytes come back
	}{
		{name: "5 MiB under the default", n: 5 << 20,
			wantErr: "the tool's result is 5242880 bytes, over the limit of 1048576 bytes; it was not returned"},
		{name: "the default exactly", n: 1 << 20},
		{name: "200 bytes under 100", limit: 100, n: 200,
			wantErr: "the tool's result is 200 bytes, over the limit of 100 bytes; it was not returned"},
		{name: "2 MiB under 4 MiB", limit: 4 << 20, n: 2 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := startHostile(t, func(c *Config) { c.MaxOutput = tc.limit })
			out, isErr, err := s.Call(testCtx(t), "big", json.RawMessage(fmt.Sprintf(`{"n":%d}`, tc.n)))
			if err != nil {
				t.Fatalf("big(%d): %v", tc.n, err)
			}
			if tc.wantErr == "" {
				if isErr || len(out) != tc.n {
					t.Fatalf("big(%d) = %d bytes, isError=%v; want the %d bytes", tc.n, len(out), isErr, tc.n)
				}
				return
			}
			if !isErr || out != tc.wantErr {
				t.Fatalf("big(%d) = %.100q, isError=%v; want the tool error %q", tc.n, out, isErr, tc.wantErr)
			}
			if got := mustCall(t, s, "echo", `{"text":"still here"}`); got != "still here" {
				t.Errorf("the call after a refused result = %q", got)
			}
		})
	}
}

// IsOverLimit knows Call's refusal and nothing else.
func TestIsOverLimit(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		want bool
	}{
		{OverLimit(5<<20, 1<<20), true},
		{OverLimit(2, 1), true},
		{"card declined", false},
		{OverLimit(2, 1) + " (and more)", false},
		{"", false},
	} {
		if got := IsOverLimit(tc.msg); got != tc.want {
			t.Errorf("IsOverLimit(%q) = %v, want %v", tc.msg, got, tc.want)
		}
	}
}

// Close asks a supervised server to exit on its own first (stdin closed and
// SIGTERM to the server, not its supervisor): a server that ignores stdin's
// end but exits on SIGTERM is gone well within its grace.
func TestSupervisedCloseSignalsTheServer(t *testing.T) {
	s := startShop(t, func(c *Config) {
		// The shop exits at stdin's end; the shell then loops until a
		// SIGTERM, which its trap ends it on.
		c.Command = []string{"sh", "-c", `trap 'exit 0' TERM; "$0"; while :; do sleep 0.01; done`, shopServer}
		c.KillGrace = 10 * time.Second
		c.Confine = &proc.Confinement{ReadOnlyFiles: []string{shopServer}, ReadWrite: []string{c.Dir}}
	})
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Close took %s: the server was not asked to exit before its 10s grace ran out", d)
	}
}
