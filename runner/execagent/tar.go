package execagent

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"google.golang.org/grpc/codes"

	pb "tolokaforge.io/operator/api/execagentpb"
)

// errEntry is wrapped by every refusal of a tar entry's name or link.
var errEntry = errors.New("refused tar entry")

// entryName validates a tar entry's name and returns it clean and relative
// to the destination ("." for the destination itself). An empty name, a
// NUL byte, an absolute path and any ".." component are refused.
func entryName(name string) (string, error) {
	switch {
	case name == "":
		return "", fmt.Errorf("%w: empty name", errEntry)
	case strings.IndexByte(name, 0) >= 0:
		return "", fmt.Errorf("%w %q: NUL byte in the name", errEntry, name)
	case strings.HasPrefix(name, "/"):
		return "", fmt.Errorf("%w %q: absolute path", errEntry, name)
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return "", fmt.Errorf("%w %q: \"..\" in the path", errEntry, name)
		}
	}
	return path.Clean(name), nil
}

// symlinkTarget refuses a symbolic link entry (at the clean relative name)
// whose target is empty, absolute or, read relative to the link's
// directory, leaves the destination.
func symlinkTarget(name, target string) error {
	switch {
	case target == "":
		return fmt.Errorf("%w %q: symbolic link with an empty target", errEntry, name)
	case strings.IndexByte(target, 0) >= 0:
		return fmt.Errorf("%w %q: NUL byte in the link target", errEntry, name)
	case strings.HasPrefix(target, "/"):
		return fmt.Errorf("%w %q: symbolic link to the absolute path %q", errEntry, name, target)
	}
	j := path.Join(path.Dir(name), target)
	if j == ".." || strings.HasPrefix(j, "../") {
		return fmt.Errorf("%w %q: symbolic link to %q leaves the destination", errEntry, name, target)
	}
	return nil
}

// hardlinkTarget validates a hard link entry's target: a clean relative
// name inside the archive, not the destination itself.
func hardlinkTarget(name, target string) (string, error) {
	t, err := entryName(target)
	if err != nil {
		return "", fmt.Errorf("%w %q: hard link target: %w", errEntry, name, err)
	}
	if t == "." {
		return "", fmt.Errorf("%w %q: hard link to the destination itself", errEntry, name)
	}
	return t, nil
}

// prepareDir makes dir (absolute, clean) exist as a real directory without
// following a symbolic link on disk: every component is lstat'ed. A
// component that is a symbolic link or not a directory is refused, naming
// it, unless reset, when it is removed (the link itself) and a directory
// made in its place. With reset, dir ends up empty. New directories are
// owned by acct when set.
func prepareDir(dir string, reset bool, acct *account) error {
	cur := "/"
	for _, c := range strings.Split(strings.TrimPrefix(dir, "/"), "/") {
		if c == "" {
			continue
		}
		cur = filepath.Join(cur, c)
		fi, err := os.Lstat(cur)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return fmt.Errorf("lstat %s: %w", cur, err)
		case fi.IsDir():
			continue
		case !reset && fi.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s is a symbolic link; refusing to follow it", cur)
		case !reset:
			return fmt.Errorf("%s is not a directory (%s)", cur, typeName(fi.Mode()))
		default:
			if err := os.Remove(cur); err != nil {
				return fmt.Errorf("replace %s (%s) with a directory: %w", cur, typeName(fi.Mode()), err)
			}
		}
		if err := os.Mkdir(cur, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", cur, err)
		}
		if acct != nil {
			if err := os.Lchown(cur, int(acct.uid), int(acct.gid)); err != nil {
				return fmt.Errorf("chown %s: %w", cur, err)
			}
		}
	}
	if !reset {
		return nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("empty %s: %w", dir, err)
	}
	for _, e := range ents {
		// RemoveAll removes a symbolic link, never what it points to.
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("empty %s: %w", dir, err)
		}
	}
	if acct != nil {
		if err := os.Lchown(dir, int(acct.uid), int(acct.gid)); err != nil {
			return fmt.Errorf("chown %s: %w", dir, err)
		}
	}
	return nil
}

