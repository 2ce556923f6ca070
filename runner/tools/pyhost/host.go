package pyhost

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"

	"tolokaforge.io/operator/runner/proc"
)

// Source is host.py, the program every host runs.
//
//go:embed host.py
var Source []byte

// ScriptName is the file Start writes Source to, inside Config.ScriptDir.
const ScriptName = "tolokaforge_pyhost.py"

// Tool styles a ToolSpec may name.
const (
	StyleTauSync  = "tau_sync"
	StyleMCPAsync = "mcp_async"
	// StyleRegistry is a tool of a registry script: Script's TOOLS[Class].
	StyleRegistry = "registry"
)

// ToolSpec is one tool to load.
type ToolSpec struct {
	Name   string `json:"name"`
	Style  string `json:"style"`
	Module string `json:"module,omitempty"`
	Class  string `json:"class"`
	// Script is an absolute path (StyleRegistry).
	Script string `json:"script,omitempty"`
}

// Info is what a loaded tool says about itself (get_info() of a tau_sync
// class); either field may be empty.
type Info struct {
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Config says how to start a host.
type Config struct {
	// Python is the interpreter (a name on PATH or a path); empty: python3.
	Python string
	// Dir is the host's working directory and HOME (the pack's files).
	Dir string
	// ScriptDir receives host.py; it must not be on the tools' import path.
	ScriptDir string
	// Paths are put on sys.path, first entry first.
	Paths []string
	// Env is added to a minimal environment (PATH, HOME, LANG).
	Env    []string
	Limits proc.Limits
	Logger logr.Logger
	// Confine, when set, is the file system the host and its tools may use
	// (Landlock); host.py is added to it read-only.
	Confine *proc.Confinement
	// MaxOutput bounds one call's output in bytes; zero: DefaultMaxOutput.
	// A larger output is a *ToolError naming its size and the limit (the
	// call's changes are dropped and the host resyncs), and the host keeps
	// serving.
	MaxOutput int
}

// DefaultMaxOutput is Config.MaxOutput's default: 1 MiB.
const DefaultMaxOutput = 1 << 20

// Bounds of what the host's pipes carry into the runner.
const (
	// answerSlack is what one answer line may hold beyond MaxOutput (its
	// record-level changes, the JSON escaping of the output); a longer line
	// is read to its end and dropped, and the call is a *ToolError.
	answerSlack = 64 << 20
	// stderrLineCap is how much of one stderr line is kept for the log and
	// a failure's message; the rest of the line is read and counted.
	stderrLineCap = 4 << 10
	// stderrTailLines is how many stderr lines a failure's message quotes.
	stderrTailLines = 8
)

// ToolError is a tool's own failure (it raised, or its changes could not be
// expressed): the message for the agent.
type ToolError struct {
	Message string
	// Resync: the host's copy may now differ from the DB's in order; reload
	// it before the next call.
	Resync bool
}

func (e *ToolError) Error() string { return e.Message }

// LoadError names the tool whose load failed.
type LoadError struct {
	Tool    string
	Message string
}

func (e *LoadError) Error() string { return e.Message }

// ErrClosed is returned once the host has exited or was closed.
var ErrClosed = errors.New("python tool host is not running")

// Result is one successful call.
type Result struct {
	Output string
	// Ops maps a table to its PATCH operations, each a DB service operation object.
	Ops map[string][]json.RawMessage
	// Learned maps a dict-shaped table to the key field its first write revealed.
	Learned map[string]string
}

// Host is one running host process. Calls are serialised.
type Host struct {
	cfg    Config
	cmd    *exec.Cmd
	pid    int
	stdin  io.WriteCloser
	lines  chan answerLine
	exited chan struct{}
	log    logr.Logger

	mu     sync.Mutex
	tail   []string
	closed bool
}

// supervise starts the host under its supervisor; the benchmarks swap it
// for the plain limits wrapper to measure what the supervisor costs.
var supervise = proc.Supervise

// Start writes host.py and starts the interpreter on it.
func Start(cfg Config) (*Host, error) {
	if cfg.Python == "" {
		cfg.Python = "python3"
	}
	script := filepath.Join(cfg.ScriptDir, ScriptName)
	if err := os.WriteFile(script, Source, 0o644); err != nil {
		return nil, fmt.Errorf("write the python tool host: %w", err)
	}
	// -I: no user site, no PYTHON* variables, no script folder on sys.path
	// (the host sets the pack's paths itself); -B: leave no __pycache__ in
	// the pack's files.
	cmd := exec.Command(cfg.Python, "-I", "-B", script)
	cmd.Dir = cfg.Dir
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	cmd.Env = append([]string{"PATH=" + path, "HOME=" + cfg.Dir, "LANG=C.UTF-8", "PYTHONIOENCODING=utf-8"}, cfg.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Under a supervisor: whatever the tools start (a setsid double fork
	// with an empty environment included) stays below it and dies with it.
	var confine *proc.Confinement
	if cfg.Confine != nil {
		c := *cfg.Confine
		c.ReadOnlyFiles = append(append([]string(nil), c.ReadOnlyFiles...), script)
		confine = &c
	}
	if err := supervise(cmd, cfg.Limits, confine); err != nil {
		return nil, fmt.Errorf("start python tool host under %s: %w", cfg.Limits, err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("python tool host stdin: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("python tool host stdout: %w", err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, fmt.Errorf("python tool host stderr: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start python tool host %q: %w", cfg.Python, err)
	}
	if cfg.MaxOutput <= 0 {
		cfg.MaxOutput = DefaultMaxOutput
	}
	h := &Host{cfg: cfg, cmd: cmd, pid: cmd.Process.Pid, stdin: stdin, lines: make(chan answerLine, 1),
		exited: make(chan struct{}), log: cfg.Logger.WithValues("pid", cmd.Process.Pid)}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		h.drain(stderr)
	}()
	go func() {
		defer wg.Done()
		defer close(h.lines)
		r := bufio.NewReaderSize(stdout, 64<<10)
		for {
			line, err := readLine(r, cfg.MaxOutput+answerSlack)
			if err != nil {
				return
			}
			h.lines <- line
		}
	}()
	go func() {
		wg.Wait()
		_ = cmd.Wait()
		close(h.exited)
	}()
	return h, nil
}

// answerLine is one line of the host's stdout: its bytes, or (over) only its
// size when it was longer than the cap.
type answerLine struct {
	b    []byte
	size int
	over bool
}

// readLine reads one whole line of any length, keeping at most limit bytes of
// it: a longer line is read to its end and dropped (over). A last line
// without its newline is not an answer: err is set.
func readLine(r *bufio.Reader, limit int) (answerLine, error) {
	var l answerLine
	for {
		chunk, err := r.ReadSlice('\n')
		l.size += len(chunk)
		if !l.over {
			if len(l.b)+len(chunk) > limit {
				l.over, l.b = true, nil
			} else {
				l.b = append(l.b, chunk...)
			}
		}
		switch {
		case err == nil:
			return l, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return l, err
		}
	}
}

// drain logs the host's stderr (tracebacks, the tools' prints) and keeps its
// last lines for a failure's message. Lines of any length are read without
// stopping (a stopped drain would leave the tool blocked on a full pipe);
// each keeps its first stderrLineCap bytes.
func (h *Host) drain(r io.Reader) {
	br := bufio.NewReaderSize(r, 4096)
	var line []byte
	dropped := 0
	for {
		chunk, err := br.ReadSlice('\n')
		if err == nil {
			chunk = chunk[:len(chunk)-1]
		}
		take := min(len(chunk), stderrLineCap-len(line))
		line = append(line, chunk[:take]...)
		dropped += len(chunk) - take
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if len(line) > 0 || dropped > 0 || err == nil {
			text := strings.TrimRight(strings.ToValidUTF8(string(line), "\uFFFD"), "\r")
			if dropped > 0 {
				text += fmt.Sprintf(" … [%d more bytes]", dropped)
			}
			h.log.V(1).Info("python tool host stderr", "line", text)
			h.mu.Lock()
			h.tail = append(h.tail, text)
			if len(h.tail) > stderrTailLines {
				h.tail = h.tail[1:]
			}
			h.mu.Unlock()
		}
		line, dropped = line[:0], 0
		if err != nil {
			return
		}
	}
}

func (h *Host) recentStderr() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.tail, " | ")
}

type answer struct {
	OK      bool                         `json:"ok"`
	Error   string                       `json:"error"`
	Tool    string                       `json:"tool"`
	Resync  bool                         `json:"resync"`
	Tools   map[string]Info              `json:"tools"`
	Output  string                       `json:"output"`
	Ops     map[string][]json.RawMessage `json:"ops"`
	Learned map[string]string            `json:"learned"`
}

// decodeAnswer reads one line of the host's protocol.
func decodeAnswer(line []byte) (*answer, error) {
	var a answer
	if err := json.Unmarshal(line, &a); err != nil {
		return nil, fmt.Errorf("python tool host answered something that is not its protocol: %w", err)
	}
	if !a.OK && a.Error == "" {
		a.Error = "python tool host answered a failure without a message"
	}
	return &a, nil
}

// roundTrip sends one request and waits for its answer. A context that ends
// first kills the host: it may be mid-call, and nothing else can stop it.
func (h *Host) roundTrip(ctx context.Context, req any) (*answer, error) {
	h.mu.Lock()
	closed := h.closed
	h.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(req); err != nil {
		return nil, fmt.Errorf("encode a request to the python tool host: %w", err)
	}
	werr := make(chan error, 1)
	go func() {
		_, err := h.stdin.Write(buf.Bytes())
		werr <- err
	}()
	for {
		select {
		case line, ok := <-h.lines:
			if !ok {
				return nil, h.died()
			}
			if line.over {
				// Read to its end and dropped: the host is still in step.
				return &answer{Error: fmt.Sprintf("the tool's answer is %d bytes, over the limit of %d bytes; it was not returned",
					line.size, h.cfg.MaxOutput+answerSlack), Resync: true}, nil
			}
			a, err := decodeAnswer(line.b)
			if err != nil {
				h.Close()
				return nil, err
			}
			return a, nil
		case <-ctx.Done():
			h.Close()
			return nil, ctx.Err()
		case err := <-werr:
			if err != nil {
				return nil, fmt.Errorf("write to the python tool host: %w (%w)", err, h.died())
			}
			werr = nil // written: wait for the answer
		}
	}
}

func (h *Host) died() error {
	select {
	case <-h.exited:
	case <-time.After(time.Second):
	}
	msg := "python tool host exited"
	if st := h.cmd.ProcessState; st != nil {
		msg += " (" + st.String() + ")"
	}
	if tail := h.recentStderr(); tail != "" {
		msg += "; stderr: " + tail
	}
	return fmt.Errorf("%s: %w", msg, ErrClosed)
}

// Load imports the tools and returns each one's Info. A tool that cannot be
// loaded (its module missing, a class without invoke) is a *LoadError naming it.
func (h *Host) Load(ctx context.Context, tools []ToolSpec) (map[string]Info, error) {
	a, err := h.roundTrip(ctx, map[string]any{"op": "load", "paths": h.cfg.Paths, "tools": tools})
	if err != nil {
		return nil, err
	}
	if !a.OK {
		return nil, &LoadError{Tool: a.Tool, Message: a.Error}
	}
	return a.Tools, nil
}

// Set replaces the host's tables: dictTables maps a table the tools see as a
// dict to its key field ("" while unknown); pks maps a list table to its
// declared primary key (record-level writes need one).
func (h *Host) Set(ctx context.Context, tables map[string]json.RawMessage, dictTables, pks map[string]string) error {
	a, err := h.roundTrip(ctx, map[string]any{"op": "set", "tables": tables, "dict_tables": dictTables, "keys": pks})
	if err != nil {
		return err
	}
	if !a.OK {
		return fmt.Errorf("load the tables into the python tool host: %s", a.Error)
	}
	return nil
}

// Call runs one tool. A tool's own failure is a *ToolError; any other error
// means the host is gone.
func (h *Host) Call(ctx context.Context, tool string, args json.RawMessage) (*Result, error) {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	a, err := h.roundTrip(ctx, map[string]any{"op": "call", "tool": tool, "args": args})
	if err != nil {
		return nil, err
	}
	if !a.OK {
		return nil, &ToolError{Message: a.Error, Resync: a.Resync}
	}
	if len(a.Output) > h.cfg.MaxOutput {
		// The host applied the call's changes to its copy: drop them and
		// have it reload.
		return nil, &ToolError{Resync: true, Message: fmt.Sprintf("the tool's result is %d bytes, over the limit of %d bytes; it was not returned",
			len(a.Output), h.cfg.MaxOutput)}
	}
	return &Result{Output: a.Output, Ops: a.Ops, Learned: a.Learned}, nil
}

// Close ends the host and every process below its supervisor (whatever
// its group, session or environment) and returns once they are all gone.
func (h *Host) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	h.mu.Unlock()
	h.stdin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := proc.Stop(ctx, h.pid, h.exited); err != nil {
		return fmt.Errorf("stop the python tool host: %w", err)
	}
	return nil
}
