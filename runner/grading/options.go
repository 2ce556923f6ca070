package grading

import (
	"time"

	"github.com/go-logr/logr"

	"tolokaforge.io/operator/runner/grading/judge"
)

// Defaults of the grader's bounds.
const (
	// defaultReplayBound caps the whole golden replay (reset, every action, the golden
	// hash). Each action is also bounded by its tool's timeout inside Env.Replay; this
	// bound keeps a pack with many slow actions from holding the trial indefinitely.
	defaultReplayBound = 5 * time.Minute
	// defaultRestoreTimeout bounds restoring pre_golden. It runs on a context detached
	// from the caller's cancellation: a cancelled GradeTrial must still put the agent's
	// state back.
	defaultRestoreTimeout = 30 * time.Second
	// defaultMaxDiffLines caps state_diff_json.diff_lines; the per-table records are
	// complete, the unified diff is for reading.
	defaultMaxDiffLines = 2000
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

// withReplayBound caps the whole golden replay; d <= 0 keeps the default.
func withReplayBound(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.replayBound = d
		}
	}
}

// withMaxDiffLines caps the unified diff carried in state_diff_json; n <= 0 keeps the
// default.
func withMaxDiffLines(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.maxDiffLines = n
		}
	}
}

func newOptions(opts []Option) options {
	o := options{
		log:            logr.Discard(),
		replayBound:    defaultReplayBound,
		restoreTimeout: defaultRestoreTimeout,
		maxDiffLines:   defaultMaxDiffLines,
		celCost:        defaultCELCostLimit,
		celTimeout:     defaultCELTimeout,
		judge:          judge.DefaultOptions(),
		verifier:       defaultVerifierOptions(),
	}
	for _, fn := range opts {
		fn(&o)
	}
	return o
}
