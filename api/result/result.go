package result

import (
	"encoding/json"
	"math"
	"regexp"
	"strconv"
	"strings"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
)

// Status is what a grade says of one component.
type Status string

const (
	// Scored: the component has a score in [0, 1].
	Scored Status = "scored"
	// NotEvaluated: the component has no score and nothing structured says
	// why; its reasons (a recorded skip, an error under fail_on_error false)
	// are the account.
	NotEvaluated Status = "not_evaluated"
	// Skipped: the component ran and every check of it skipped (custom
	// checks whose every result is "skipped").
	Skipped Status = "skipped"
	// Errored: the component ran and failed without a score (a judge that
	// errored, custom checks with a result "error" and no score).
	Errored Status = "errored"
)

// The two parts the report shows beside the five wire components: JSONPath
// folds into state_checks and test_execution replaces the component phase,
// so neither has a score of its own on the wire.
const (
	JSONPath      = "jsonpath"
	testExecution = "test_execution"
)

// Order is every component and part a Grade may hold, in display order.
var Order = []string{
	task.ComponentStateChecks, JSONPath, task.ComponentTranscriptRules, task.ComponentTraceChecks,
	task.ComponentLLMJudge, task.ComponentCustomChecks, testExecution,
}

// Component is one component's result in one grade.
type Component struct {
	Name   string   `json:"-"`
	Status Status   `json:"status"`
	Score  *float64 `json:"score,omitempty"`
	// Passed is full marks: every check of the component held.
	Passed bool `json:"passed"`
	// Reasons are the grade's reasons segments that are this component's.
	Reasons []string `json:"reasons,omitempty"`
}

// Evaluated is true when the component ran: scored, or errored without a
// score. A not-evaluated or skipped component did not count.
func (c Component) Evaluated() bool { return c.Status == Scored || c.Status == Errored }

// Grade is the one reading of a trial's grade, whichever record it came
// from (the runner's response, grade.yaml, a Trial's status).
type Grade struct {
	Pass  bool
	Score float64
	// Components in Order; a component the grade neither scored nor said
	// anything about is absent.
	Components []Component
	// Notes are the reasons segments that belong to no component (the fold's
	// own sentence, a hash_weight note).
	Notes []string
	// Reasons is Grade.reasons as the runner joined it.
	Reasons string
	// JudgeErrored: the judge ran and failed (JUDGE_STATUS_ERRORED).
	JudgeErrored bool
	// DiffSummary is the state diff's summary, "" without one.
	DiffSummary string
}

// Component returns the named component, if the grade has it.
func (g *Grade) Component(name string) (Component, bool) {
	if g == nil {
		return Component{}, false
	}
	for _, c := range g.Components {
		if c.Name == name {
			return c, true
		}
	}
	return Component{}, false
}

// ComponentScore returns the named component's score, nil when it has none.
func (g *Grade) ComponentScore(name string) *float64 {
	if c, ok := g.Component(name); ok && c.Status == Scored {
		v := *c.Score
		return &v
	}
	return nil
}

// Scores are the scored wire components' scores, by name.
func (g *Grade) Scores() map[string]float64 {
	out := map[string]float64{}
	for _, name := range task.ComponentNames() {
		if v := g.ComponentScore(name); v != nil {
			out[name] = *v
		}
	}
	return out
}

// Evaluated names the wire components that ran (scored or errored), in the
// spec's order.
func (g *Grade) Evaluated() []string {
	var out []string
	for _, name := range task.ComponentNames() {
		if c, ok := g.Component(name); ok && c.Evaluated() {
			out = append(out, name)
		}
	}
	return out
}

// FirstFailing is the first reasons segment that is not a pass ("State:
// hash match", "... all N rules passed"), else the first segment, else a
// sentence saying the score was below the threshold.
func (g *Grade) FirstFailing() string { return firstFailing(g.Reasons) }

