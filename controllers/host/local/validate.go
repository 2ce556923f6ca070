package local

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task/pack"
)

// Verdict is one task's validation result.
type Verdict struct {
	Dir, TaskID string
	Pass        bool
	// Score is the grade's score, StateScore the state checks' (nil when
	// the task has none or the trial was not graded).
	Score      float64
	StateScore *float64
	Outcome    string
	Why        string
}

// ValidatePack converts the pack in dir and runs its golden path with the oracle on s.
// Diagnostics go to diag.
func ValidatePack(ctx context.Context, s *Stack, dir string, opts pack.Options, run OracleRun, strict bool, diag io.Writer) Verdict {
	v := Verdict{Dir: dir, TaskID: "?"}
	conv, err := pack.Convert(dir, opts)
	if err != nil {
		v.Why = err.Error()
		return v
	}
	v.TaskID = conv.Description.TaskID
	for _, d := range conv.Diagnostics {
		fmt.Fprintln(diag, d.String())
	}
	maxTurns := 0
	if conv.MaxTurns != nil {
		maxTurns = int(*conv.MaxTurns)
	}
	res := s.RunOracle(ctx, conv.Description, conv.InitialUserMessage, maxTurns, 0, run)
	return judge(v, res.Outcome, res.Reason, res.Message, res.Grade, strict)
}

// judge decides a task's verdict from its oracle trial. A golden replay
// proves the state checks; transcript and judge components are reported
// but only --strict requires them.
func judge(v Verdict, outcome evalv1.AttemptOutcome, reason, message string, g *runnerpb.Grade, strict bool) Verdict {
	v.Outcome = string(outcome)
	if (outcome != evalv1.OutcomePassed && outcome != evalv1.OutcomeFailed) || g == nil {
		v.Why = fmt.Sprintf("the oracle's trial ended %s (%s): %s", outcome, reason, message)
		return v
	}
	v.Score = g.GetScore()
	if c := g.GetComponents(); c != nil && c.GetStateChecks() >= 0 {
		s := c.GetStateChecks()
		v.StateScore = &s
	}
	switch {
	case v.StateScore == nil:
		v.Why = "the golden path decides nothing: the task has no state checks to replay it against; reasons: " + g.GetReasons()
	case *v.StateScore != 1:
		v.Why = "the golden path does not reach the expected state: " + g.GetReasons()
	case strict && v.Score != 1:
		v.Why = "--strict: the grade is below 1.0: " + g.GetReasons()
	default:
		v.Pass = true
		v.Why = "golden path verified"
		if v.Score != 1 {
			v.Why += "; components a golden replay cannot exercise (transcript, judge) scored below 1: " + notStateReasons(g.GetReasons())
		}
	}
	return v
}

// notStateReasons keeps the reasons that are not the state checks'.
func notStateReasons(reasons string) string {
	var keep []string
	for _, r := range strings.Split(reasons, " | ") {
		if !strings.HasPrefix(r, "State:") && !strings.HasPrefix(r, "JSONPath:") {
			keep = append(keep, r)
		}
	}
	sort.Strings(keep)
	return strings.Join(keep, " | ")
}
