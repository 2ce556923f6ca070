package envtools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "tolokaforge.io/operator/api/execagentpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner/tools"
)

// Adapter names these tools in a tools.Entry and in HealthCheck.
const Adapter = "environment"

// Limits of the tools.
const (
	DefaultBashTimeout = 120 * time.Second
	MaxBashTimeout     = 1800 * time.Second
	// KillGrace is between SIGTERM and SIGKILL when a command times out.
	KillGrace = 2 * time.Second
	// MaxStreamBytes is what the exec agent keeps of each stream (head and tail).
	MaxStreamBytes = 4 << 20
	// ShownStreamBytes is what the model sees of each stream (head and tail).
	ShownStreamBytes = 16 << 10
	// KeptStreamBytes is what the call's artifact keeps of each stream (head
	// and tail): both together stay well inside gRPC's 16 MiB trailer limit
	// once base64-encoded.
	KeptStreamBytes = 3 << 20
	// MaxReadBytes bounds what read_file returns: the file's first bytes
	// and, when cut, a note saying so, together within the runner's default
	// bound on any tool's result (1 MiB), so a big file is cut, not refused.
	MaxReadBytes = 1 << 20
	// readNoteRoom is what read_file keeps free of content for its note (a
	// path is at most 4 KiB).
	readNoteRoom = 8 << 10
	// callMargin is kept between a command's kill and the call's deadline,
	// so the answer (killed, output) still arrives in time.
	callMargin = time.Second
)

// Agent is the part of the exec agent's client the tools use
// (runner/execagent/client.Client implements it).
type Agent interface {
	Exec(ctx context.Context, req *pb.ExecRequest) (*pb.ExecResponse, error)
	ReadFile(ctx context.Context, req *pb.ReadFileRequest) (*pb.ReadFileResponse, error)
	WriteFile(ctx context.Context, req *pb.WriteFileRequest) (*pb.WriteFileResponse, error)
	ListDir(ctx context.Context, req *pb.ListDirRequest) (*pb.ListDirResponse, error)
}

// Env is one trial's environment as its tools see it.
type Env struct {
	// Agent reaches the exec agent. Required.
	Agent Agent
	// Address names the environment in messages (the exec agent's host:port).
	Address string
	// Workdir is where commands start and relative paths resolve; empty is
	// the exec agent's own working directory (asked once, with pwd).
	Workdir string
	// Vars are added to every command's environment.
	Vars map[string]string
	// User runs the commands and owns written files; empty is the agent's.
	User string
}

// Names are the tools this package implements.
func Names() []string { return append([]string(nil), task.EnvironmentToolNames...) }

// Has says whether name is one of them.
func Has(name string) bool {
	for _, n := range task.EnvironmentToolNames {
		if n == name {
			return true
		}
	}
	return false
}

// Schema returns the tool's advertised schema (task.EnvironmentTools).
func Schema(name string) (task.ToolSchema, bool) {
	for _, s := range task.EnvironmentTools() {
		if s.Name == name {
			return s, true
		}
	}
	return task.ToolSchema{}, false
}

// Set is the tools of one environment; they share the resolved workdir.
type Set struct {
	env Env
	mu  sync.Mutex
	wd  string // the resolved workdir, once asked
}

// New returns the tools of env.
func New(env Env) *Set { return &Set{env: env} }

// Tool returns the named tool, false for a name Has refuses.
func (s *Set) Tool(name string) (tools.Tool, bool) {
	switch name {
	case "bash":
		return toolFunc(s.bash), true
	case "read_file":
		return toolFunc(s.readFile), true
	case "write_file":
		return toolFunc(s.writeFile), true
	case "list_dir":
		return toolFunc(s.listDir), true
	}
	return nil, false
}

type toolFunc func(ctx context.Context, args json.RawMessage) (string, error)

func (f toolFunc) Call(ctx context.Context, args json.RawMessage) (string, error) {
	return f(ctx, args)
}

// envError is a failure of the environment, not of the call: the message
// starts with task.EnvironmentErrorPrefix and names the environment.
func (s *Set) envError(what string, err error) error {
	return fmt.Errorf("%sthe task's environment (exec agent at %s) did not answer %s: %s", task.EnvironmentErrorPrefix, s.env.Address, what, status.Convert(unwrapStatus(err)).Message())
}

// unwrapStatus finds the gRPC status error inside the client's wrapping.
func unwrapStatus(err error) error {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if _, ok := status.FromError(e); ok {
			return e
		}
	}
	return err
}

// callError turns an exec agent error into the call's: a refusal about the
// request (no such file, permission, a bad path) is the tool's answer to
// the model; anything else is the environment's failure.
func (s *Set) callError(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err() // the budget ran out: tools.Invoke says so
	}
	switch status.Code(unwrapStatus(err)) {
	case codes.NotFound, codes.PermissionDenied, codes.InvalidArgument, codes.FailedPrecondition, codes.AlreadyExists, codes.OutOfRange:
		msg := status.Convert(unwrapStatus(err)).Message()
		return fmt.Errorf("%s: %s", what, strings.TrimPrefix(msg, "execagent: "))
	}
	return s.envError(what, err)
}

