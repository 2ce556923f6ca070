package host

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// probeTimeout bounds the HealthCheck the host sends when a runner call
// failed in a way that may be the infrastructure's: the runner's own DB probe
// gives up after 2 s, so a stopped (SIGSTOP) DB service still gets an answer.
const probeTimeout = 5 * time.Second

// stackHealth is the stack's state as the runner reports it.
type stackHealth int

const (
	// runnerDown: the runner did not answer HealthCheck (killed, draining,
	// network gone).
	runnerDown stackHealth = iota
	// dbDown: the runner answered, the DB service behind it did not.
	dbDown
	// stackUp: both answered.
	stackUp
)

// probe asks the runner how it and its DB service are. It is what tells an
// infrastructure fault from the tool's or the grader's own answer without
// reading error texts.
func (r *run) probe(ctx context.Context) stackHealth {
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), probeTimeout)
	defer cancel()
	resp, err := r.cfg.Runner.HealthCheck(pctx, &runnerpb.HealthCheckRequest{})
	switch {
	case err != nil:
		r.log.V(1).Info("runner health probe failed", "error", err.Error())
		return runnerDown
	case resp.GetStatus() == "unhealthy":
		return runnerDown
	case !resp.GetDbServiceConnected():
		return dbDown
	}
	return stackUp
}

// infraEnding ends the attempt as an infrastructure fault (InfraFailed,
// retried by the controller). The termination is trial_lost: what the
// episode held is out of reach, and nothing of it is graded.
func infraEnding(reason, msg string) *ending {
	return &ending{outcome: evalv1.OutcomeInfraFailed, reason: reason, message: msg, termination: task.TerminationTrialLost}
}

// callFault classifies a runner call that failed at gRPC level: UNAVAILABLE
// from a runner that still answers is its DB service (the runner says so for
// a DB transport fault), and so is any failure while the runner reports its
// DB service unreachable; everything else is the runner's.
func (r *run) callFault(ctx context.Context, what string, err error) *ending {
	code, msg := status.Code(err), status.Convert(err).Message()
	switch h := r.probe(ctx); {
	case h == dbDown || (h == stackUp && code == codes.Unavailable):
		return infraEnding(evalv1.ReasonDBServiceUnavailable,
			fmt.Sprintf("%s: DB service unavailable (%s): %s", what, code, msg))
	default:
		return infraEnding(evalv1.ReasonRunnerUnavailable,
			fmt.Sprintf("%s: runner unreachable (%s): %s", what, code, msg))
	}
}

// answerFault checks, after an answer that an unreachable DB service would
// also explain (a tool TIMEOUT, a grading error), whether the DB service is
// reachable. Nil: it is, and the answer stands as the tool's or the
// grader's. Otherwise the ending of an infrastructure fault: the answer is
// neither shown to the agent nor graded.
func (r *run) answerFault(ctx context.Context, what, answer string) *ending {
	switch r.probe(ctx) {
	case dbDown:
		return infraEnding(evalv1.ReasonDBServiceUnavailable,
			fmt.Sprintf("%s: the runner answered %q while its DB service was unreachable", what, answer))
	case runnerDown:
		return infraEnding(evalv1.ReasonRunnerUnavailable,
			fmt.Sprintf("%s: the runner answered %q, then stopped answering", what, answer))
	}
	return nil
}