// checkResettable refuses to empty / or a directory holding the agent's
// state directory.
func (s *Server) checkResettable(what, dir string) error {
	if dir == "/" {
		return fail(codes.InvalidArgument, nil, "%s: refusing to empty /", what)
	}
	state, err := filepath.Abs(s.opts.StateDir)
	if err == nil && (state == dir || strings.HasPrefix(state, dir+"/")) {
		return fail(codes.InvalidArgument, nil, "%s: %s holds the agent's state directory", what, dir)
	}
	return nil
}

// ResetDir makes path an empty real directory; see prepareDir.
func (s *Server) ResetDir(_ context.Context, req *pb.ResetDirRequest) (*pb.ResetDirResponse, error) {
	p := req.GetPath()
	if err := checkPath("reset directory", p); err != nil {
		return nil, err
	}
	if err := s.checkResettable("reset directory", p); err != nil {
		return nil, err
	}
	acct, err := s.userFor("reset directory "+p, req.GetUser())
	if err != nil {
		return nil, err
	}
	if err := prepareDir(p, true, acct); err != nil {
		return nil, fail(fsCode(err), err, "reset directory %s", p)
	}
	return &pb.ResetDirResponse{}, nil
}

// PutTar extracts a tar below dest_dir.
func (s *Server) PutTar(_ context.Context, req *pb.PutTarRequest) (*pb.PutTarResponse, error) {
	dest := req.GetDestDir()
	if err := checkPath("put tar", dest); err != nil {
		return nil, err
	}
	if req.GetReplace() {
		if err := s.checkResettable("put tar", dest); err != nil {
			return nil, err
		}
	}
	acct, err := s.userFor("put tar "+dest, req.GetUser())
	if err != nil {
		return nil, err
	}
	if err := prepareDir(dest, req.GetReplace(), acct); err != nil {
		return nil, fail(codes.FailedPrecondition, err, "put tar into %s", dest)
	}
	entries, written, err := extract(dest, bytes.NewReader(req.GetTar()), s.opts.MaxFileBytes, acct)
	if err != nil {
		code := codes.FailedPrecondition
		if errors.Is(err, errEntry) {
			code = codes.InvalidArgument
		}
		return nil, fail(code, err, "put tar into %s", dest)
	}
	return &pb.PutTarResponse{Entries: entries, Bytes: written}, nil
}

