package result

import (
	"math"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// MaxStatusText bounds a grade's reasons and diff summary in a Trial's
// status; the whole text is in the attempt's grade.yaml.
const MaxStatusText = 4096

// Summary is the Trial status's grade for g, earned by attempt. A component
// the runner did not evaluate stays absent rather than becoming 0, which
// would read as "evaluated and failed".
func Summary(g *runnerpb.Grade, attempt int32) *evalv1.GradeSummary {
	if g == nil {
		return nil
	}
	r := FromWire(g)
	s := &evalv1.GradeSummary{
		Score:       finite(r.Score),
		BinaryPass:  r.Pass,
		Reasons:     Truncate(r.Reasons, MaxStatusText),
		DiffSummary: Truncate(r.DiffSummary, MaxStatusText),
		Attempt:     attempt,
	}
	switch g.GetJudgeStatus() {
	case runnerpb.JudgeStatus_JUDGE_STATUS_COMPLETED:
		s.JudgeStatus = evalv1.JudgeCompleted
	case runnerpb.JudgeStatus_JUDGE_STATUS_ERRORED:
		s.JudgeStatus = evalv1.JudgeErrored
	}
	s.Components = evalv1.GradeComponents{
		StateChecks:     r.ComponentScore(task.ComponentStateChecks),
		TranscriptRules: r.ComponentScore(task.ComponentTranscriptRules),
		LLMJudge:        r.ComponentScore(task.ComponentLLMJudge),
		CustomChecks:    r.ComponentScore(task.ComponentCustomChecks),
		TraceChecks:     r.ComponentScore(task.ComponentTraceChecks),
	}
	return s
}

// FromStatus reads a Trial status's grade. Status keeps the scores and the
// judge's verdict but not the custom checks' results, so an unscored custom
// suite reads as not evaluated here.
func FromStatus(s *evalv1.GradeSummary) *Grade {
	if s == nil {
		return nil
	}
	ev := evidence{pass: s.BinaryPass, score: s.Score, reasons: s.Reasons, scores: map[string]float64{},
		judgeErrored: s.JudgeStatus == evalv1.JudgeErrored}
	c := s.Components
	for name, v := range map[string]*float64{
		task.ComponentStateChecks: c.StateChecks, task.ComponentTranscriptRules: c.TranscriptRules,
		task.ComponentLLMJudge: c.LLMJudge, task.ComponentCustomChecks: c.CustomChecks, task.ComponentTraceChecks: c.TraceChecks,
	} {
		if v != nil {
			ev.scores[name] = *v
		}
	}
	g := derive(ev)
	g.DiffSummary = s.DiffSummary
	return g
}

// finite keeps a NaN score out of status, where JSON cannot carry it.
func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// Truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
