package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Names of Tolokaforge's state-convention tools.
const (
	getStateTool = "_tolokaforge_get_state_"
	setStateTool = "_tolokaforge_set_state_"
)

var (
	// errClosed is returned by every method once Close has been called.
	errClosed = errors.New("mcpclient: server is closed")
	// errNoStateTools is returned by GetState / SetState when the server does not
	// expose both state-convention tools.
	errNoStateTools = errors.New("mcpclient: server does not expose " + getStateTool + " and " + setStateTool)
)

// toolInfo is a tool as the server lists it.
type toolInfo struct {
	Name        string
	Description string
	InputSchema json.RawMessage
}

// Server is one MCP session (and, for stdio, the process behind it). Its methods are
// safe for concurrent use.
type Server struct {
	cfg    Config
	client *mcp.Client

	restartMu sync.Mutex // serialises Restart
	mu        sync.Mutex // guards cur and closed
	cur       *session
	closed    bool

	hasState atomic.Bool
}

// session is one connection: an MCP client session plus its process (nil over HTTP).
type session struct {
	mcp  *mcp.ClientSession
	proc *process
	once sync.Once
	// tools is the listing read right after the handshake.
	tools []*mcp.Tool
}

// Start launches (or, with a URL, connects to) the server and performs the MCP
// initialize handshake; ctx bounds only that. The tool list is read once to learn
// whether the server follows the state convention.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.URL != "" && cfg.HTTPClient == nil {
		// Our own transport: a proxy from the runner's environment has no business
		// between the runner and a tool server it was pointed at.
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.Proxy = nil
		cfg.HTTPClient = &http.Client{Transport: tr}
	}
	cfg.Command = append([]string(nil), cfg.Command...)
	cfg.Env = append([]string(nil), cfg.Env...)
	s := &Server{
		cfg: cfg,
		client: mcp.NewClient(&mcp.Implementation{Name: "tolokaforge-runner", Version: "1.0"}, &mcp.ClientOptions{
			// The SDK logs routine session events at Info; keep them at V(1).
			Logger: slog.New(logr.ToSlogHandler(cfg.Logger.WithName("mcp-sdk").V(1))),
			// No roots, sampling or elicitation: the runner serves nothing back.
			Capabilities: &mcp.ClientCapabilities{},
		}),
	}
	sess, err := s.connect(ctx)
	if err != nil {
		return nil, err
	}
	s.cur = sess
	return s, nil
}

func (s *Server) connect(ctx context.Context) (*session, error) {
	var (
		transport mcp.Transport
		proc      *process
	)
	if s.cfg.URL != "" {
		transport = &mcp.StreamableClientTransport{
			Endpoint:   s.cfg.URL,
			HTTPClient: s.cfg.HTTPClient,
			// Tool calls are request/response; no server-initiated stream needed.
			DisableStandaloneSSE: true,
		}
	} else {
		var err error
		if proc, err = spawn(&s.cfg); err != nil {
			return nil, err
		}
		transport = &mcp.IOTransport{Reader: proc.stdout, Writer: proc.stdin}
	}
	cs, err := s.client.Connect(ctx, transport, nil)
	if err != nil {
		if proc != nil {
			proc.stop(0)
			limits := ""
			if !s.cfg.Limits.IsZero() {
				// A server killed by its limits often says only "out of
				// memory" or "Resource temporarily unavailable".
				limits = "; it ran under " + s.cfg.Limits.String()
			}
			if tail := proc.recentStderr(); tail != "" {
				return nil, fmt.Errorf("mcpclient: initialize %s: %w (stderr: %s%s)", s.target(), err, tail, limits)
			}
			if limits != "" {
				return nil, fmt.Errorf("mcpclient: initialize %s: %w (%s)", s.target(), err, limits[2:])
			}
		}
		return nil, fmt.Errorf("mcpclient: initialize %s: %w", s.target(), err)
	}
	sess := &session{mcp: cs, proc: proc}
	tools, err := listTools(ctx, cs)
	if err != nil {
		sess.stop(0)
		return nil, fmt.Errorf("mcpclient: list tools of %s: %w", s.target(), err)
	}
	sess.tools = tools
	var get, set bool
	for _, t := range tools {
		get = get || t.Name == getStateTool
		set = set || t.Name == setStateTool
	}
	s.hasState.Store(get && set)
	return sess, nil
}

// target names the server in errors: its command or URL, never its environment.
func (s *Server) target() string {
	if s.cfg.URL != "" {
		return s.cfg.URL
	}
	return fmt.Sprintf("%q", s.cfg.Command[0])
}

func (sess *session) stop(grace time.Duration) {
	sess.once.Do(func() {
		if sess.proc != nil {
			// Kill first: closing a session whose peer is wedged would wait on it.
			sess.proc.stop(grace)
		}
		sess.mcp.Close()
	})
}

func (s *Server) current() (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errClosed
	}
	return s.cur, nil
}

