package pyhost

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const debianPython = "/usr/bin/python3"

func needPython(tb testing.TB) {
	tb.Helper()
	if _, err := os.Stat(debianPython); err != nil {
		tb.Fatalf("%s is required (make python-deps installs it): %v", debianPython, err)
	}
}

// TestPythonHostUnit runs host.py's own unit tests with Debian's python3.
func TestPythonHostUnit(t *testing.T) {
	needPython(t)
	cmd := exec.Command(debianPython, "-B", "-m", "unittest", "test_host")
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python -m unittest test_host: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "OK") {
		t.Fatalf("unittest output without OK:\n%s", out)
	}
}

const toolsPy = `
import os, subprocess, time
class Set:
    @staticmethod
    def invoke(data, k, v):
        data["kv"][k]["v"] = v
        print("chatter on stdout")
        return "set"
class Fail:
    @staticmethod
    def invoke(data, k):
        data["kv"][k]["v"] = "half"
        raise RuntimeError("it broke")
class Sleep:
    @staticmethod
    def invoke(data, pidfile):
        p = subprocess.Popen(["sleep", "60"])
        open(pidfile, "w").write(str(p.pid))
        time.sleep(60)
`

func startHost(t *testing.T) (*Host, string) {
	t.Helper()
	needPython(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "kvtools.py"), []byte(toolsPy), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := Start(Config{Python: debianPython, Dir: dir, ScriptDir: t.TempDir(), Paths: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	ctx := context.Background()
	specs := []ToolSpec{
		{Name: "set", Style: StyleTauSync, Module: "kvtools", Class: "Set"},
		{Name: "fail", Style: StyleTauSync, Module: "kvtools", Class: "Fail"},
		{Name: "sleep", Style: StyleTauSync, Module: "kvtools", Class: "Sleep"},
	}
	if _, err := h.Load(ctx, specs); err != nil {
		t.Fatal(err)
	}
	tables := map[string]json.RawMessage{"kv": json.RawMessage(`[{"k":"a","v":1},{"k":"b","v":2}]`)}
	if err := h.Set(ctx, tables, map[string]string{"kv": "k"}, nil); err != nil {
		t.Fatal(err)
	}
	return h, dir
}

func TestHostCalls(t *testing.T) {
	h, _ := startHost(t)
	ctx := context.Background()
	res, err := h.Call(ctx, "set", json.RawMessage(`{"k":"a","v":5}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.Output != "set" {
		t.Fatalf("output %q: a tool's print must not reach the protocol", res.Output)
	}
	if got := string(res.Ops["kv"][0]); got != `{"op": "upsert", "record": {"k": "a", "v": 5}, "key": "k"}` {
		t.Fatalf("ops: %s", got)
	}

	_, err = h.Call(ctx, "fail", json.RawMessage(`{"k":"b"}`))
	var te *ToolError
	if !errors.As(err, &te) || te.Message != "RuntimeError: it broke" || te.Resync {
		t.Fatalf("raising tool: %#v", err)
	}
	// The failed call left nothing behind: b is unchanged, so setting it to
	// its own value is no change at all.
	res, err = h.Call(ctx, "set", json.RawMessage(`{"k":"b","v":2}`))
	if err != nil || len(res.Ops) != 0 {
		t.Fatalf("after a raising call: %v %v", res, err)
	}

	_, err = h.Call(ctx, "nope", nil)
	if !errors.As(err, &te) || te.Message != "no tool 'nope' loaded" {
		t.Fatalf("unknown tool: %v", err)
	}
}

func TestHostLoadError(t *testing.T) {
	h, _ := startHost(t)
	_, err := h.Load(context.Background(), []ToolSpec{{Name: "x", Style: StyleTauSync, Module: "missing_pkg.mod", Class: "X"}})
	var le *LoadError
	if !errors.As(err, &le) || le.Tool != "x" || le.Message != "module missing_pkg.mod: ModuleNotFoundError: No module named 'missing_pkg'" {
		t.Fatalf("load error: %#v", err)
	}
}

// A call whose context ends kills the host's whole group (the tool and what
// it started): nothing keeps mutating state nobody will read.
func TestHostCallTimeoutKillsTheGroup(t *testing.T) {
	h, dir := startHost(t)
	pidfile := filepath.Join(dir, "child.pid")
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	args, _ := json.Marshal(map[string]string{"pidfile": pidfile})
	_, err := h.Call(ctx, "sleep", args)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the deadline", err)
	}
	raw, rerr := os.ReadFile(pidfile)
	if rerr != nil {
		t.Fatal(rerr)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the tool's child %d outlived the host", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := h.Call(context.Background(), "set", json.RawMessage(`{"k":"a","v":1}`)); !errors.Is(err, ErrClosed) {
		t.Fatalf("after the kill: %v, want ErrClosed", err)
	}
}

func TestHostStartFailure(t *testing.T) {
	_, err := Start(Config{Python: "/nonexistent/python3", Dir: t.TempDir(), ScriptDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), `start python tool host "/nonexistent/python3"`) {
		t.Fatalf("err = %v", err)
	}
}

func FuzzDecodeAnswer(f *testing.F) {
	for _, s := range []string{
		`{"ok": true, "output": "x", "ops": {"t": [{"op": "insert", "record": {}}]}}`,
		`{"ok": false}`,
		`{"ok": true, "tools": {"a": {"description": "d", "parameters": {"type": "object"}}}}`,
		`not json`, `[]`, `{"ops": {"t": 1}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		a, err := decodeAnswer(line)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "python tool host answered something that is not its protocol") {
				t.Fatalf("error without context: %v", err)
			}
			return
		}
		if !a.OK && a.Error == "" {
			t.Fatal("a failure must carry a message")
		}
	})
}
