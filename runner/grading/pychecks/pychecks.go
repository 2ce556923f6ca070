package pychecks

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/runner/proc"
)

// suitePrefix opens every error about a suite; "Python" is a proper noun,
// which staticcheck's lowercase rule for error strings cannot know.
const suitePrefix = "Python checks"

// runnerFiles are the check runner and the checks_interface shim it puts first on
// sys.path, written out for each run.
//
//go:embed py/checkrunner.py py/tolokaforge
var runnerFiles embed.FS

// Bounds of one suite run.
const (
	// DefaultTimeout is a suite's timeout_seconds when the task gives none (upstream's).
	DefaultTimeout = 30 * time.Second
	// maxLineBytes bounds one report line: a result's details are the pack's, and
	// the report must not take the runner's memory.
	maxLineBytes = 8 << 20
	// maxMessageBytes and maxDetailsBytes bound what one result carries into the
	// Grade, which travels to the Trial's status and the artifacts.
	maxMessageBytes = 4 << 10
	maxDetailsBytes = 64 << 10
	// stderrCap is how much of the suite's own output is kept, for the reason of a
	// runner that died.
	stderrCap = 16 << 10
	// stderrTail is how much of it a message quotes.
	stderrTail = 500
	// ioGrace is how long the report is still read after the runner's main
	// process exited: a child that holds stdout must not delay the grade.
	ioGrace = 500 * time.Millisecond
	// reapTimeout bounds killing and reaping what the suite left running.
	reapTimeout = 10 * time.Second
)

// Statuses of a CustomCheckResult.
const (
	StatusPassed  = "passed"
	StatusFailed  = "failed"
	StatusSkipped = "skipped"
	StatusError   = "error"
)

// Site is where and how a suite runs for one trial.
type Site struct {
	// Python is the interpreter; empty: "python3" on PATH.
	Python string
	// ArtifactsDir is where the task's tool_artifacts were unpacked: the suite's
	// file and its relative_imports resolve there.
	ArtifactsDir string
	// ScratchDir is a directory of the trial's own, outside every tool's reach,
	// under which each run writes the check runner and removes it after.
	ScratchDir string
	// Limits are the rlimits the runner and what it starts run under.
	Limits proc.Limits
	// Env is added to the runner's minimal environment (the trial's tag, so the
	// trial's teardown also finds a process that left the group).
	Env []string
	// Confine, when set, is the file system the suite may use (Landlock)
	// beyond its own scratch folder, which is added read-write, and
	// ArtifactsDir, added read-only.
	Confine *proc.Confinement
}

// Suite is the task's custom_checks Python suite.
type Suite struct {
	// File is the suite's path among the tool_artifacts (slash-separated).
	File string
	// RelativeImports are folders relative to File's folder, put on sys.path.
	RelativeImports []string
	// Timeout bounds the whole run (import, init and every check); zero:
	// DefaultTimeout.
	Timeout time.Duration
}

// Context is what the suite's @init receives as its CheckContext.
type Context struct {
	// InitialState and FinalState are JSON objects of tables (see Tables).
	InitialState json.RawMessage `json:"initial_state"`
	FinalState   json.RawMessage `json:"final_state"`
	Transcript   Transcript      `json:"transcript"`
	Task         Task            `json:"task"`
}

// Transcript is the conversation, as upstream's Transcript.
type Transcript struct {
	Messages []Message `json:"messages"`
}

