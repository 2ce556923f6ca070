package testexec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner/grading/gradefmt"
	"tolokaforge.io/operator/runner/proc"
)

// Defaults of grading_method: test_execution.
const (
	// DefaultTimeout applies when test_execution.timeout_s is 0.
	DefaultTimeout = 300 * time.Second
	// DefaultOutputCap bounds the verifier's combined stdout and stderr kept in
	// memory; the rest is counted and dropped.
	DefaultOutputCap = 64 << 10
	// maxRewardFileBytes bounds the reward file read: it holds one number.
	maxRewardFileBytes = 4 << 10
	// verifierWaitDelay is how long Wait waits for the output pipes after the verifier
	// exited or was killed (a daemonized grandchild may hold them).
	verifierWaitDelay = 2 * time.Second
	// reasonTailBytes is how much of the verifier's output a failing grade quotes.
	reasonTailBytes = 500
)

// Options bound the verifier; the grader's With* options set them.
type Options struct {
	// OutputCap bounds the verifier's kept output.
	OutputCap int
	// Limits are the rlimits the verifier starts under (RLIMIT_AS, RLIMIT_NPROC,
	// RLIMIT_NOFILE), as the runner starts tool processes: the verifier runs code the
	// pack ships, in the pod that serves other trials.
	Limits proc.Limits
}

// DefaultOptions are the verifier's options before any grader option.
func DefaultOptions() Options {
	return Options{OutputCap: DefaultOutputCap}
}

// Run runs a grading_method: test_execution trial's verifier: te.Command (not empty)
// in the trial's work directory dir, after removing a reward file left before the run
// (only the verifier's own verdict counts). A verifier that cannot start, times out or
// dies by a signal is an error: its outcome is unknown, not 0.0. The Result scores it.
func Run(ctx context.Context, dir string, te *task.TestExecution, trialID string, o Options) (*Result, error) {
	timeout := DefaultTimeout
	if te.TimeoutS > 0 {
		timeout = time.Duration(te.TimeoutS * float64(time.Second))
	}
	reward := ""
	if te.RewardFile != "" {
		reward = te.RewardFile
		if !filepath.IsAbs(reward) {
			reward = filepath.Join(dir, reward)
		}
		// Only the verifier's own verdict counts: a reward file the agent left behind
		// would otherwise grade the trial.
		if err := os.Remove(reward); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("test_execution: remove the stale reward file %s before the verifier runs: %w", reward, err)
		}
		if err := os.MkdirAll(filepath.Dir(reward), 0o755); err != nil {
			return nil, fmt.Errorf("test_execution: create the reward file's directory: %w", err)
		}
	}
	res, err := runVerifier(ctx, dir, te.Command, reward, trialID, timeout, o)
	if err != nil {
		return nil, err
	}
	return &Result{ExitCode: res.exitCode, reward: reward, out: res.out}, nil
}

// Result is a verifier run that finished.
type Result struct {
	ExitCode int
	reward   string // the reward file's path; "" when none is declared
	out      *cappedBuffer
}

// Score applies the rule: the reward file (a number in [0, 1]) when the verifier wrote
// one, else exit code 0 scores 1.0 and any other 0.0; a reward file holding anything
// else is an error naming the file and the content. how says which rule, for
// Grade.reasons.
func (r *Result) Score() (score float64, how string, err error) {
	return verifierScore(r.reward, r.ExitCode)
}

// OutputBytes is how much output the verifier wrote, kept or not.
func (r *Result) OutputBytes() int64 { return r.out.total }

// Tail is the end of the verifier's output a failing grade quotes ("" when it wrote
// nothing), noting what the output cap dropped.
func (r *Result) Tail() string { return r.out.tail(reasonTailBytes) }

type verifierResult struct {
	exitCode int
	out      *cappedBuffer
}

