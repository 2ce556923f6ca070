package grading

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner/grading/gradefmt"
	"tolokaforge.io/operator/runner/proc"
)

// Defaults of grading_method: test_execution.
const (
	// defaultVerifierTimeout applies when test_execution.timeout_s is 0.
	defaultVerifierTimeout = 300 * time.Second
	// defaultVerifierOutputCap bounds the verifier's combined stdout and stderr kept in
	// memory; the rest is counted and dropped.
	defaultVerifierOutputCap = 64 << 10
	// maxRewardFileBytes bounds the reward file read: it holds one number.
	maxRewardFileBytes = 4 << 10
	// verifierReapTimeout bounds killing and reaping the verifier's process group
	// after its main process exited.
	verifierReapTimeout = 10 * time.Second
	// verifierDrainGrace is how long the verifier's output is still read after its
	// group was killed: long enough for what is in the pipe, short enough that a
	// process which left the group and holds the pipe does not delay the grade.
	verifierDrainGrace = 200 * time.Millisecond
	// reasonTailBytes is how much of the verifier's output a failing grade quotes.
	reasonTailBytes = 500
)

type verifierOptions struct {
	outputCap int
	limits    proc.Limits
}

func defaultVerifierOptions() verifierOptions {
	return verifierOptions{outputCap: defaultVerifierOutputCap}
}

// WithVerifierLimits starts the test_execution verifier under l (RLIMIT_AS,
// RLIMIT_NPROC, RLIMIT_NOFILE), as the runner starts tool processes: the
// verifier runs code the pack ships, in the pod that serves other trials.
func WithVerifierLimits(l proc.Limits) Option {
	return func(o *options) { o.verifier.limits = l }
}