// Message is one turn: role system, user, assistant or tool.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls"`
	Name       string     `json:"name,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// ToolCall is one call a turn made. Arguments must be a JSON object; Status is
// "success" or "error" (upstream's ToolCallStatus).
type ToolCall struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Result    *string         `json:"result"`
	Status    string          `json:"status"`
}

// Task is upstream's TaskContext.
type Task struct {
	TaskID          string                     `json:"task_id"`
	TaskName        string                     `json:"task_name"`
	TaskDescription string                     `json:"task_description"`
	Domain          string                     `json:"domain"`
	Tags            []string                   `json:"tags"`
	Extra           map[string]json.RawMessage `json:"extra"`
}

// SuiteError is a suite that did not run to the end: it could not start or be
// imported, declared an unsupported interface, defined no check, its @init raised,
// it outran its timeout, or its runner died. Kind says which; the results of the
// checks that finished before it are still returned beside it.
type SuiteError struct {
	Kind string // start, module, syntax, import, interface, no_checks, context, init, timeout, exited, protocol
	// Module is the module an import could not find (Kind "module").
	Module string
	// Unfinished are the checks that loaded but did not report (Kind "timeout"
	// or "exited"); Report.Results carries an error result for each after a
	// timeout.
	Unfinished []string
	msg        string
}

func (e *SuiteError) Error() string { return e.msg }

// Report is what a run learned.
type Report struct {
	// Checks are the suite's check names in definition order; empty when it did
	// not load.
	Checks []string
	// Results has one entry per check that reported, in definition order, and,
	// after a timeout, an error entry for each check that did not finish.
	Results []*runnerpb.CustomCheckResult
}

// Run runs suite with cctx as its CheckContext and returns each check's result.
// A check that raises or returns something other than CheckPassed, CheckFailed or
// CheckSkipped is an error result, and the others still run; a suite that could
// not run to the end is a *SuiteError, with the results of what finished. Other
// errors (the scratch directory, the request) are faults of the runner.
func Run(ctx context.Context, site Site, suite Suite, cctx *Context) (*Report, error) {
	file, err := clean(suite.File)
	if err != nil {
		return nil, &SuiteError{Kind: "start", msg: fmt.Sprintf("Python checks: file %q: %v", suite.File, err)}
	}
	timeout := suite.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	abs := filepath.Join(site.ArtifactsDir, filepath.FromSlash(file))
	if fi, err := os.Stat(abs); err != nil || !fi.Mode().IsRegular() {
		return nil, &SuiteError{Kind: "start", msg: fmt.Sprintf("Python checks %s: the file is not among the trial's tool_artifacts", file)}
	}
	var imports []string
	for _, ri := range suite.RelativeImports {
		rel, err := clean(path.Join(path.Dir(file), ri))
		if err != nil {
			return nil, &SuiteError{Kind: "start", msg: fmt.Sprintf("Python checks %s: relative_imports %q: %v", file, ri, err)}
		}
		imports = append(imports, filepath.Join(site.ArtifactsDir, filepath.FromSlash(rel)))
	}
	python := site.Python
	if python == "" {
		python = "python3"
	}
	pythonPath, err := exec.LookPath(python)
	if err != nil {
		return nil, &SuiteError{Kind: "start", msg: fmt.Sprintf("Python checks %s: the interpreter %q did not start: %v", file, python, err)}
	}

	if err := os.MkdirAll(site.ScratchDir, 0o700); err != nil {
		return nil, fmt.Errorf("%s %s: create the scratch directory: %w", suitePrefix, file, err)
	}
	dir, err := os.MkdirTemp(site.ScratchDir, "pychecks-")
	if err != nil {
		return nil, fmt.Errorf("%s %s: create the check runner's directory: %w", suitePrefix, file, err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if err := writeRunner(dir); err != nil {
		return nil, fmt.Errorf("%s %s: write the check runner: %w", suitePrefix, file, err)
	}
	req, err := json.Marshal(map[string]any{
		"file": abs, "name": file, "root": site.ArtifactsDir, "relative_imports": imports, "context": cctx,
	})
	if err != nil {
		return nil, fmt.Errorf("%s %s: encode the CheckContext: %w", suitePrefix, file, err)
	}

	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// -B: the pack's folders stay as shipped (no __pycache__ beside its files).
	cmd := exec.CommandContext(rctx, pythonPath, "-B", filepath.Join(dir, "checkrunner.py"))
	cmd.Dir = dir
	// A minimal environment: the runner's own may carry service settings and keys.
	// PYTHONHASHSEED fixes set and dict-of-set iteration order, so a suite that
	// depends on it grades the same trial the same way twice.
	cmd.Env = append([]string{
		"PATH=" + envOr("PATH", "/usr/local/bin:/usr/bin:/bin"),
		"HOME=" + dir, "TMPDIR=" + dir, "LANG=C.UTF-8",
		"PYTHONDONTWRITEBYTECODE=1", "PYTHONIOENCODING=utf-8", "PYTHONHASHSEED=0",
	}, site.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The supervisor (proc.Supervise) ends the suite's whole tree on SIGTERM.
	cmd.Cancel = func() error { return syscall.Kill(cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = ioGrace
	cmd.Stdin = bytes.NewReader(req)
	rep := &reportWriter{}
	stderr := &tailBuffer{cap: stderrCap}
	cmd.Stdout, cmd.Stderr = rep, stderr
	var confine *proc.Confinement
	if site.Confine != nil {
		c := *site.Confine
		c.ReadOnly = append(append([]string(nil), c.ReadOnly...), site.ArtifactsDir)
		c.ReadWrite = append(append([]string(nil), c.ReadWrite...), dir)
		confine = &c
	}
	if err := proc.Supervise(cmd, site.Limits, confine); err != nil {
		return nil, &SuiteError{Kind: "start", msg: fmt.Sprintf("Python checks %s: start %s under %s: %v", file, python, site.Limits, err)}
	}
	if err := cmd.Start(); err != nil {
		return nil, &SuiteError{Kind: "start", msg: fmt.Sprintf("Python checks %s: the interpreter %q did not start: %v", file, python, err)}
	}
	waitErr := cmd.Wait()
	kctx, kcancel := context.WithTimeout(context.WithoutCancel(ctx), reapTimeout)
	reapErr := proc.KillGroup(kctx, cmd.Process.Pid)
	kcancel()
	if reapErr != nil {
		return nil, fmt.Errorf("%s %s: kill what the suite left running: %w", suitePrefix, file, reapErr)
	}
	return rep.finish(file, suite.RelativeImports, timeout, rctx.Err() != nil && ctx.Err() == nil, ctx.Err(), waitErr, stderr)
}

// clean validates a slash path inside the artifacts: relative, no "..".
func clean(p string) (string, error) {
	if p == "" {
		return "", errors.New("empty path")
	}
	if path.IsAbs(p) || filepath.IsAbs(p) {
		return "", errors.New("an absolute path; want one relative to the tool_artifacts")
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", errors.New("leaves the tool_artifacts")
	}
	return c, nil
}

func writeRunner(dir string) error {
	return fs.WalkDir(runnerFiles, "py", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(p, "py")))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o700)
		}
		b, err := runnerFiles.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o600)
	})
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// event is one report line of checkrunner.py.
type event struct {
	Event            string   `json:"event"`
	Checks           []string `json:"checks"`
	InterfaceVersion string   `json:"interface_version"`
	CheckName        string   `json:"check_name"`
	Status           string   `json:"status"`
	Score            *float64 `json:"score"`
	Message          string   `json:"message"`
	DetailsJSON      string   `json:"details_json"`
	Kind             string   `json:"kind"`
	Module           string   `json:"module"`
}

// reportWriter parses the report as it arrives, so what a suite finished before a
// timeout is known.
type reportWriter struct {
	mu       sync.Mutex
	pending  []byte
	checks   []string
	loaded   bool
	results  map[string]*runnerpb.CustomCheckResult
	suiteErr *event
	done     bool
	skipping bool   // inside an oversized line, dropped
	bad      string // the first unreadable line, why
}

func (w *reportWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if !w.skipping && len(w.pending)+len(p) > maxLineBytes {
				w.fail(fmt.Sprintf("a line longer than %d bytes", maxLineBytes))
				w.skipping, w.pending = true, w.pending[:0]
			}
			if !w.skipping {
				w.pending = append(w.pending, p...)
			}
			break
		}
		line := append(w.pending, p[:i]...)
		w.pending, p = w.pending[:0], p[i+1:]
		if w.skipping { // the end of an oversized line
			w.skipping = false
			continue
		}
		w.line(line)
	}
	return n, nil
}

func (w *reportWriter) fail(why string) {
	if w.bad == "" {
		w.bad = why
	}
}

func (w *reportWriter) line(b []byte) {
	if w.bad != "" || len(bytes.TrimSpace(b)) == 0 {
		return
	}
	var ev event
	if err := json.Unmarshal(b, &ev); err != nil {
		w.fail(fmt.Sprintf("%q: %v", truncate(string(b), 200), err))
		return
	}
	switch ev.Event {
	case "loaded":
		w.loaded, w.checks = true, ev.Checks
		w.results = make(map[string]*runnerpb.CustomCheckResult, len(ev.Checks))
	case "result":
		r, err := result(&ev)
		switch {
		case err != nil:
			w.fail(err.Error())
		case !w.loaded:
			w.fail(fmt.Sprintf("a result for %q before the suite loaded", ev.CheckName))
		default:
			w.results[ev.CheckName] = r
		}
	case "suite_error":
		if w.suiteErr == nil {
			w.suiteErr = &ev
		}
	case "done":
		w.done = true
	default:
		w.fail(fmt.Sprintf("unknown event %q", ev.Event))
	}
}

func result(ev *event) (*runnerpb.CustomCheckResult, error) {
	r := &runnerpb.CustomCheckResult{CheckName: ev.CheckName, Status: ev.Status, Message: truncate(ev.Message, maxMessageBytes), DetailsJson: ev.DetailsJSON}
	switch ev.Status {
	case StatusPassed, StatusFailed, StatusSkipped, StatusError:
	default:
		return nil, fmt.Errorf("check %q: unknown status %q", ev.CheckName, ev.Status)
	}
	if ev.Score != nil {
		if s := *ev.Score; !(s >= 0 && s <= 1) {
			return nil, fmt.Errorf("check %q: score %v is outside [0, 1]", ev.CheckName, s)
		}
		r.Score = *ev.Score
	}
	if len(r.DetailsJson) > maxDetailsBytes {
		r.DetailsJson = fmt.Sprintf(`{"truncated":"the details were %d bytes of JSON, over the %d-byte cap"}`, len(r.DetailsJson), maxDetailsBytes)
	} else if r.DetailsJson == "" || !json.Valid([]byte(r.DetailsJson)) {
		r.DetailsJson = "{}"
	}
	return r, nil
}

// finish turns what was read into the report and the suite's error, if any.
func (w *reportWriter) finish(file string, relImports []string, timeout time.Duration, timedOut bool, cancelled, waitErr error, stderr *tailBuffer) (*Report, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	rep := &Report{Checks: w.checks}
	var unfinished []string
	for _, name := range w.checks {
		if r, ok := w.results[name]; ok {
			rep.Results = append(rep.Results, r)
			continue
		}
		unfinished = append(unfinished, name)
	}
	prefix := "Python checks " + file + ": "
	switch {
	case w.bad != "":
		return rep, &SuiteError{Kind: "protocol", msg: prefix + "the check runner wrote an unreadable report line: " + w.bad}
	case w.suiteErr != nil:
		ev := w.suiteErr
		msg := prefix + ev.Message
		if ev.Kind == "module" {
			msg = fmt.Sprintf("%smodule %q not found (%s); relative_imports: %s", prefix, ev.Module, ev.Message, quoteList(relImports))
		}
		return rep, &SuiteError{Kind: ev.Kind, Module: ev.Module, msg: msg}
	case w.done:
		return rep, nil
	case cancelled != nil:
		return rep, fmt.Errorf("%sgrading was cancelled while the suite ran: %w", prefix, cancelled)
	case timedOut:
		msg := fmt.Sprintf("%sdid not finish within its timeout_seconds (%s); its process group was killed", prefix, timeout)
		if !w.loaded {
			msg += "; it had not loaded its checks"
		} else {
			msg += "; checks that did not finish: " + strings.Join(unfinished, ", ")
			for _, name := range unfinished {
				rep.Results = append(rep.Results, &runnerpb.CustomCheckResult{CheckName: name, Status: StatusError, DetailsJson: "{}",
					Message: fmt.Sprintf("did not finish within the suite's timeout_seconds (%s)", timeout)})
			}
		}
		return rep, &SuiteError{Kind: "timeout", Unfinished: unfinished, msg: msg}
	}
	how := "exited"
	if waitErr != nil {
		how = "exited (" + waitErr.Error() + ")"
	}
	msg := fmt.Sprintf("%sthe check runner %s before reporting every check", prefix, how)
	if len(unfinished) > 0 {
		msg += "; checks that did not finish: " + strings.Join(unfinished, ", ")
	}
	if tail := stderr.tail(stderrTail); tail != "" {
		msg += fmt.Sprintf("; stderr tail: %q", tail)
	}
	for _, name := range unfinished {
		rep.Results = append(rep.Results, &runnerpb.CustomCheckResult{CheckName: name, Status: StatusError, DetailsJson: "{}",
			Message: "did not finish: the check runner exited before reporting it"})
	}
	return rep, &SuiteError{Kind: "exited", Unfinished: unfinished, msg: msg}
}

func quoteList(xs []string) string {
	b, _ := json.Marshal(xs)
	if xs == nil {
		return "[]"
	}
	return string(b)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + fmt.Sprintf("… [%d more bytes]", len(s)-n)
}

// tailBuffer keeps the last cap bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	cap int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.cap; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf
	if len(s) > n {
		s = s[len(s)-n:]
	}
	return strings.TrimSpace(string(s))
}