func firstFailing(reasons string) string {
	parts := strings.Split(reasons, " | ")
	for _, p := range parts {
		lp := strings.ToLower(p)
		if strings.Contains(lp, "hash match") || strings.Contains(lp, "passed") && !strings.Contains(lp, "failed") {
			continue
		}
		return p
	}
	if len(parts) > 0 && parts[0] != "" {
		return parts[0]
	}
	return "below the pass threshold"
}

// IsNotEvaluated is the one "not evaluated" rule for a component score on
// the wire: the spec's -1.0 sentinel, and anything else that is not a score
// (another negative, NaN, an infinity), which must not read as a 0.
func IsNotEvaluated(v float64) bool {
	return v < 0 || math.IsNaN(v) || math.IsInf(v, 0)
}

// evidence is what every record of a grade carries; each source fills it
// and derive reads it, so the same grade reads the same from all of them.
type evidence struct {
	pass   bool
	score  float64
	scores map[string]float64 // wire components with a score
	// judgeErrored: JUDGE_STATUS_ERRORED.
	judgeErrored bool
	// customStatuses are CustomCheckResult.status values, in order.
	customStatuses []string
	reasons        string
	stateDiff      string // state_diff_json, "" without one
}

// FromWire reads the runner's Grade.
func FromWire(g *runnerpb.Grade) *Grade {
	if g == nil {
		return nil
	}
	ev := evidence{pass: g.GetBinaryPass(), score: g.GetScore(), reasons: g.GetReasons(),
		stateDiff: g.GetStateDiffJson(), judgeErrored: g.GetJudgeStatus() == runnerpb.JudgeStatus_JUDGE_STATUS_ERRORED}
	ev.scores = WireScores(g.GetComponents())
	for _, c := range g.GetCustomChecks() {
		ev.customStatuses = append(ev.customStatuses, c.GetStatus())
	}
	return derive(ev)
}

// WireScores are the scores of the components a GradeComponents evaluated:
// the four scalar fields under IsNotEvaluated, trace_checks by presence.
// A nil message evaluated nothing.
func WireScores(c *runnerpb.GradeComponents) map[string]float64 {
	out := map[string]float64{}
	if c == nil {
		return out
	}
	for name, v := range map[string]float64{
		task.ComponentStateChecks: c.GetStateChecks(), task.ComponentTranscriptRules: c.GetTranscriptRules(),
		task.ComponentLLMJudge: c.GetLlmJudge(), task.ComponentCustomChecks: c.GetCustomChecks(),
	} {
		if !IsNotEvaluated(v) {
			out[name] = v
		}
	}
	if c.TraceChecks != nil && !math.IsNaN(c.GetTraceChecks()) && !math.IsInf(c.GetTraceChecks(), 0) {
		out[task.ComponentTraceChecks] = c.GetTraceChecks()
	}
	return out
}

// segmentOwners maps a reasons segment's head to its component: the spec's
// component segments (runner-protocol.md, "The component segments"), and
// the ledger's skip notes, which start with the component's key. Reasons
// are attributed from their text because that is the only place the wire
// carries them; no status is read from it.
var segmentOwners = []struct{ prefix, component string }{
	{"State:", task.ComponentStateChecks}, {"JSONPath:", task.ComponentStateChecks},
	{"DB probes:", task.ComponentStateChecks}, {"state_checks.", task.ComponentStateChecks},
	{"Transcript:", task.ComponentTranscriptRules}, {"transcript_rules.", task.ComponentTranscriptRules},
	{"Trace checks:", task.ComponentTraceChecks}, {"Trace check ", task.ComponentTraceChecks},
	{"FAILED trace gates", task.ComponentTraceChecks}, {"trace_checks.", task.ComponentTraceChecks},
	{"Judge:", task.ComponentLLMJudge}, {"llm_judge", task.ComponentLLMJudge},
	{"Custom checks:", task.ComponentCustomChecks}, {"custom_checks.", task.ComponentCustomChecks},
	{"Test execution:", testExecution},
}

