package pyhost

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"tolokaforge.io/operator/runner/proc"
)

// hostModes are the ways a host starts, in the same run: the limits wrapper
// exec'ing the interpreter (before issue 40), the supervisor, and the
// supervisor with Landlock.
func hostModes(dir string) []struct {
	name    string
	wrap    func(*exec.Cmd, proc.Limits, *proc.Confinement) error
	confine *proc.Confinement
} {
	plain := func(c *exec.Cmd, l proc.Limits, _ *proc.Confinement) error { return proc.Apply(c, l) }
	return []struct {
		name    string
		wrap    func(*exec.Cmd, proc.Limits, *proc.Confinement) error
		confine *proc.Confinement
	}{
		{"wrapper-exec", plain, nil},
		{"supervisor", proc.Supervise, nil},
		{"supervisor+landlock", proc.Supervise, &proc.Confinement{ReadOnly: []string{dir}, ReadWrite: []string{dir}}},
	}
}

func benchHost(b *testing.B, dir string, confine *proc.Confinement) *Host {
	b.Helper()
	h, err := Start(Config{Python: debianPython, Dir: dir, ScriptDir: b.TempDir(), Paths: []string{dir}, Limits: proc.DefaultLimits, Confine: confine})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := h.Load(ctx, []ToolSpec{{Name: "set", Style: StyleTauSync, Module: "kvtools", Class: "Set"}}); err != nil {
		b.Fatal(err)
	}
	if err := h.Set(ctx, map[string]json.RawMessage{"kv": json.RawMessage(`[{"k":"a","v":1}]`)}, map[string]string{"kv": "k"}, nil); err != nil {
		b.Fatal(err)
	}
	return h
}

func benchDir(b *testing.B) string {
	b.Helper()
	needPython(b)
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "kvtools.py"), []byte(toolsPy), 0o644); err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkHostCall is the per-call cost: one tau_sync call that changes a
// record, on a host started each way. The supervisor is not on the call's
// path (the pipes go to the interpreter) and Landlock checks only opens, so
// the three should match.
func BenchmarkHostCall(b *testing.B) {
	dir := benchDir(b)
	for _, m := range hostModes(dir) {
		b.Run(m.name, func(b *testing.B) {
			supervise = m.wrap
			defer func() { supervise = proc.Supervise }()
			h := benchHost(b, dir, m.confine)
			defer h.Close()
			ctx := context.Background()
			args := json.RawMessage(`{"k":"a","v":2}`)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := h.Call(ctx, "set", args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHostLifecycle is the per-Trial cost: start a host, load a tool
// and the tables, and close it (every process below it gone), each way.
func BenchmarkHostLifecycle(b *testing.B) {
	dir := benchDir(b)
	for _, m := range hostModes(dir) {
		b.Run(m.name, func(b *testing.B) {
			supervise = m.wrap
			defer func() { supervise = proc.Supervise }()
			b.ReportAllocs()
			for b.Loop() {
				h := benchHost(b, dir, m.confine)
				if err := h.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