// extract writes the archive below dest through os.Root, so nothing lands
// outside it; on top of that, no symbolic link on disk is followed on the
// way to an entry (each parent component is lstat'ed) and an entry replaces
// whatever was at its name rather than writing through it.
func extract(dest string, r io.Reader, maxBytes int64, acct *account) (entries, written int64, err error) {
	root, err := os.OpenRoot(dest)
	if err != nil {
		return 0, 0, fmt.Errorf("open %s: %w", dest, err)
	}
	defer root.Close()
	chown := func(name string) error {
		if acct == nil {
			return nil
		}
		if err := root.Lchown(name, int(acct.uid), int(acct.gid)); err != nil {
			return fmt.Errorf("chown %s: %w", filepath.Join(dest, name), err)
		}
		return nil
	}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return entries, written, nil
		}
		if err != nil {
			return entries, written, fmt.Errorf("read the archive after %d entries: %w", entries, err)
		}
		name, err := entryName(hdr.Name)
		if err != nil {
			return entries, written, err
		}
		entries++
		if name == "." {
			if hdr.Typeflag != tar.TypeDir {
				return entries, written, fmt.Errorf("%w %q: names the destination itself", errEntry, hdr.Name)
			}
			continue
		}
		if err := parents(root, dest, name, chown); err != nil {
			return entries, written, err
		}
		mode := fs.FileMode(hdr.Mode) & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
		full := filepath.Join(dest, name)
		switch hdr.Typeflag {
		case tar.TypeDir:
			fi, err := root.Lstat(name)
			if err == nil && !fi.IsDir() {
				if err := root.RemoveAll(name); err != nil {
					return entries, written, fmt.Errorf("replace %s: %w", full, err)
				}
			}
			if err != nil || !fi.IsDir() {
				if err := root.Mkdir(name, 0o700); err != nil {
					return entries, written, fmt.Errorf("create directory %s: %w", full, err)
				}
			}
			if mode == 0 {
				mode = 0o755
			}
		case tar.TypeReg: // the reader reports the old TypeRegA as TypeReg
			if mode == 0 {
				mode = 0o644
			}
			if err := clearName(root, name, full); err != nil {
				return entries, written, err
			}
			f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				return entries, written, fmt.Errorf("create %s: %w", full, err)
			}
			n, err := io.Copy(f, io.LimitReader(tr, maxBytes-written+1))
			written += n
			cerr := f.Close()
			if err != nil {
				return entries, written, fmt.Errorf("write %s: %w", full, err)
			}
			if written > maxBytes {
				return entries, written, fmt.Errorf("the archive extracts to more than %d bytes (at %s)", maxBytes, full)
			}
			if cerr != nil {
				return entries, written, fmt.Errorf("close %s: %w", full, cerr)
			}
		case tar.TypeSymlink:
			if err := symlinkTarget(name, hdr.Linkname); err != nil {
				return entries, written, err
			}
			if err := clearName(root, name, full); err != nil {
				return entries, written, err
			}
			if err := root.Symlink(hdr.Linkname, name); err != nil {
				return entries, written, fmt.Errorf("create symbolic link %s: %w", full, err)
			}
			if err := chown(name); err != nil {
				return entries, written, err
			}
			continue // a link has no mode of its own
		case tar.TypeLink:
			target, err := hardlinkTarget(name, hdr.Linkname)
			if err != nil {
				return entries, written, err
			}
			if err := parents(root, dest, target, nil); err != nil {
				return entries, written, err
			}
			fi, err := root.Lstat(target)
			if err != nil || !fi.Mode().IsRegular() {
				return entries, written, fmt.Errorf("%w %q: hard link to %q, which is no regular file extracted before it", errEntry, hdr.Name, hdr.Linkname)
			}
			if err := clearName(root, name, full); err != nil {
				return entries, written, err
			}
			if err := root.Link(target, name); err != nil {
				return entries, written, fmt.Errorf("create hard link %s: %w", full, err)
			}
			continue // shares the target's mode and owner
		default:
			return entries, written, fmt.Errorf("%w %q: type %q is not a file, directory or link", errEntry, hdr.Name, string(hdr.Typeflag))
		}
		if err := root.Chmod(name, mode); err != nil {
			return entries, written, fmt.Errorf("chmod %s: %w", full, err)
		}
		if err := chown(name); err != nil {
			return entries, written, err
		}
	}
}

// parents makes every parent directory of name exist below the root,
// refusing one that is a symbolic link or not a directory on disk.
func parents(root *os.Root, dest, name string, chown func(string) error) error {
	dir := path.Dir(name)
	if dir == "." {
		return nil
	}
	cur := ""
	for _, c := range strings.Split(dir, "/") {
		cur = path.Join(cur, c)
		fi, err := root.Lstat(cur)
		switch {
		case errors.Is(err, os.ErrNotExist):
			if chown == nil {
				return fmt.Errorf("%s does not exist", filepath.Join(dest, cur))
			}
			if err := root.Mkdir(cur, 0o755); err != nil {
				return fmt.Errorf("create directory %s: %w", filepath.Join(dest, cur), err)
			}
			if err := chown(cur); err != nil {
				return err
			}
		case err != nil:
			return fmt.Errorf("lstat %s: %w", filepath.Join(dest, cur), err)
		case fi.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("%w %q: %s is a symbolic link; refusing to follow it", errEntry, name, filepath.Join(dest, cur))
		case !fi.IsDir():
			return fmt.Errorf("%w %q: %s is not a directory", errEntry, name, filepath.Join(dest, cur))
		}
	}
	return nil
}