// segmentOwner is the component a reasons segment belongs to, "" for none.
func segmentOwner(seg string) string {
	for _, o := range segmentOwners {
		if strings.HasPrefix(seg, o.prefix) {
			return o.component
		}
	}
	return ""
}

// segments splits Grade.reasons into its " | "-joined segments.
func segments(reasons string) []string {
	var out []string
	for _, s := range strings.Split(reasons, " | ") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// The segments that carry a part's score (runner/grading writes them): the
// JSONPath count and test execution's score line.
var (
	jsonPathAll  = regexp.MustCompile(`^JSONPath: all ([0-9]+) checks passed`)
	jsonPathSome = regexp.MustCompile(`^JSONPath: ([0-9]+) of ([0-9]+) checks passed`)
)

// fullMarks tolerates a fold's rounding in "every check held".
const fullMarks = 1 - 1e-9

func derive(ev evidence) *Grade {
	g := &Grade{Pass: ev.pass, Score: ev.score, Reasons: ev.reasons, JudgeErrored: ev.judgeErrored,
		DiffSummary: diffSummary(ev.stateDiff)}
	reasons := map[string][]string{}
	for _, seg := range segments(ev.reasons) {
		if owner := segmentOwner(seg); owner != "" {
			reasons[owner] = append(reasons[owner], seg)
		} else {
			g.Notes = append(g.Notes, seg)
		}
	}
	scored := func(name string, v float64, passed bool) Component {
		return Component{Name: name, Status: Scored, Score: &v, Passed: passed}
	}
	for _, name := range Order {
		var c Component
		switch v, ok := ev.scores[name]; {
		case ok:
			c = scored(name, v, v >= fullMarks)
		case name == JSONPath:
			// JSONPath's own count, from its segment: it has no wire field.
			// The segment stays state_checks' too (JSONPath folds into it).
			var own []string
			for _, seg := range reasons[task.ComponentStateChecks] {
				if jsonPathAll.MatchString(seg) {
					c, own = scored(name, 1, true), append(own, seg)
				} else if m := jsonPathSome.FindStringSubmatch(seg); m != nil {
					p, _ := strconv.Atoi(m[1])
					n, _ := strconv.Atoi(m[2])
					if n > 0 {
						c, own = scored(name, float64(p)/float64(n), p == n), append(own, seg)
					}
				}
			}
			if c.Status == "" {
				continue
			}
			reasons[JSONPath] = own
		case name == testExecution:
			// test_execution grades the whole trial: its score is the grade's.
			if len(reasons[name]) == 0 {
				continue
			}
			c = scored(name, ev.score, ev.pass)
		case name == task.ComponentLLMJudge && ev.judgeErrored:
			c.Status = Errored
		case name == task.ComponentCustomChecks && customStatus(ev.customStatuses) != "":
			c.Status = customStatus(ev.customStatuses)
		case len(reasons[name]) > 0:
			c.Status = NotEvaluated
		default:
			continue
		}
		c.Name = name
		c.Reasons = reasons[name]
		g.Components = append(g.Components, c)
	}
	return g
}

// customStatus is an unscored custom_checks suite's status from its
// results: any "error" is an errored suite; all "skipped" is a skipped one;
// "" when the results say neither (then its reasons decide whether it is
// mentioned at all).
func customStatus(statuses []string) Status {
	if len(statuses) == 0 {
		return ""
	}
	skipped := 0
	for _, s := range statuses {
		switch s {
		case "error":
			return Errored
		case "skipped":
			skipped++
		}
	}
	if skipped == len(statuses) {
		return Skipped
	}
	return ""
}

// diffSummary is the `summary` of a state_diff_json, "" without one.
func diffSummary(stateDiffJSON string) string {
	if stateDiffJSON == "" {
		return ""
	}
	var d struct {
		Summary string `json:"summary"`
	}
	if err := json.Unmarshal([]byte(stateDiffJSON), &d); err != nil {
		return ""
	}
	return d.Summary
}
