package rootfs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tree lays out root/ and a sibling outside/ with a secret in it.
func tree(t *testing.T) (root, outside string) {
	t.Helper()
	base := t.TempDir()
	root, outside = filepath.Join(base, "root"), filepath.Join(base, "outside")
	for _, d := range []string{root, outside, filepath.Join(root, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	must(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "sub", "f"), []byte("inside"), 0o644))
	links := map[string]string{
		"in":           "sub/f",
		"in-via-dot":   "sub/../sub/f",
		"out":          "../outside/secret",
		"abs-out":      filepath.Join(outside, "secret"),
		"abs-in":       filepath.Join(root, "sub", "f"),
		"dir-out":      "../outside",
		"chain":        "sub/hop",
		"sub/hop":      "../../outside/secret",
		"loop":         "loop",
		"dir-in":       "sub",
		"sub/dot-out":  "../..",
		"climb-in-dir": "sub/../../outside/secret",
	}
	for name, target := range links {
		must(t, os.Symlink(target, filepath.Join(root, filepath.FromSlash(name))))
	}
	return root, outside
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestReadFileConfined(t *testing.T) {
	root, outside := tree(t)
	r, err := Open(root)
	must(t, err)
	defer r.Close()
	for _, tc := range []struct {
		name     string
		want     string // content, when the read succeeds
		link     string // the link an *EscapeError names
		target   string
		contains string // the exact message, when set
	}{
		{name: "sub/f", want: "inside"},
		{name: "in", want: "inside"},
		{name: "in-via-dot", want: "inside"},
		{name: "dir-in/f", want: "inside"},
		{name: "out", link: "out", target: "../outside/secret",
			contains: "out is a symbolic link to ../outside/secret, outside " + root + "; refused"},
		{name: "abs-out", link: "abs-out", target: filepath.Join(outside, "secret")},
		// Absolute targets are refused even pointing inside: they mean
		// another file on another machine.
		{name: "abs-in", link: "abs-in", target: filepath.Join(root, "sub", "f"),
			contains: "abs-in is a symbolic link to " + filepath.Join(root, "sub", "f") + ", an absolute path (links must be relative and stay inside " + root + "); refused"},
		{name: "dir-out/secret", link: "dir-out", target: "../outside",
			contains: "dir-out/secret: dir-out is a symbolic link to ../outside, outside " + root + "; refused"},
		{name: "chain", link: "sub/hop", target: "../../outside/secret"},
		{name: "sub/dot-out/outside/secret", link: "sub/dot-out", target: "../.."},
		{name: "climb-in-dir", link: "climb-in-dir", target: "sub/../../outside/secret"},
		{name: "sub/../../outside/secret", contains: "sub/../../outside/secret leaves " + root},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := r.ReadFile(tc.name, 0)
			if tc.want != "" {
				if err != nil || string(data) != tc.want {
					t.Fatalf("got %q, %v; want %q", data, err, tc.want)
				}
				return
			}
			var esc *EscapeError
			if !errors.As(err, &esc) {
				t.Fatalf("got %q, %v; want an *EscapeError", data, err)
			}
			if esc.Link != tc.link || esc.Target != tc.target || esc.Name != tc.name {
				t.Fatalf("escape %+v; want link %q -> %q for %q", esc, tc.link, tc.target, tc.name)
			}
			if tc.contains != "" && err.Error() != tc.contains {
				t.Fatalf("message %q\nwant     %q", err, tc.contains)
			}
		})
	}
}

func TestReadFileRefusesOddFiles(t *testing.T) {
	root, _ := tree(t)
	must(t, syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "big"), make([]byte, 11), 0o644))
	r, err := Open(root)
	must(t, err)
	defer r.Close()
	for _, tc := range []struct {
		name string
		want string
	}{
		{"fifo", "fifo is not a regular file (a named pipe)"},
		{"sub", "sub is not a regular file (a directory)"},
		{"big", "big is 11 bytes, over the limit of 10 bytes"},
		{"loop", "loop: too many levels of symbolic links"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() { _, err := r.ReadFile(tc.name, 10); done <- err }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("got %v, want %q", err, tc.want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the read blocked")
			}
		})
	}
}

func TestStatAndReadDirConfined(t *testing.T) {
	root, _ := tree(t)
	r, err := Open(root)
	must(t, err)
	defer r.Close()
	if _, err := r.Stat("dir-out/secret"); !isEscape(err, "dir-out") {
		t.Fatalf("Stat: %v", err)
	}
	if _, err := r.ReadDir("dir-out"); !isEscape(err, "dir-out") {
		t.Fatalf("ReadDir: %v", err)
	}
	if fi, err := r.Stat("in"); err != nil || fi.Size() != int64(len("inside")) {
		t.Fatalf("Stat(in): %v, %v", fi, err)
	}
	if _, err := r.Stat("nope"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Stat(nope): %v, want not exist", err)
	}
}

func isEscape(err error, link string) bool {
	var e *EscapeError
	return errors.As(err, &e) && e.Link == link
}

func TestRel(t *testing.T) {
	root, outside := tree(t)
	r, err := Open(root)
	must(t, err)
	defer r.Close()
	if rel, err := r.Rel(filepath.Join(root, "sub", "f")); err != nil || rel != filepath.Join("sub", "f") {
		t.Fatalf("Rel inside: %q, %v", rel, err)
	}
	if _, err := r.Rel(filepath.Join(outside, "secret")); err == nil {
		t.Fatal("Rel outside: no error")
	}
	// A name that merely starts with ".." stays inside.
	if rel, err := r.Rel(filepath.Join(root, "..x")); err != nil || rel != "..x" {
		t.Fatalf("Rel ..x: %q, %v", rel, err)
	}
}