// clearName removes whatever is at name (a link itself, never its target), so
// the entry is created fresh instead of written through it.
func clearName(root *os.Root, name, full string) error {
	if _, err := root.Lstat(name); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := root.RemoveAll(name); err != nil {
		return fmt.Errorf("replace %s: %w", full, err)
	}
	return nil
}

// GetTar returns a tar of a file (one entry, its base name) or a
// directory (its content, names relative to it). Symbolic links inside are
// stored as links; sockets, pipes and devices are skipped. The path itself
// must not be a symbolic link.
func (s *Server) GetTar(_ context.Context, req *pb.GetTarRequest) (*pb.GetTarResponse, error) {
	p := req.GetPath()
	if err := checkPath("get tar", p); err != nil {
		return nil, err
	}
	limit := req.GetMaxBytes()
	if limit <= 0 || limit > s.opts.MaxFileBytes {
		limit = s.opts.MaxFileBytes
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, fail(fsCode(err), err, "get tar %s", p)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, fail(codes.FailedPrecondition, nil, "get tar %s: a symbolic link; refusing to follow it", p)
	}
	buf := &capped{max: limit}
	tw := tar.NewWriter(buf)
	switch {
	case fi.Mode().IsRegular():
		err = addFile(tw, p, filepath.Base(p), fi)
	case fi.IsDir():
		err = filepath.WalkDir(p, func(fp string, d fs.DirEntry, werr error) error {
			if werr != nil {
				return werr
			}
			if fp == p {
				return nil
			}
			rel, err := filepath.Rel(p, fp)
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			return addFile(tw, fp, filepath.ToSlash(rel), info)
		})
	default:
		return nil, fail(codes.FailedPrecondition, nil, "get tar %s: not a regular file or directory (%s)", p, typeName(fi.Mode()))
	}
	if err == nil {
		err = tw.Close()
	}
	if errors.Is(err, errTooLarge) {
		return nil, fail(codes.FailedPrecondition, nil, "get tar %s: the archive is larger than %d bytes", p, limit)
	}
	if err != nil {
		return nil, fail(fsCode(err), err, "get tar %s", p)
	}
	return &pb.GetTarResponse{Tar: buf.Bytes()}, nil
}

func addFile(tw *tar.Writer, full, name string, fi fs.FileInfo) error {
	link := ""
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		l, err := os.Readlink(full)
		if err != nil {
			return fmt.Errorf("read link %s: %w", full, err)
		}
		link = l
	case fi.IsDir(), fi.Mode().IsRegular():
	default:
		return nil // sockets, pipes, devices
	}
	hdr, err := tar.FileInfoHeader(fi, link)
	if err != nil {
		return fmt.Errorf("tar header of %s: %w", full, err)
	}
	hdr.Name = name
	if fi.IsDir() {
		hdr.Name += "/"
	}
	hdr.Uname, hdr.Gname = "", ""
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("tar %s: %w", full, err)
	}
	if !fi.Mode().IsRegular() {
		return nil
	}
	// O_NONBLOCK and the fstat: a FIFO swapped in since the walk saw a
	// regular file must not hang the call.
	f, err := os.OpenFile(full, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", full, err)
	}
	defer f.Close()
	if now, err := f.Stat(); err != nil || !now.Mode().IsRegular() {
		return fmt.Errorf("open %s: no longer a regular file", full)
	}
	// The header promised fi.Size() bytes: copy exactly that many, padding
	// with zeros if the file shrank meanwhile.
	n, err := io.Copy(tw, io.LimitReader(f, fi.Size()))
	if err != nil {
		return fmt.Errorf("tar %s: %w", full, err)
	}
	if n < fi.Size() {
		if _, err := tw.Write(make([]byte, fi.Size()-n)); err != nil {
			return fmt.Errorf("tar %s: %w", full, err)
		}
	}
	return nil
}

var errTooLarge = errors.New("archive too large")

// capped is a buffer that fails once it would hold more than max bytes.
type capped struct {
	bytes.Buffer
	max int64
}

func (c *capped) Write(p []byte) (int, error) {
	if int64(c.Len()+len(p)) > c.max {
		return 0, errTooLarge
	}
	return c.Buffer.Write(p)
}
