package proc

import (
	"os"
	"path/filepath"
	"testing"
)

// The search takes LauncherName beside the running binary only when it is
// an executable file; anything else falls back to the binary itself.
func TestBesideOrSelf(t *testing.T) {
	for _, tc := range []struct {
		name   string
		create func(t *testing.T, path string)
		beside bool
	}{
		{"absent", func(*testing.T, string) {}, false},
		{"executable", func(t *testing.T, p string) { write(t, p, 0o755) }, true},
		{"not executable", func(t *testing.T, p string) { write(t, p, 0o644) }, false},
		{"a directory", func(t *testing.T, p string) {
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			self := filepath.Join(dir, "tolokaforge")
			write(t, self, 0o755)
			tc.create(t, filepath.Join(dir, LauncherName))
			want := self
			if tc.beside {
				want = filepath.Join(dir, LauncherName)
			}
			if got := besideOrSelf(self); got != want {
				t.Errorf("besideOrSelf = %s, want %s", got, want)
			}
		})
	}
}

func write(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/true\n"), mode); err != nil {
		t.Fatal(err)
	}
}
