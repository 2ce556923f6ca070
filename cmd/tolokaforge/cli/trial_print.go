package cli

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"tolokaforge.io/operator/api/result"
	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/controllers/host"
)

// previewRunes bounds a message in a progress line.
const previewRunes = 100

func preview(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= previewRunes {
		return s
	}
	r := []rune(s)
	return string(r[:previewRunes]) + "…"
}

func printTurn(w io.Writer, ev host.TurnEvent) {
	var b strings.Builder
	fmt.Fprintf(&b, "turn %d %-5s", ev.Turn, ev.Actor)
	if ev.Content != "" {
		fmt.Fprintf(&b, " %q", preview(ev.Content))
	}
	for i, c := range ev.ToolCalls {
		st := "not run"
		if i < len(ev.ToolStatuses) {
			st = ev.ToolStatuses[i]
		}
		fmt.Fprintf(&b, " -> %s [%s]", c, st)
	}
	fmt.Fprintln(w, b.String())
}

// printResult prints the outcome and maps it to Main's result.
func printResult(w io.Writer, res host.AttemptResult) error {
	fmt.Fprintf(w, "ended: %s after %d turns (outcome %s", orNone(string(res.TerminationReason)), res.Turns, res.Outcome)
	if res.Reason != "" {
		fmt.Fprintf(w, ", reason %s", res.Reason)
	}
	fmt.Fprintln(w, ")")
	if u := res.AgentUsage; u.Calls > 0 || u.Retries > 0 {
		fmt.Fprintf(w, "agent usage: %d calls (%d retries), %d prompt + %d completion tokens, $%.6f\n",
			u.Calls, u.Retries, u.PromptTokens, u.CompletionTokens, u.CostUSD)
	}
	if u := res.UserUsage; u.Calls > 0 || u.Retries > 0 {
		fmt.Fprintf(w, "user usage: %d calls (%d retries), %d prompt + %d completion tokens, $%.6f\n",
			u.Calls, u.Retries, u.PromptTokens, u.CompletionTokens, u.CostUSD)
	}
	if u := res.JudgeUsage; u.Calls > 0 || u.Retries > 0 || u.PromptTokens > 0 {
		fmt.Fprintf(w, "judge usage: %d calls (%d retries), %d prompt + %d completion tokens, $%.6f\n",
			u.Calls, u.Retries, u.PromptTokens, u.CompletionTokens, u.CostUSD)
	}
	if g := res.Grade; g != nil {
		read := result.FromWire(g)
		fmt.Fprintf(w, "grade: score %g, pass %t\n", read.Score, read.Pass)
		if line := componentsLine(read); line != "" {
			fmt.Fprintf(w, "components: %s\n", line)
		}
		if st := g.GetJudgeStatus(); st != runnerpb.JudgeStatus_JUDGE_STATUS_UNSPECIFIED {
			fmt.Fprintf(w, "judge: %s\n", strings.TrimPrefix(st.String(), "JUDGE_STATUS_"))
		}
		if read.Reasons != "" {
			fmt.Fprintf(w, "reasons: %s\n", read.Reasons)
		}
	} else if res.Message != "" {
		fmt.Fprintf(w, "no grade: %s\n", res.Message)
	}
	if res.ArtifactsPath != "" {
		fmt.Fprintf(w, "artifacts: %s\n", res.ArtifactsPath)
	}
	if res.ArtifactsError != nil {
		fmt.Fprintf(w, "artifacts not written: %v\n", res.ArtifactsError)
	}
	switch {
	case res.Grade != nil && res.Grade.GetBinaryPass():
		return nil
	case res.Grade != nil:
		return &exitError{code: 1, msg: fmt.Sprintf("trial failed: score %g", res.Grade.GetScore())}
	default:
		return &exitError{code: 1, msg: fmt.Sprintf("trial ended without a grade: %s: %s", res.Outcome, res.Message)}
	}
}

// componentsLine is each component's score, or its status when it has
// none ("state_checks 1, llm_judge errored").
func componentsLine(g *result.Grade) string {
	parts := make([]string, 0, len(g.Components))
	for _, c := range g.Components {
		if c.Status == result.Scored {
			parts = append(parts, fmt.Sprintf("%s %.6g", c.Name, *c.Score))
		} else {
			parts = append(parts, fmt.Sprintf("%s %s", c.Name, strings.ReplaceAll(string(c.Status), "_", " ")))
		}
	}
	return strings.Join(parts, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "(no termination reason)"
	}
	return s
}

// trialSummary is one task's line of a project's summary.
type trialSummary struct {
	taskID, path string
	outcome      string
	// score is nil when the trial ended without a grade.
	score *float64
	pass  bool
	// recorded: a resume kept the run's earlier result.
	recorded bool
}

// printSummary prints a line per task and the total; the result is an
// *exitError with code 1 when any trial did not pass.
func printSummary(w io.Writer, run *runDir, lines []trialSummary) error {
	fmt.Fprintf(w, "\nsummary of run %s:\n", run.ID)
	passed := 0
	for _, l := range lines {
		status := "FAIL"
		if l.pass {
			status = "PASS"
			passed++
		}
		score := "no grade"
		if l.score != nil {
			score = fmt.Sprintf("score %g", *l.score)
		}
		note := ""
		if l.recorded {
			note = ", recorded earlier"
		}
		fmt.Fprintf(w, "%s %s: %s, outcome %s%s (%s)\n", status, l.taskID, score, l.outcome, note, l.path)
	}
	fmt.Fprintf(w, "total: %d of %d passed\n", passed, len(lines))
	if passed < len(lines) {
		return &exitError{code: 1, msg: fmt.Sprintf("%d of %d trials did not pass (run %s)", len(lines)-passed, len(lines), run.ID)}
	}
	return nil
}
