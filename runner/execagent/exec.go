package execagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "tolokaforge.io/operator/api/execagentpb"
)

// cleanPath is the PATH of a clean environment.
const cleanPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Exec runs one command in its own process group and answers when its main
// process exits or is killed.
func (s *Server) Exec(ctx context.Context, req *pb.ExecRequest) (*pb.ExecResponse, error) {
	if req.GetTimeoutMs() <= 0 {
		return nil, fail(codes.InvalidArgument, nil, "exec: timeout_ms must be > 0, got %d", req.GetTimeoutMs())
	}
	if req.GetCommand() == "" && len(req.GetArgv()) == 0 {
		return nil, fail(codes.InvalidArgument, nil, "exec: neither command nor argv given")
	}
	if req.GetCommand() != "" && len(req.GetArgv()) > 0 {
		return nil, fail(codes.InvalidArgument, nil, "exec: both command and argv given; want one")
	}
	if len(req.GetStdin()) > int(s.opts.MaxFileBytes) {
		return nil, fail(codes.InvalidArgument, nil, "exec: stdin of %d bytes is over the limit of %d", len(req.GetStdin()), s.opts.MaxFileBytes)
	}
	capBytes := req.GetMaxOutputBytes()
	if capBytes <= 0 {
		capBytes = s.opts.MaxOutputBytes
	}
	capBytes = min(capBytes, s.opts.MaxFileBytes/2)
	grace := time.Duration(req.GetKillGraceMs()) * time.Millisecond
	if grace <= 0 {
		grace = DefaultKillGraceMS * time.Millisecond
	}

	var acct *account
	if u := req.GetUser(); u != "" {
		a, err := lookupUser(s.opts.EtcDir, u)
		if err != nil {
			return nil, fail(codes.InvalidArgument, err, "exec: user %q", u)
		}
		acct = a
	}
	env := s.environ(req, acct)
	// The request's PATH first, then the standard one: a PATH set to
	// something odd still finds the shell.
	search := pathOf(env) + ":" + cleanPath
	argv := req.GetArgv()
	if len(argv) == 0 {
		sh, err := lookPath("bash", search)
		if err != nil {
			sh, err = lookPath("sh", search)
			if err != nil {
				return nil, fail(codes.FailedPrecondition, err, "exec: neither bash nor sh in PATH")
			}
		}
		argv = []string{sh, "-c", req.GetCommand()}
	}
	argv0, err := lookPath(argv[0], search)
	if err != nil {
		return nil, fail(codes.InvalidArgument, err, "exec: %q", argv[0])
	}
	dir := req.GetWorkdir()
	if dir != "" {
		if !filepath.IsAbs(dir) {
			return nil, fail(codes.InvalidArgument, nil, "exec: workdir %q is not absolute", dir)
		}
		if fi, err := os.Stat(dir); err != nil {
			return nil, fail(fsCode(err), err, "exec: workdir %s", dir)
		} else if !fi.IsDir() {
			return nil, fail(codes.FailedPrecondition, nil, "exec: workdir %s is not a directory", dir)
		}
	}

	files, err := s.execFiles(req.GetStdin())
	if err != nil {
		return nil, fail(codes.Internal, err, "exec: output files")
	}
	defer files.close()

	attr := &syscall.ProcAttr{
		Dir:   dir,
		Env:   env,
		Files: []uintptr{files.stdin.Fd(), files.childOut.Fd(), files.childErr.Fd()},
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	}
	if acct != nil && (acct.uid != uint32(os.Getuid()) || acct.gid != uint32(os.Getgid())) {
		attr.Sys.Credential = &syscall.Credential{Uid: acct.uid, Gid: acct.gid, Groups: acct.groups}
	}
	began := time.Now()
	pid, exited, err := s.reaper.start(argv0, argv, attr)
	if err != nil {
		return nil, fail(codes.FailedPrecondition, err, "exec")
	}
	// The child holds its own descriptors now.
	files.closeChildEnds()

	timer := time.NewTimer(time.Duration(req.GetTimeoutMs()) * time.Millisecond)
	defer timer.Stop()
	var ws syscall.WaitStatus
	timedOut, cancelled := false, false
	select {
	case ws = <-exited:
	case <-timer.C:
		timedOut = true
		ws = terminate(pid, exited, grace)
	case <-ctx.Done():
		cancelled = true
		ws = terminate(pid, exited, grace)
	}
	took := time.Since(began)
	if cancelled {
		return nil, status.FromContextError(fmt.Errorf("execagent: exec: the call ended before the command (killed after %s): %w", took.Round(time.Millisecond), ctx.Err())).Err()
	}

	resp := &pb.ExecResponse{TimedOut: timedOut, DurationMs: took.Milliseconds()}
	switch {
	case ws.Exited():
		resp.ExitCode = int32(ws.ExitStatus())
	case ws.Signaled():
		resp.ExitCode = -1
		resp.Signal = unix.SignalName(ws.Signal())
		if resp.Signal == "" {
			resp.Signal = fmt.Sprintf("signal %d", int(ws.Signal()))
		}
	default:
		resp.ExitCode = -1
	}
	if resp.Stdout, resp.StdoutBytes, resp.StdoutTruncated, err = headTail(files.stdout, capBytes); err != nil {
		return nil, fail(codes.Internal, err, "exec: read stdout")
	}
	if resp.Stderr, resp.StderrBytes, resp.StderrTruncated, err = headTail(files.stderr, capBytes); err != nil {
		return nil, fail(codes.Internal, err, "exec: read stderr")
	}
	s.log.Info("exec", "pid", pid, "exit", resp.ExitCode, "signal", resp.Signal, "timed_out", timedOut, "ms", resp.DurationMs)
	return resp, nil
}

