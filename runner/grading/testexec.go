package grading

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner/grading/gradefmt"
	"tolokaforge.io/operator/runner/grading/testexec"
	"tolokaforge.io/operator/runner/proc"
)

// WithVerifierOutputCap bounds the test_execution verifier's kept output; n <= 0 keeps
// the default.
func WithVerifierOutputCap(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.verifier.OutputCap = n
		}
	}
}

// WithVerifierLimits starts the test_execution verifier under l (RLIMIT_AS,
// RLIMIT_NPROC, RLIMIT_NOFILE), as the runner starts tool processes: the
// verifier runs code the pack ships, in the pod that serves other trials.
func WithVerifierLimits(l proc.Limits) Option {
	return func(o *options) { o.verifier.Limits = l }
}

// runTestExecution grades a grading_method: test_execution trial: the task's verifier
// command runs in the trial's work directory, and its reward file (a float in [0, 1])
// is the score; when the verifier wrote none, exit code 0 scores 1.0 and any other
// 0.0. A verifier that cannot start, times out, or writes anything but such a number
// fails the RPC naming why: its outcome is unknown, not 0.0. The component phase and
// the ledger do not apply (runner-protocol.md).
func runTestExecution(ctx context.Context, g *gradeCtx) (*runnerpb.Grade, error) {
	te := g.cfg.TestExecution
	if te == nil || len(te.Command) == 0 {
		return nil, notAsAuthored(g.id, "grading_method is test_execution but test_execution.command is empty")
	}
	dir := g.env.WorkDir()
	if dir == "" {
		return nil, gradingError(errors.New("test_execution: the trial has no work directory to run the verifier in"))
	}
	res, err := testexec.Run(ctx, dir, te, g.id, g.opts.verifier)
	if err != nil {
		return nil, gradingError(err)
	}
	g.opts.log.V(1).Info("verifier finished", "trial", g.id, "exit_code", res.ExitCode, "output_bytes", res.OutputBytes())

	score, how, err := res.Score()
	if err != nil {
		return nil, gradingError(err)
	}
	threshold := task.DefaultPassThreshold
	if g.cfg.PassThreshold != nil {
		threshold = *g.cfg.PassThreshold
	}
	reason := fmt.Sprintf("Test execution: score=%s (%s)", gradefmt.Score(score), how)
	if score < 1 {
		if tail := res.Tail(); tail != "" {
			reason += "; output tail: " + strconv.Quote(tail)
		}
	}
	return &runnerpb.Grade{
		BinaryPass: score >= threshold,
		Score:      score,
		Components: &runnerpb.GradeComponents{
			StateChecks: notEvaluated, TranscriptRules: notEvaluated, LlmJudge: notEvaluated, CustomChecks: notEvaluated,
		},
		Reasons: reason,
	}, nil
}