func listTools(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Tool, error) {
	var tools []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// Tools lists the server's tools, without the two state-convention tools.
func (s *Server) Tools(ctx context.Context) ([]toolInfo, error) {
	sess, err := s.current()
	if err != nil {
		return nil, err
	}
	tools, err := listTools(ctx, sess.mcp)
	if err != nil {
		return nil, fmt.Errorf("mcpclient: list tools of %s: %w", s.target(), err)
	}
	return toolInfos(tools)
}

// StartTools is Tools as listed right after the last Start or Restart
// (which list them anyway, to learn whether the server follows the state
// convention): a registration needs no second tools/list round trip.
func (s *Server) StartTools() ([]toolInfo, error) {
	sess, err := s.current()
	if err != nil {
		return nil, err
	}
	return toolInfos(sess.tools)
}

func toolInfos(tools []*mcp.Tool) ([]toolInfo, error) {
	out := make([]toolInfo, 0, len(tools))
	for _, t := range tools {
		if t.Name == getStateTool || t.Name == setStateTool {
			continue
		}
		schema, err := json.Marshal(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("mcpclient: tool %q input schema: %w", t.Name, err)
		}
		out = append(out, toolInfo{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	return out, nil
}

// HasStateTools reports whether the server exposes both state-convention tools
// (as of the last Start or Restart).
func (s *Server) HasStateTools() bool { return s.hasState.Load() }

// PID is the process id of a stdio server's group leader (0 over HTTP or once
// closed), for logs and diagnostics.
func (s *Server) PID() int {
	sess, err := s.current()
	if err != nil || sess.proc == nil {
		return 0
	}
	return sess.proc.pid
}

// Call invokes a tool. output is the result's text contents joined with "\n";
// isError is the result's IsError, or true when the server answered with a JSON-RPC
// error (then output is "MCP error <code>: <message>"; the session stays usable).
// err is reserved for failures of the session itself: a closed or dead connection,
// or ctx ending — after which the caller should Restart before the next call.
// args must be a JSON object; empty means {}.
//
// A result over Config.MaxOutput is not returned: output is a message naming
// its size and the limit, isError is true, and the session keeps serving.
func (s *Server) Call(ctx context.Context, name string, args json.RawMessage) (output string, isError bool, err error) {
	out, isErr, err := s.call(ctx, name, args)
	if err != nil {
		return "", false, err
	}
	if limit := s.cfg.maxOutput(); len(out) > limit {
		return OverLimit(len(out), limit), true, nil
	}
	return out, isErr, nil
}

// OverLimit is the tool error for a result of size bytes over limit: the
// Python tool host's words, so an agent reads one message whatever served
// the tool.
func OverLimit(size, limit int) string {
	return fmt.Sprintf("the tool's result is %d bytes, over the limit of %d bytes; it was not returned", size, limit)
}

// overLimit matches OverLimit's message.
var overLimit = regexp.MustCompile(`^the tool's result is \d+ bytes, over the limit of \d+ bytes; it was not returned$`)

// IsOverLimit reports whether a tool error is Call's refusal of a result
// over the limit (a tool could say the same itself; a caller that reloads
// the server's state on it loses nothing).
func IsOverLimit(msg string) bool { return overLimit.MatchString(msg) }

// call is Call without the output bound: the state-convention tools carry
// whole tables, which the runner needs however large.
func (s *Server) call(ctx context.Context, name string, args json.RawMessage) (output string, isError bool, err error) {
	sess, err := s.current()
	if err != nil {
		return "", false, err
	}
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	} else if !isJSONObject(args) {
		return "", false, fmt.Errorf("mcpclient: call %q: arguments are not a JSON object", name)
	}
	res, err := sess.mcp.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		var rpcErr *jsonrpc.Error
		if errors.As(err, &rpcErr) {
			return fmt.Sprintf("MCP error %d: %s", rpcErr.Code, rpcErr.Message), true, nil
		}
		return "", false, fmt.Errorf("mcpclient: call %q on %s: %w", name, s.target(), err)
	}
	return joinText(res.Content), res.IsError, nil
}

func isJSONObject(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{' && json.Valid(t)
}

// joinText keeps the text items only, as Tolokaforge's Python runner did.
func joinText(content []mcp.Content) string {
	var parts []string
	for _, c := range content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// Ping checks the session with an MCP ping.
func (s *Server) Ping(ctx context.Context) error {
	sess, err := s.current()
	if err != nil {
		return err
	}
	if err := sess.mcp.Ping(ctx, nil); err != nil {
		return fmt.Errorf("mcpclient: ping %s: %w", s.target(), err)
	}
	return nil
}

// Restart replaces the session: a stdio server is killed (its whole group, without
// grace: it is presumed wedged) and started again; over HTTP the session is
// reopened. The new server starts from whatever state it starts with, so the caller
// must push its tables again. ctx bounds the new handshake.
func (s *Server) Restart(ctx context.Context) error {
	s.restartMu.Lock()
	defer s.restartMu.Unlock()
	old, err := s.current()
	if err != nil {
		return err
	}
	old.stop(0)
	sess, err := s.connect(ctx)
	if err != nil {
		return fmt.Errorf("mcpclient: restart: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		sess.stop(0)
		return errClosed
	}
	s.cur = sess
	return nil
}

// Close ends the session and, for stdio, the server's whole process group: SIGTERM,
// then SIGKILL after Config.KillGrace. It is idempotent and always returns nil once
// the processes are gone; the server's exit status is logged, not returned.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	sess := s.cur
	s.mu.Unlock()
	sess.stop(s.cfg.killGrace())
	return nil
}