func runVerifier(ctx context.Context, dir string, argv []string, reward, trialID string, timeout time.Duration, vo Options) (verifierResult, error) {
	vctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(vctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	// A minimal environment: the runner's own (which may carry service settings) is
	// none of the verifier's business.
	cmd.Env = []string{
		"PATH=" + envOr("PATH", "/usr/local/bin:/usr/bin:/bin"),
		"HOME=" + dir,
		"LANG=C.UTF-8",
		"TRIAL_ID=" + trialID,
		"REWARD_FILE=" + reward,
	}
	// Its own process group, so a timeout kills every process the verifier started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = verifierWaitDelay
	if err := proc.Apply(cmd, vo.Limits); err != nil {
		return verifierResult{}, fmt.Errorf("test_execution: start the verifier command %q under %s: %w", argv, vo.Limits, err)
	}
	out := &cappedBuffer{cap: vo.OutputCap}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Stdin = nil

	if err := cmd.Start(); err != nil {
		return verifierResult{}, fmt.Errorf("test_execution: start the verifier command %q: %w", argv, err)
	}
	err := cmd.Wait()
	// Whatever the verifier left running in its group goes too.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if vctx.Err() != nil {
		if ctx.Err() != nil {
			return verifierResult{}, fmt.Errorf("test_execution: grading was cancelled while the verifier command %q ran: %w", argv, ctx.Err())
		}
		return verifierResult{}, fmt.Errorf("test_execution: the verifier command %q did not finish within %s; its process group was killed; output tail: %q",
			argv, timeout, out.tail(reasonTailBytes))
	}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return verifierResult{exitCode: 0, out: out}, nil
	case errors.As(err, &exitErr) && exitErr.ExitCode() >= 0:
		return verifierResult{exitCode: exitErr.ExitCode(), out: out}, nil
	case errors.As(err, &exitErr):
		return verifierResult{}, fmt.Errorf("test_execution: the verifier command %q was killed by a signal (%v); output tail: %q", argv, exitErr, out.tail(reasonTailBytes))
	default:
		return verifierResult{}, fmt.Errorf("test_execution: the verifier command %q: %w", argv, err)
	}
}

// verifierScore applies the rule: the reward file when the verifier wrote one, else
// the exit code. how says which, for Grade.reasons.
func verifierScore(reward string, exitCode int) (score float64, how string, err error) {
	if reward != "" {
		f, err := os.Open(reward)
		switch {
		case err == nil:
			defer func() { _ = f.Close() }()
			b, err := io.ReadAll(io.LimitReader(f, maxRewardFileBytes+1))
			if err != nil {
				return 0, "", fmt.Errorf("test_execution: read the reward file %s: %w", reward, err)
			}
			if len(b) > maxRewardFileBytes {
				return 0, "", fmt.Errorf("test_execution: the reward file %s is larger than %d bytes, not a number in [0, 1]", reward, maxRewardFileBytes)
			}
			text := strings.TrimSpace(string(b))
			v, perr := strconv.ParseFloat(text, 64)
			if perr != nil || math.IsNaN(v) || v < 0 || v > 1 {
				return 0, "", fmt.Errorf("test_execution: the reward file %s holds %s, not a number in [0, 1]", reward, gradefmt.Quote(text))
			}
			return v, fmt.Sprintf("reward %s from %s, verifier exit code %d", text, reward, exitCode), nil
		case !errors.Is(err, os.ErrNotExist):
			return 0, "", fmt.Errorf("test_execution: open the reward file %s: %w", reward, err)
		}
	}
	where := "no reward file declared"
	if reward != "" {
		where = "no reward file at " + reward
	}
	if exitCode == 0 {
		return 1, fmt.Sprintf("%s; verifier exit code 0", where), nil
	}
	return 0, fmt.Sprintf("%s; verifier exit code %d", where, exitCode), nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// cappedBuffer keeps the last cap bytes written to it (a test runner's summary comes
// last) and counts everything. The verifier's stdout and stderr share it, so it locks.
type cappedBuffer struct {
	mu    sync.Mutex
	cap   int
	buf   []byte
	total int64
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.total += int64(len(p))
	if len(p) >= b.cap {
		b.buf = append(b.buf[:0], p[len(p)-b.cap:]...)
		return len(p), nil
	}
	if over := len(b.buf) + len(p) - b.cap; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}

// tail returns the last n kept bytes, noting how much output the cap dropped.
func (b *cappedBuffer) tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf
	if len(s) > n {
		s = s[len(s)-n:]
	}
	out := strings.TrimSpace(string(s))
	if dropped := b.total - int64(len(b.buf)); dropped > 0 {
		out = fmt.Sprintf("[%d earlier bytes past the %d-byte output cap dropped] ", dropped, b.cap) + out
	}
	return out
}
