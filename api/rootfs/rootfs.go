// Package rootfs reads files below one directory, the root, and never
// outside it: a task pack, an artifacts directory, a file:// store. Inputs
// like these come from other people, and a symbolic link in them
// (system_prompt.md -> /etc/passwd, fixtures -> /) would otherwise put any
// file the reader can see into a Task or a report.
//
// Links are resolved, not banned: a link that stays inside the root is
// followed (packs share files that way), one that leaves it is refused with
// an *EscapeError naming the link, as a path inside the root, and where it
// points. Absolute link targets are refused even when they happen to point
// back inside: they mean something else on the next machine. Confinement is
// os.Root's (openat, so a link swapped in mid-read cannot escape either); this
// package adds the refusal a person can act on, a size limit, and a refusal of
// files that are not regular files (a FIFO would block the reader forever).
//
// Imports: the standard library.
package rootfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Root is an opened root directory.
type Root struct {
	root *os.Root
	dir  string
}

// Open opens dir as a root. dir itself may be a link: the caller chose it.
func Open(dir string) (*Root, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &Root{root: r, dir: dir}, nil
}

// Close releases the root's directory handle.
func (r *Root) Close() error { return r.root.Close() }

// Dir is the directory the root was opened at.
func (r *Root) Dir() string { return r.dir }

// EscapeError is a path refused because a symbolic link on it leaves the
// root (or, with Link empty, because the path itself climbs out with "..").
type EscapeError struct {
	Root   string // the root directory
	Name   string // the path asked for, relative to the root
	Link   string // the link that leaves, relative to the root
	Target string // what the link says, as written
}

func (e *EscapeError) Error() string {
	if e.Link == "" {
		return fmt.Sprintf("%s leaves %s", e.Name, e.Root)
	}
	where := "outside " + e.Root
	if filepath.IsAbs(e.Target) {
		where = "an absolute path (links must be relative and stay inside " + e.Root + ")"
	}
	if e.Link == e.Name {
		return fmt.Sprintf("%s is a symbolic link to %s, %s; refused", e.Link, e.Target, where)
	}
	return fmt.Sprintf("%s: %s is a symbolic link to %s, %s; refused", e.Name, e.Link, e.Target, where)
}

// notRegularError is a path that names something other than a regular file
// (a directory, a FIFO, a device).
type notRegularError struct {
	Name string
	Mode fs.FileMode
}

func (e *notRegularError) Error() string {
	return fmt.Sprintf("%s is not a regular file (%s)", e.Name, kind(e.Mode))
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return m.Type().String()
}

// tooLargeError is a file over the reader's size limit.
type tooLargeError struct {
	Name  string
	Size  int64
	Limit int64
}

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("%s is %d bytes, over the limit of %d bytes", e.Name, e.Size, e.Limit)
}

// clean makes name a root-relative, slash-separated path; "" is the root.
func clean(name string) string {
	name = filepath.ToSlash(name)
	if name == "" {
		return "."
	}
	return name
}

// explain turns a failed operation on name into an *EscapeError when a link
// (or "..") on the path is why, else returns err unchanged.
func (r *Root) explain(name string, err error) error {
	if err == nil {
		return nil
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		// os.Root names its syscalls (openat, statat); a person reading
		// "open x: no such file" needs no more.
		pe.Op = strings.TrimSuffix(pe.Op, "at")
	}
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		return err
	}
	if e := r.escape(name); e != nil {
		return e
	}
	return err
}

// maxHops bounds the links followed while explaining a refusal, as the
// kernel bounds them (ELOOP), so a loop of links ends.
const maxHops = 40

// escape walks name the way the kernel resolves it, one component at a
// time, and reports the link whose target climbs out of the root. It only
// explains: os.Root has already refused the path.
func (r *Root) escape(name string) *EscapeError {
	out := &EscapeError{Root: r.dir, Name: name}
	if filepath.IsAbs(name) {
		return out
	}
	// Each component remembers the link whose target it came from, so a
	// ".." that climbs out is charged to the link that wrote it.
	type comp struct{ s, link, target string }
	var parts []comp
	push := func(p, link, target string) {
		var cs []comp
		for _, s := range split(p) {
			cs = append(cs, comp{s, link, target})
		}
		parts = append(cs, parts...)
	}
	push(name, "", "")
	cur := "" // resolved so far: no links, never above the root
	for hops := 0; len(parts) > 0; {
		c := parts[0]
		parts = parts[1:]
		switch c.s {
		case ".":
			continue
		case "..":
			if cur == "" {
				out.Link, out.Target = c.link, c.target
				return out
			}
			if cur = path.Dir(cur); cur == "." {
				cur = ""
			}
			continue
		}
		next := path.Join(cur, c.s)
		fi, err := r.root.Lstat(next)
		if err != nil {
			return nil
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if hops++; hops > maxHops {
			return nil
		}
		t, err := r.root.Readlink(next)
		if err != nil {
			return nil
		}
		if filepath.IsAbs(t) {
			out.Link, out.Target = next, t
			return out
		}
		push(t, next, t)
	}
	return nil
}

func split(p string) []string {
	var out []string
	for _, s := range strings.Split(filepath.ToSlash(p), "/") {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Stat is os.Stat inside the root.
func (r *Root) Stat(name string) (fs.FileInfo, error) {
	name = clean(name)
	fi, err := r.root.Stat(name)
	return fi, r.explain(name, err)
}

// ReadDir lists a directory inside the root, sorted by name.
func (r *Root) ReadDir(name string) ([]fs.DirEntry, error) {
	name = clean(name)
	f, err := r.root.Open(name)
	if err != nil {
		return nil, r.explain(name, err)
	}
	defer f.Close()
	return f.ReadDir(-1)
}

// ReadFile reads a regular file inside the root; limit > 0 bounds its size
// (a larger file is refused with *TooLargeError before it is read).
func (r *Root) ReadFile(name string, limit int64) ([]byte, error) {
	name = clean(name)
	// Stat before opening: opening a FIFO blocks until a writer comes.
	fi, err := r.root.Stat(name)
	if err != nil {
		return nil, r.explain(name, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, &notRegularError{Name: name, Mode: fi.Mode()}
	}
	f, err := r.root.Open(name)
	if err != nil {
		return nil, r.explain(name, err)
	}
	defer f.Close()
	// Again on the open file: the path may have been swapped since.
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &notRegularError{Name: name, Mode: fi.Mode()}
	}
	if limit > 0 && fi.Size() > limit {
		return nil, &tooLargeError{Name: name, Size: fi.Size(), Limit: limit}
	}
	var rd io.Reader = f
	if limit > 0 {
		// The file may grow while it is read.
		rd = io.LimitReader(f, limit+1)
	}
	data, err := io.ReadAll(rd)
	if err != nil {
		return nil, err
	}
	if limit > 0 && int64(len(data)) > limit {
		return nil, &tooLargeError{Name: name, Size: int64(len(data)), Limit: limit}
	}
	return data, nil
}

// Rel is file (a path under the root's directory, absolute or relative to
// the working directory) relative to the root, for ReadFile and friends. A
// file outside the root's directory is refused.
func (r *Root) Rel(file string) (string, error) {
	base, err := filepath.Abs(r.dir)
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(base, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", &EscapeError{Root: r.dir, Name: file}
	}
	return rel, nil
}
