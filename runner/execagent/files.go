package execagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"

	"google.golang.org/grpc/codes"

	pb "tolokaforge.io/operator/api/execagentpb"
)

// userFor resolves an optional user for file ownership; nil for none.
func (s *Server) userFor(what, name string) (*account, error) {
	if name == "" {
		return nil, nil
	}
	a, err := lookupUser(s.opts.EtcDir, name)
	if err != nil {
		return nil, fail(codes.InvalidArgument, err, "%s: user %q", what, name)
	}
	return a, nil
}

// WriteFile writes path atomically: a temporary file in the same
// directory, fsync, rename, then an fsync of the directory. A symbolic link
// at path is replaced, not written through.
func (s *Server) WriteFile(_ context.Context, req *pb.WriteFileRequest) (*pb.WriteFileResponse, error) {
	p := req.GetPath()
	if err := checkPath("write file", p); err != nil {
		return nil, err
	}
	if p == "/" {
		return nil, fail(codes.InvalidArgument, nil, "write file: path / is a directory")
	}
	if n := int64(len(req.GetContent())); n > s.opts.MaxFileBytes {
		return nil, fail(codes.InvalidArgument, nil, "write file %s: %d bytes is over the limit of %d", p, n, s.opts.MaxFileBytes)
	}
	acct, err := s.userFor("write file "+p, req.GetUser())
	if err != nil {
		return nil, err
	}
	mode := fs.FileMode(req.GetMode()) & fs.ModePerm
	if req.GetMode()&^0o777 != 0 {
		return nil, fail(codes.InvalidArgument, nil, "write file %s: mode %#o has bits beyond the permissions", p, req.GetMode())
	}
	if mode == 0 {
		mode = 0o644
	}
	dir := filepath.Dir(p)
	if req.GetMkdirParents() {
		if err := mkdirAllOwned(dir, acct); err != nil {
			return nil, fail(fsCode(err), err, "write file %s: create parent directories", p)
		}
	}
	if fi, err := os.Stat(dir); err != nil {
		return nil, fail(fsCode(err), err, "write file %s: parent directory %s", p, dir)
	} else if !fi.IsDir() {
		return nil, fail(codes.FailedPrecondition, nil, "write file %s: parent %s is not a directory", p, dir)
	}
	if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
		return nil, fail(codes.FailedPrecondition, nil, "write file %s: a directory is there", p)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(p)+".tmp-*")
	if err != nil {
		return nil, fail(fsCode(err), err, "write file %s: create temporary file", p)
	}
	committed := false
	defer func() {
		if !committed {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	n, err := tmp.Write(req.GetContent())
	if err != nil {
		return nil, fail(fsCode(err), err, "write file %s: write", p)
	}
	if err := tmp.Chmod(mode); err != nil {
		return nil, fail(fsCode(err), err, "write file %s: chmod %#o", p, mode)
	}
	if acct != nil {
		if err := tmp.Chown(int(acct.uid), int(acct.gid)); err != nil {
			return nil, fail(fsCode(err), err, "write file %s: chown to %d:%d", p, acct.uid, acct.gid)
		}
	}
	if err := tmp.Sync(); err != nil {
		return nil, fail(fsCode(err), err, "write file %s: fsync", p)
	}
	if err := tmp.Close(); err != nil {
		return nil, fail(fsCode(err), err, "write file %s: close", p)
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		return nil, fail(fsCode(err), err, "write file %s: rename", p)
	}
	committed = true
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // best effort: the rename is durable on most file systems anyway
		d.Close()
	}
	return &pb.WriteFileResponse{BytesWritten: int64(n)}, nil
}

// mkdirAllOwned creates dir and its missing parents, the new ones owned by
// acct when set.
func mkdirAllOwned(dir string, acct *account) error {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
		missing = append(missing, d)
		if d == "/" {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := os.Mkdir(missing[i], 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		if acct != nil {
			if err := os.Lchown(missing[i], int(acct.uid), int(acct.gid)); err != nil {
				return err
			}
		}
	}
	return nil
}

// ReadFile reads a regular file (a symbolic link to one is followed), up
// to max_bytes.
func (s *Server) ReadFile(_ context.Context, req *pb.ReadFileRequest) (*pb.ReadFileResponse, error) {
	p := req.GetPath()
	if err := checkPath("read file", p); err != nil {
		return nil, err
	}
	limit := req.GetMaxBytes()
	if limit <= 0 || limit > s.opts.MaxFileBytes {
		limit = s.opts.MaxFileBytes
	}
	// Refuse a device, pipe or socket before opening it (opening some
	// devices has effects); O_NONBLOCK and the fstat below catch one
	// swapped in meanwhile without hanging on a FIFO.
	if fi, err := os.Stat(p); err != nil {
		return nil, fail(fsCode(err), err, "read file %s", p)
	} else if !fi.Mode().IsRegular() {
		return nil, fail(codes.FailedPrecondition, nil, "read file %s: not a regular file (%s)", p, typeName(fi.Mode()))
	}
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fail(fsCode(err), err, "read file %s", p)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fail(fsCode(err), err, "read file %s: stat", p)
	}
	if !fi.Mode().IsRegular() {
		return nil, fail(codes.FailedPrecondition, nil, "read file %s: not a regular file (%s)", p, typeName(fi.Mode()))
	}
	buf, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fail(fsCode(err), err, "read file %s", p)
	}
	truncated := int64(len(buf)) > limit
	size := fi.Size()
	if truncated {
		buf = buf[:limit]
	}
	if !truncated && int64(len(buf)) > size {
		size = int64(len(buf)) // /proc and friends report 0
	}
	if size > limit {
		truncated = true
	}
	return &pb.ReadFileResponse{Content: buf, Size: size, Truncated: truncated}, nil
}

// ListDir lists one directory, entries sorted by name, without following
// symbolic links.
func (s *Server) ListDir(_ context.Context, req *pb.ListDirRequest) (*pb.ListDirResponse, error) {
	p := req.GetPath()
	if err := checkPath("list directory", p); err != nil {
		return nil, err
	}
	fi, err := os.Stat(p)
	if err != nil {
		return nil, fail(fsCode(err), err, "list directory %s", p)
	}
	if !fi.IsDir() {
		return nil, fail(codes.FailedPrecondition, nil, "list directory %s: not a directory (%s)", p, typeName(fi.Mode()))
	}
	ents, err := os.ReadDir(p)
	if err != nil {
		return nil, fail(fsCode(err), err, "list directory %s", p)
	}
	out := make([]*pb.DirEntry, 0, len(ents))
	for _, e := range ents {
		info, err := e.Info()
		if err != nil {
			continue // removed since the listing
		}
		out = append(out, &pb.DirEntry{Name: e.Name(), Type: entryType(info.Mode()), Size: info.Size(), Mode: uint32(info.Mode().Perm())})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return &pb.ListDirResponse{Entries: out}, nil
}

func entryType(m fs.FileMode) pb.DirEntry_Type {
	switch {
	case m.IsRegular():
		return pb.DirEntry_FILE
	case m.IsDir():
		return pb.DirEntry_DIR
	case m&fs.ModeSymlink != 0:
		return pb.DirEntry_SYMLINK
	default:
		return pb.DirEntry_OTHER
	}
}

func typeName(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "regular file"
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	default:
		return fmt.Sprintf("mode %s", m.Type())
	}
}
