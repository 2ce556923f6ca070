package grading

import (
	"time"

	"github.com/go-logr/logr"

	"tolokaforge.io/operator/runner/grading/judge"
)

// Defaults of the grader's bounds.
const (
	// DefaultReplayBound caps the whole golden replay (reset, every action, the golden
	// hash). Each action is also bounded by its tool's timeout inside Env.Replay; this
	// bound keeps a pack with many slow actions from holding the trial indefinitely.
	DefaultReplayBound = 5 * time.Minute
	// DefaultRestoreTimeout bounds restoring pre_golden. It runs on a context detached
	// from the caller's cancellation: a cancelled GradeTrial must still put the agent's
	// state back.
	DefaultRestoreTimeout = 30 * time.Second
	// DefaultMaxDiffLines caps state_diff_json.diff_lines; the per-table records are
	// complete, the unified diff is for reading.
	DefaultMaxDiffLines = 2000
)

type options struct {
	log            logr.Logger
	replayBound    time.Duration
	restoreTimeout time.Duration
	maxDiffLines   int
	celCost        uint64
	celTimeout     time.Duration
	judge          judge.Options   // eval_judge.go
	verifier       verifierOptions // testexec.go
}

// Option configures New.
type Option func(*options)

// WithLogger sets the logger (default logr.Discard()).
func WithLogger(l logr.Logger) Option { return func(o *options) { o.log = l } }

// WithReplayBound caps the whole golden replay; d <= 0 keeps the default.
func WithReplayBound(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.replayBound = d
		}
	}
}

// WithRestoreTimeout bounds restoring the trial's state after replay; d <= 0 keeps the
// default.
func WithRestoreTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.restoreTimeout = d
		}
	}
}

// WithMaxDiffLines caps the unified diff carried in state_diff_json; n <= 0 keeps the
// default.
func WithMaxDiffLines(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.maxDiffLines = n
		}
	}
}

func newOptions(opts []Option) options {
	o := options{
		log:            logr.Discard(),
		replayBound:    DefaultReplayBound,
		restoreTimeout: DefaultRestoreTimeout,
		maxDiffLines:   DefaultMaxDiffLines,
		celCost:        DefaultCELCostLimit,
		celTimeout:     DefaultCELTimeout,
		judge:          judge.DefaultOptions(),
		verifier:       defaultVerifierOptions(),
	}
	for _, fn := range opts {
		fn(&o)
	}
	return o
}