// runTestExecution grades a grading_method: test_execution trial: the task's verifier
// command runs in a sandbox built for this grade (the agent's files with the task's test
// files laid over them as registered; see newSandbox), and its reward file (a float in
// [0, 1]) is the score; when the verifier wrote none, exit code 0 scores 1.0 and any
// other 0.0. A verifier that cannot start, times out, or writes anything but such a
// number fails the RPC naming why: its outcome is unknown, not 0.0. The component phase
// and the ledger do not apply (runner-protocol.md).
func runTestExecution(ctx context.Context, g *gradeCtx) (*runnerpb.Grade, error) {
	te := g.cfg.TestExecution
	if te == nil || len(te.Command) == 0 {
		return nil, notAsAuthored(g.id, "grading_method is test_execution but test_execution.command is empty")
	}
	reward, err := sandboxRewardPath(te.RewardFile)
	if err != nil {
		// RegisterTrial refuses it; a grade reached without registering must too.
		return nil, notAsAuthored(g.id, err.Error())
	}
	timeout := defaultVerifierTimeout
	if te.TimeoutS > 0 {
		timeout = time.Duration(te.TimeoutS * float64(time.Second))
	}
	site := g.env.VerifierSite()
	sb, err := newSandbox(site, g.env.WorkDir(), g.env.Spec().Task, te.Command, reward)
	if err != nil {
		return nil, gradingError(err)
	}
	defer sb.remove()

	rewardAbs := ""
	if reward != "" {
		rewardAbs = sb.abs(reward)
	}
	// A minimal environment: the runner's own (which may carry service settings) is
	// none of the verifier's business. TEST_DIR is where Terminal-Bench's verifiers
	// look for their tests; REWARD_FILE is where the runner reads the verdict.
	// Its temporary files go beside the sandbox, not into it (the verifier
	// may list its files) and not into the machine's /tmp, which its
	// confinement does not reach.
	tmp, err := os.MkdirTemp(site.Dir, "tmp-")
	if err != nil {
		return nil, gradingError(fmt.Errorf("test_execution: create the verifier's temporary folder: %w", err))
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	env := append([]string{
		"PATH=" + envOr("PATH", "/usr/local/bin:/usr/bin:/bin"),
		"HOME=" + sb.dir,
		"LANG=C.UTF-8",
		"TMPDIR=" + tmp,
		"TRIAL_ID=" + g.id,
		"REWARD_FILE=" + rewardAbs,
		"TEST_DIR=" + sb.abs(verifierTestDir),
	}, site.Env...)
	// The verifier writes its sandbox and its temporary folder and reads
	// the system's runtime (package proc adds it): not the trial's tools'
	// folders, another trial, the runner's secrets or its auth token.
	confine := &proc.Confinement{ReadWrite: []string{sb.dir, tmp}}
	grade, err := verifierGrade(ctx, g, sb, reward, env, timeout, confine)
	verifierRan(g.env, verifierOutcome(grade, err))
	if err != nil {
		return nil, gradingError(err)
	}
	return grade, nil
}

// verifierGrade runs the verifier in sb and grades what it left.
func verifierGrade(ctx context.Context, g *gradeCtx, sb *sandbox, reward string, env []string, timeout time.Duration, confine *proc.Confinement) (*runnerpb.Grade, error) {
	te := g.cfg.TestExecution
	res, err := runVerifier(ctx, sb.dir, te.Command, env, timeout, g.opts.verifier, confine)
	if err != nil {
		return nil, err
	}
	g.opts.log.V(1).Info("verifier finished", "trial", g.id, "exit_code", res.exitCode, "output_bytes", res.out.total)

	score, how, err := verifierScore(sb.root, reward, res.exitCode)
	if err != nil {
		return nil, err
	}
	threshold := task.DefaultPassThreshold
	if g.cfg.PassThreshold != nil {
		threshold = *g.cfg.PassThreshold
	}
	reason := fmt.Sprintf("Test execution: score=%s (%s)", gradefmt.Score(score), how)
	if score < 1 {
		if tail := res.out.tail(reasonTailBytes); tail != "" {
			reason += "; output tail: " + strconv.Quote(tail)
		}
	}
	return testsGrade(score, threshold, reason), nil
}

type verifierResult struct {
	exitCode int
	out      *cappedBuffer
}

// runVerifier runs argv in dir under a supervisor (proc.Supervise) confined to c, in
// its own process group. Its verdict is final when the main process exits: the
// supervisor then kills and reaps everything below it (a background child that
// called setsid or cleared its environment included), and the output is read only
// as long as that takes. The output goes through a pipe the runner reads itself, not
// through exec's copying, so a child that still holds it can neither delay the grade
// nor lose it.
func runVerifier(ctx context.Context, dir string, argv, env []string, timeout time.Duration, vo verifierOptions, c *proc.Confinement) (verifierResult, error) {
	vctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(vctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	// Its own process group: the supervisor and the verifier, so the group
	// kill below is a backstop for both.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A timeout asks the supervisor to end the verifier's whole tree
	// (SIGKILL would leave its setsid children to the runner); WaitDelay
	// kills the supervisor itself if that takes too long.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = verifierReapTimeout
	if err := proc.Supervise(cmd, vo.limits, c); err != nil {
		return verifierResult{}, fmt.Errorf("test_execution: start the verifier command %q under %s: %w", argv, vo.limits, err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return verifierResult{}, fmt.Errorf("test_execution: create the verifier's output pipe: %w", err)
	}
	defer func() { _ = pr.Close() }()
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.Stdin = nil
	startErr := cmd.Start()
	_ = pw.Close() // the verifier holds its own copy
	if startErr != nil {
		return verifierResult{}, fmt.Errorf("test_execution: start the verifier command %q: %w", argv, startErr)
	}
	out := &cappedBuffer{cap: vo.outputCap}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(out, pr)
	}()

	err = cmd.Wait()
	// Whatever the verifier left running in its group goes too, reaped before the
	// grade returns.
	kctx, kcancel := context.WithTimeout(context.WithoutCancel(ctx), verifierReapTimeout)
	reapErr := proc.KillGroup(kctx, cmd.Process.Pid)
	kcancel()
	// What the group wrote before it died is in the pipe; a process that left the
	// group may hold it open for ever, so the read stops soon after.
	_ = pr.SetReadDeadline(time.Now().Add(verifierDrainGrace))
	<-copied
	if reapErr != nil {
		return verifierResult{}, fmt.Errorf("test_execution: kill what the verifier command %q left running: %w", argv, reapErr)
	}
	if vctx.Err() != nil {
		if ctx.Err() != nil {
			return verifierResult{}, fmt.Errorf("test_execution: grading was cancelled while the verifier command %q ran: %w", argv, ctx.Err())
		}
		return verifierResult{}, &verifierTimeoutError{msg: fmt.Sprintf("test_execution: the verifier command %q did not finish within %s; its process group was killed; output tail: %q",
			argv, timeout, out.tail(reasonTailBytes))}
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
// the exit code. how says which, for Grade.reasons. The file is read through the
// sandbox's root: a symlink the verifier left there cannot lead the read outside it.
func verifierScore(root *os.Root, reward string, exitCode int) (score float64, how string, err error) {
	if reward != "" {
		// O_NONBLOCK: a FIFO at the path must not hang the grade.
		f, err := root.OpenFile(reward, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		switch {
		case err == nil:
			defer func() { _ = f.Close() }()
			if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
				return 0, "", fmt.Errorf("test_execution: the reward file %s is not a regular file", reward)
			}
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
			return 0, "", fmt.Errorf("test_execution: open the reward file %s in the verifier's sandbox: %w", reward, err)
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

// testsGrade is a grade by tests alone (test_execution, a terminal task's
// verifier): no component was evaluated.
func testsGrade(score, threshold float64, reason string) *runnerpb.Grade {
	return &runnerpb.Grade{
		BinaryPass: score >= threshold,
		Score:      score,
		Components: &runnerpb.GradeComponents{
			StateChecks: notEvaluated, TranscriptRules: notEvaluated, LlmJudge: notEvaluated, CustomChecks: notEvaluated,
		},
		Reasons: reason,
	}
}
