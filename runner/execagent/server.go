package execagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"tolokaforge.io/operator/api/authn"
	pb "tolokaforge.io/operator/api/execagentpb"
)

// TokenEnv is the environment variable the token may come in; the agent
// unsets it before it starts any child.
const TokenEnv = "TOLOKAFORGE_EXECAGENT_TOKEN"

// Defaults of Options and of requests that leave a field zero.
const (
	DefaultMaxFileBytes   = 64 << 20
	DefaultMaxOutputBytes = 1 << 20
	DefaultKillGraceMS    = 2000
	// messageOverhead is what a message carries beside its largest bytes field.
	messageOverhead = 1 << 20
)

// Options configures the agent.
type Options struct {
	// Token is the bearer token every RPC but Health must present. Required.
	Token string
	// StateDir is the agent's private directory (command output files);
	// created with mode 0700. Required.
	StateDir string
	// MaxFileBytes caps WriteFile's content, ReadFile's and GetTar's
	// answers and PutTar's archive (DefaultMaxFileBytes when 0); the gRPC
	// message limit is this plus 1 MiB.
	MaxFileBytes int64
	// MaxOutputBytes is Exec's per-stream cap when a request leaves it 0
	// (DefaultMaxOutputBytes when 0).
	MaxOutputBytes int64
	// Version is what Health reports.
	Version string
	// ReapAll collects every child of the process (wait4(-1)), orphans
	// included, dispatching statuses by pid: for the binary (PID 1, child
	// subreaper). Leave it false in a process that starts children of its
	// own elsewhere (a test).
	ReapAll bool
	// EtcDir holds the passwd and group files users are resolved from
	// ("/etc" when empty).
	EtcDir string
	// Logger receives one line per refused call and per Exec (never the
	// token, never a command's output); nil discards.
	Logger *slog.Logger
}

// Server is the ExecAgent service.
type Server struct {
	pb.UnimplementedExecAgentServer
	opts   Options
	reaper *reaper
	grpc   *grpc.Server
	log    *slog.Logger
	seq    atomic.Int64
}

// New validates opts, creates the state directory, unsets TokenEnv from the
// process environment and starts the reaper.
func New(opts Options) (*Server, error) {
	if opts.Token == "" {
		return nil, errors.New("execagent: no token")
	}
	if opts.StateDir == "" {
		return nil, errors.New("execagent: no state directory")
	}
	if opts.MaxFileBytes <= 0 {
		opts.MaxFileBytes = DefaultMaxFileBytes
	}
	if opts.MaxOutputBytes <= 0 {
		opts.MaxOutputBytes = DefaultMaxOutputBytes
	}
	opts.MaxOutputBytes = min(opts.MaxOutputBytes, opts.MaxFileBytes/2)
	if opts.EtcDir == "" {
		opts.EtcDir = "/etc"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if err := os.MkdirAll(opts.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("execagent: create state directory %s: %w", opts.StateDir, err)
	}
	if err := os.Chmod(opts.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("execagent: chmod state directory %s: %w", opts.StateDir, err)
	}
	if err := os.Unsetenv(TokenEnv); err != nil {
		return nil, fmt.Errorf("execagent: unset %s: %w", TokenEnv, err)
	}
	s := &Server{opts: opts, log: opts.Logger}
	s.reaper = newReaper(opts.ReapAll)
	limit := int(opts.MaxFileBytes + messageOverhead)
	s.grpc = grpc.NewServer(
		grpc.MaxRecvMsgSize(limit),
		grpc.MaxSendMsgSize(limit),
		grpc.UnaryInterceptor(s.authorize),
	)
	pb.RegisterExecAgentServer(s.grpc, s)
	return s, nil
}

// Serve serves on lis until Stop.
func (s *Server) Serve(lis net.Listener) error {
	if err := s.grpc.Serve(lis); err != nil {
		return fmt.Errorf("execagent: serve %s: %w", lis.Addr(), err)
	}
	return nil
}

// Stop stops serving, waiting for running calls until ctx ends, then
// cutting them. The reaper keeps running (KillAll may follow) until Close.
func (s *Server) Stop(ctx context.Context) {
	done := make(chan struct{})
	go func() { s.grpc.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		s.grpc.Stop()
		<-done
	}
}

// Close stops the reaper; call it after Stop.
func (s *Server) Close() { s.reaper.close() }

// SetSubreaper makes the process the reaper of its orphaned descendants
// (PR_SET_CHILD_SUBREAPER), so a double-forked command stays below it.
func SetSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("execagent: PR_SET_CHILD_SUBREAPER: %w", err)
	}
	return nil
}

// SetNotDumpable clears the dumpable flag (PR_SET_DUMPABLE 0): root in the
// container without CAP_SYS_PTRACE can then neither read the agent's memory
// nor its /proc environ, nor ptrace it.
func SetNotDumpable() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("execagent: PR_SET_DUMPABLE 0: %w", err)
	}
	return nil
}

const healthMethod = "/" + "tolokaforge.execagent.v1.ExecAgent/Health"

// authorize refuses every call but Health without the right token. The
// refusal says why (none presented, or not this agent's) but never echoes
// what was presented.
func (s *Server) authorize(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if info.FullMethod != healthMethod {
		var got string
		if md, ok := metadata.FromIncomingContext(ctx); ok {
			if v := md.Get(authn.MetadataKey); len(v) == 1 {
				got = v[0]
			} else if len(v) > 1 {
				got = "-" // several values: refuse, never guess which one
			}
		}
		if err := authn.Check(got, s.opts.Token); err != nil {
			s.log.Warn("refused call", "method", info.FullMethod, "reason", err.Error())
			return nil, status.Errorf(codes.Unauthenticated, "execagent: %s: %v", info.FullMethod, err)
		}
	}
	return handler(ctx, req)
}

// Health answers ok and the version; it needs no token.
func (s *Server) Health(context.Context, *pb.HealthRequest) (*pb.HealthResponse, error) {
	return &pb.HealthResponse{Ok: true, Version: s.opts.Version}, nil
}

// fail builds a status error of code whose message is the formatted context
// and, when err is set, its cause.
func fail(code codes.Code, err error, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if err != nil {
		msg += ": " + err.Error()
	}
	return status.Error(code, "execagent: "+msg)
}

// fsCode maps a file-system error to a gRPC code.
func fsCode(err error) codes.Code {
	switch {
	case errors.Is(err, os.ErrNotExist):
		return codes.NotFound
	case errors.Is(err, os.ErrPermission):
		return codes.PermissionDenied
	case errors.Is(err, os.ErrInvalid):
		return codes.InvalidArgument
	default:
		return codes.FailedPrecondition
	}
}

// checkPath refuses a path that is not absolute and clean.
func checkPath(what, p string) error {
	if p == "" {
		return fail(codes.InvalidArgument, nil, "%s: empty path", what)
	}
	if strings.IndexByte(p, 0) >= 0 {
		return fail(codes.InvalidArgument, nil, "%s: path %q holds a NUL byte", what, p)
	}
	if !strings.HasPrefix(p, "/") || filepath.Clean(p) != p {
		return fail(codes.InvalidArgument, nil, "%s: path %q is not absolute and clean", what, p)
	}
	return nil
}