// terminate sends SIGTERM to the process group of pid, waits grace for the
// main process, then SIGKILLs the group (whatever of it is left) and
// returns the main process's status.
func terminate(pid int, exited <-chan syscall.WaitStatus, grace time.Duration) syscall.WaitStatus {
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	_ = syscall.Kill(-pid, syscall.SIGCONT) // a stopped member gets the TERM too
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case ws := <-exited:
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		return ws
	case <-t.C:
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	return <-exited
}

// environ is the child's environment: clean (PATH and HOME) or the agent's,
// plus the request's variables. The token's variable and any entry holding
// the token are never passed on, whatever the agent's environment holds.
func (s *Server) environ(req *pb.ExecRequest, acct *account) []string {
	vars := map[string]string{}
	if req.GetCleanEnv() {
		vars["PATH"] = cleanPath
		switch {
		case acct != nil:
			vars["HOME"] = acct.home
		default:
			if a, err := lookupUser(s.opts.EtcDir, fmt.Sprint(os.Getuid())); err == nil && a.name != "" {
				vars["HOME"] = a.home
			} else if h := os.Getenv("HOME"); h != "" {
				vars["HOME"] = h
			} else {
				vars["HOME"] = "/"
			}
		}
	} else {
		for _, kv := range os.Environ() {
			k, v, _ := strings.Cut(kv, "=")
			if k == TokenEnv || strings.Contains(v, s.opts.Token) {
				continue
			}
			vars[k] = v
		}
		if acct != nil {
			vars["HOME"] = acct.home
			if acct.name != "" {
				vars["USER"], vars["LOGNAME"] = acct.name, acct.name
			}
		}
	}
	for k, v := range req.GetEnv() {
		vars[k] = v
	}
	out := make([]string, 0, len(vars))
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

func pathOf(env []string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			return v
		}
	}
	return cleanPath
}

// lookPath finds name in the directories of path (name itself when it has
// a slash).
func lookPath(name, path string) (string, error) {
	if strings.Contains(name, "/") {
		if err := executable(name); err != nil {
			return "", err
		}
		return name, nil
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: not found in PATH %s", name, path)
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s: not an executable file", p)
	}
	return nil
}

// execFiles are one command's stdin, stdout and stderr: files in the state
// directory, unlinked once open, so a background child that keeps its
// stdout never holds anything of the agent's.
type execFiles struct {
	stdin, stdout, stderr *os.File
	// child ends: the same files, opened for the child (stdout and stderr
	// write-only in append mode).
	childOut, childErr *os.File
}

func (s *Server) execFiles(stdin []byte) (_ *execFiles, err error) {
	f := &execFiles{}
	defer func() {
		if err != nil {
			f.close()
		}
	}()
	n := s.seq.Add(1)
	open := func(suffix string) (*os.File, *os.File, error) {
		p := filepath.Join(s.opts.StateDir, fmt.Sprintf("exec-%d-%d.%s", os.Getpid(), n, suffix))
		r, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrNotExist) {
			// A command removed the state directory: make it again.
			if merr := os.MkdirAll(s.opts.StateDir, 0o700); merr != nil {
				return nil, nil, fmt.Errorf("recreate %s: %w", s.opts.StateDir, merr)
			}
			r, err = os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("create %s: %w", p, err)
		}
		w, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
		if rerr := os.Remove(p); rerr != nil && err == nil {
			err = rerr
		}
		if err != nil {
			r.Close()
			return nil, nil, fmt.Errorf("open %s: %w", p, err)
		}
		return r, w, nil
	}
	var in *os.File
	if f.stdin, in, err = open("stdin"); err != nil {
		return f, err
	}
	in.Close()
	if _, err := f.stdin.Write(stdin); err != nil {
		return f, fmt.Errorf("write stdin: %w", err)
	}
	if _, err := f.stdin.Seek(0, io.SeekStart); err != nil {
		return f, fmt.Errorf("rewind stdin: %w", err)
	}
	if f.stdout, f.childOut, err = open("stdout"); err != nil {
		return f, err
	}
	if f.stderr, f.childErr, err = open("stderr"); err != nil {
		return f, err
	}
	return f, nil
}

func (f *execFiles) closeChildEnds() {
	for _, c := range []*os.File{f.stdin, f.childOut, f.childErr} {
		if c != nil {
			c.Close()
		}
	}
	f.stdin, f.childOut, f.childErr = nil, nil, nil
}

func (f *execFiles) close() {
	f.closeChildEnds()
	for _, c := range []*os.File{f.stdout, f.stderr} {
		if c != nil {
			c.Close()
		}
	}
}

// headTail reads f's content: all of it when it holds at most capBytes,
// else the first half and the last half of capBytes. It returns the total
// size and whether it cut.
func headTail(f *os.File, capBytes int64) ([]byte, int64, bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, false, err
	}
	size := fi.Size()
	if size <= capBytes {
		buf := make([]byte, size)
		if _, err := f.ReadAt(buf, 0); err != nil && !errors.Is(err, io.EOF) {
			return nil, 0, false, err
		}
		return buf, size, false, nil
	}
	head := capBytes / 2
	tail := capBytes - head
	buf := make([]byte, capBytes)
	if _, err := f.ReadAt(buf[:head], 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, 0, false, err
	}
	if _, err := f.ReadAt(buf[head:], size-tail); err != nil && !errors.Is(err, io.EOF) {
		return nil, 0, false, err
	}
	return buf, size, true, nil
}
