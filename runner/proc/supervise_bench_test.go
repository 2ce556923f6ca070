package proc_test

import (
	"os/exec"
	"testing"

	"tolokaforge.io/operator/runner/proc"
)

// BenchmarkToolStart is the per-process (per Python host start, so per
// Trial, and per check run) cost of the supervisor and of Landlock: start
// /bin/true and wait for it, under the limits wrapper alone (the exec path
// before issue 40), under the supervisor, and under the supervisor with a
// Landlock confinement, in the same run. ns/op is the wall time of a start
// and an exit; allocs are the runner's side only.
func BenchmarkToolStart(b *testing.B) {
	tru, err := exec.LookPath("true")
	if err != nil {
		b.Skip("no true(1) here")
	}
	dir := b.TempDir()
	for _, bc := range []struct {
		name  string
		start func(*exec.Cmd) error
	}{
		{"wrapper-exec", func(c *exec.Cmd) error { return proc.Apply(c, proc.DefaultLimits) }},
		{"supervisor", func(c *exec.Cmd) error { return proc.Supervise(c, proc.DefaultLimits, nil) }},
		{"supervisor+landlock", func(c *exec.Cmd) error {
			return proc.Supervise(c, proc.DefaultLimits, &proc.Confinement{ReadOnly: []string{dir}, ReadWrite: []string{dir}})
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				cmd := exec.Command(tru)
				cmd.Env = []string{"PATH=/usr/bin:/bin"}
				if err := bc.start(cmd); err != nil {
					b.Fatal(err)
				}
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