// workdir resolves the directory relative paths are relative to.
func (s *Set) workdir(ctx context.Context) (string, error) {
	if s.env.Workdir != "" {
		return s.env.Workdir, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wd != "" {
		return s.wd, nil
	}
	resp, err := s.env.Agent.Exec(ctx, &pb.ExecRequest{Argv: []string{"pwd"}, TimeoutMs: 10_000, User: s.env.User})
	switch {
	case err != nil:
		return "", s.callError(ctx, "pwd", err)
	case resp.GetExitCode() != 0 || !path.IsAbs(strings.TrimSpace(string(resp.GetStdout()))):
		return "", fmt.Errorf("%sthe task's environment (exec agent at %s) has no working directory (pwd: exit %d %q)", task.EnvironmentErrorPrefix, s.env.Address, resp.GetExitCode(), resp.GetStderr())
	}
	s.wd = path.Clean(strings.TrimSpace(string(resp.GetStdout())))
	return s.wd, nil
}

// resolve makes p absolute (relative to the workdir) and clean.
func (s *Set) resolve(ctx context.Context, p string) (string, error) {
	if p == "" {
		return "", &tools.ArgumentError{Msg: "arguments.path: empty"}
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", &tools.ArgumentError{Msg: "arguments.path: holds a NUL byte"}
	}
	if path.IsAbs(p) {
		return path.Clean(p), nil
	}
	wd, err := s.workdir(ctx)
	if err != nil {
		return "", err
	}
	return path.Join(wd, p), nil
}

func decode(args json.RawMessage, v any) error {
	dec := json.NewDecoder(strings.NewReader(string(args)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &tools.ArgumentError{Msg: "arguments: " + err.Error()}
	}
	return nil
}

func (s *Set) bash(ctx context.Context, args json.RawMessage) (string, error) {
	var a struct {
		Command  *string  `json:"command"`
		TimeoutS *float64 `json:"timeout_s"`
	}
	if err := decode(args, &a); err != nil {
		return "", err
	}
	if a.Command == nil {
		return "", &tools.ArgumentError{Msg: "arguments.command: required"}
	}
	timeout := DefaultBashTimeout
	if a.TimeoutS != nil {
		if !(*a.TimeoutS > 0) {
			return "", &tools.ArgumentError{Msg: fmt.Sprintf("arguments.timeout_s: %v must be > 0", *a.TimeoutS)}
		}
		timeout = min(tools.Seconds(*a.TimeoutS), MaxBashTimeout)
	}
	if dl, ok := ctx.Deadline(); ok {
		// The command is killed (and its grace spent) before the call's
		// own deadline, so its output still reaches the model.
		left := time.Until(dl) - KillGrace - callMargin
		if left < timeout {
			timeout = max(left, 100*time.Millisecond)
		}
	}
	resp, err := s.env.Agent.Exec(ctx, &pb.ExecRequest{
		Command:        *a.Command,
		Workdir:        s.env.Workdir,
		Env:            s.env.Vars,
		User:           s.env.User,
		TimeoutMs:      max(timeout.Milliseconds(), 1),
		KillGraceMs:    KillGrace.Milliseconds(),
		MaxOutputBytes: MaxStreamBytes,
	})
	if err != nil {
		return "", s.callError(ctx, "bash", err)
	}
	// The whole output (as far as the exec agent kept it) is the call's
	// artifact; the model sees each stream cut to ShownStreamBytes.
	tools.KeepOutput(ctx, []byte(formatExec(resp, timeout, KeptStreamBytes)))
	return FormatExec(resp, timeout), nil
}

// FormatExec is what the model sees of a command: how it ended, then its
// stdout and stderr, each cut to ShownStreamBytes.
func FormatExec(resp *pb.ExecResponse, timeout time.Duration) string {
	return formatExec(resp, timeout, ShownStreamBytes)
}

func formatExec(resp *pb.ExecResponse, timeout time.Duration, limit int) string {
	var b strings.Builder
	switch {
	case resp.GetTimedOut():
		fmt.Fprintf(&b, "timed out after %s s (killed)", tools.FormatSeconds(timeout))
	case resp.GetSignal() != "":
		fmt.Fprintf(&b, "killed by %s", resp.GetSignal())
	default:
		fmt.Fprintf(&b, "exit code %d", resp.GetExitCode())
	}
	b.WriteString("\n--- stdout ---\n")
	b.WriteString(Cut(resp.GetStdout(), resp.GetStdoutBytes(), limit))
	b.WriteString("\n--- stderr ---\n")
	b.WriteString(Cut(resp.GetStderr(), resp.GetStderrBytes(), limit))
	return b.String()
}

// Cut returns data as text, its head and tail when it (or the stream it
// came from, total bytes long) is longer than limit, with a marker saying
// how many bytes were cut. data may already be head and tail of the stream.
func Cut(data []byte, total int64, limit int) string {
	total = max(total, int64(len(data)))
	if total <= int64(limit) && len(data) <= limit {
		return strings.ToValidUTF8(string(data), "\uFFFD")
	}
	head := limit / 2
	tail := limit - head
	if len(data) < head+tail {
		head = len(data) / 2
		tail = len(data) - head
	}
	h, t := data[:head], data[len(data)-tail:]
	// Cut on rune boundaries, so the text stays valid.
	for i := len(h) - 1; i >= 0 && i >= len(h)-utf8.UTFMax; i-- {
		if utf8.RuneStart(h[i]) {
			if !utf8.FullRune(h[i:]) {
				h = h[:i]
			}
			break
		}
	}
	for len(t) > 0 && !utf8.RuneStart(t[0]) {
		t = t[1:]
	}
	cut := total - int64(len(h)) - int64(len(t))
	return strings.ToValidUTF8(string(h), "\uFFFD") +
		fmt.Sprintf("\n[... %d bytes cut ...]\n", cut) +
		strings.ToValidUTF8(string(t), "\uFFFD")
}

func (s *Set) readFile(ctx context.Context, args json.RawMessage) (string, error) {
	var a struct {
		Path *string `json:"path"`
	}
	if err := decode(args, &a); err != nil {
		return "", err
	}
	if a.Path == nil {
		return "", &tools.ArgumentError{Msg: "arguments.path: required"}
	}
	p, err := s.resolve(ctx, *a.Path)
	if err != nil {
		return "", err
	}
	budget := MaxReadBytes - readNoteRoom
	resp, err := s.env.Agent.ReadFile(ctx, &pb.ReadFileRequest{Path: p, MaxBytes: int64(budget)})
	if err != nil {
		return "", s.callError(ctx, "read_file "+p, err)
	}
	text := strings.ToValidUTF8(string(resp.GetContent()), "\uFFFD")
	truncated, shown := resp.GetTruncated(), len(resp.GetContent())
	if len(text) > budget {
		// Invalid bytes became U+FFFD (three bytes each): cut the text
		// again, on a character boundary, so the answer stays in bounds.
		cut := budget
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text, truncated, shown = text[:cut], true, cut
	}
	if truncated {
		text += fmt.Sprintf("\n[truncated: %s is %d bytes; the first %d are shown]", p, resp.GetSize(), shown)
	}
	return text, nil
}

func (s *Set) writeFile(ctx context.Context, args json.RawMessage) (string, error) {
	var a struct {
		Path    *string `json:"path"`
		Content *string `json:"content"`
	}
	if err := decode(args, &a); err != nil {
		return "", err
	}
	if a.Path == nil {
		return "", &tools.ArgumentError{Msg: "arguments.path: required"}
	}
	if a.Content == nil {
		return "", &tools.ArgumentError{Msg: "arguments.content: required"}
	}
	p, err := s.resolve(ctx, *a.Path)
	if err != nil {
		return "", err
	}
	resp, err := s.env.Agent.WriteFile(ctx, &pb.WriteFileRequest{Path: p, Content: []byte(*a.Content), User: s.env.User, MkdirParents: true})
	if err != nil {
		return "", s.callError(ctx, "write_file "+p, err)
	}
	return fmt.Sprintf("wrote %d bytes to %s", resp.GetBytesWritten(), p), nil
}

func (s *Set) listDir(ctx context.Context, args json.RawMessage) (string, error) {
	var a struct {
		Path *string `json:"path"`
	}
	if len(strings.TrimSpace(string(args))) > 0 {
		if err := decode(args, &a); err != nil {
			return "", err
		}
	}
	rel := "."
	if a.Path != nil && *a.Path != "" {
		rel = *a.Path
	}
	p, err := s.resolve(ctx, rel)
	if err != nil {
		return "", err
	}
	resp, err := s.env.Agent.ListDir(ctx, &pb.ListDirRequest{Path: p})
	if err != nil {
		return "", s.callError(ctx, "list_dir "+p, err)
	}
	entries := resp.GetEntries()
	sort.Slice(entries, func(i, j int) bool { return entries[i].GetName() < entries[j].GetName() })
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%d entries)\n", p, len(entries))
	for _, e := range entries {
		switch e.GetType() {
		case pb.DirEntry_DIR:
			fmt.Fprintf(&b, "%s/\n", e.GetName())
		case pb.DirEntry_SYMLINK:
			fmt.Fprintf(&b, "%s@ (symbolic link)\n", e.GetName())
		case pb.DirEntry_FILE:
			fmt.Fprintf(&b, "%s\t%d bytes\n", e.GetName(), e.GetSize())
		default:
			fmt.Fprintf(&b, "%s (special file)\n", e.GetName())
		}
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}
