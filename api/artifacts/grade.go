package artifacts

import (
	"encoding/json"
	"fmt"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"tolokaforge.io/operator/api/runnerpb"
)

// NotEvaluated is the wire sentinel of a component the runner did not score.
const NotEvaluated = -1.0

// Components are the component scores with "not evaluated" absent (nil),
// never 0: state_checks, transcript_rules, llm_judge and custom_checks carry
// the -1.0 sentinel, trace_checks explicit presence, and an absent components
// message means nothing was evaluated.
type Components struct {
	StateChecks     *float64 `json:"state_checks,omitempty"`
	TranscriptRules *float64 `json:"transcript_rules,omitempty"`
	LLMJudge        *float64 `json:"llm_judge,omitempty"`
	CustomChecks    *float64 `json:"custom_checks,omitempty"`
	TraceChecks     *float64 `json:"trace_checks,omitempty"`
}

// EvaluatedComponents reads the presence rules of GradeComponents.
func EvaluatedComponents(c *runnerpb.GradeComponents) Components {
	var out Components
	if c == nil {
		return out
	}
	scored := func(v float64) *float64 {
		if v == NotEvaluated {
			return nil
		}
		return &v
	}
	out.StateChecks = scored(c.GetStateChecks())
	out.TranscriptRules = scored(c.GetTranscriptRules())
	out.LLMJudge = scored(c.GetLlmJudge())
	out.CustomChecks = scored(c.GetCustomChecks())
	if c.TraceChecks != nil {
		v := c.GetTraceChecks()
		out.TraceChecks = &v
	}
	return out
}

type grade struct {
	TrialID    string     `json:"trial_id"`
	Attempt    int        `json:"attempt"`
	GradedBy   string     `json:"graded_by"`
	BinaryPass bool       `json:"binary_pass"`
	Score      float64    `json:"score"`
	Components Components `json:"components"`
	// ComponentResults is each component's result with its own reasons, so a report
	// can count per-component pass rates without parsing the joined reasons.
	ComponentResults ComponentResults `json:"component_results"`
	Reasons          string           `json:"reasons"`
	// StateDiff is state_diff_json decoded so the diff reads as YAML;
	// StateDiffJSON keeps a payload that is not JSON verbatim.
	StateDiff          json.RawMessage   `json:"state_diff,omitempty"`
	StateDiffJSON      string            `json:"state_diff_json,omitempty"`
	JudgeStatus        string            `json:"judge_status,omitempty"`
	JudgeReport        json.RawMessage   `json:"judge_report,omitempty"`
	CustomChecks       []json.RawMessage `json:"custom_checks,omitempty"`
	CriterionResults   []json.RawMessage `json:"criterion_results,omitempty"`
	TraceChecks        []json.RawMessage `json:"trace_checks,omitempty"`
	TraceChecksSummary json.RawMessage   `json:"trace_checks_summary,omitempty"`
}

// Every field of nested results is written, false and 0 included: a check
// that "passed: false" must not read as a check with no verdict.
var protoJSON = protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}

func gradeDoc(a *Attempt) (grade, error) {
	g := a.Grade
	doc := grade{
		TrialID: a.TrialID, Attempt: a.AttemptNumber, GradedBy: a.GradedBy,
		BinaryPass: g.GetBinaryPass(), Score: g.GetScore(),
		Components: EvaluatedComponents(g.GetComponents()),
		Reasons:    g.GetReasons(),
	}
	doc.ComponentResults = ComponentResultsOf(g)
	if d := g.GetStateDiffJson(); d != "" {
		if json.Valid([]byte(d)) {
			doc.StateDiff = json.RawMessage(d)
		} else {
			doc.StateDiffJSON = d
		}
	}
	if g.GetJudgeStatus() != runnerpb.JudgeStatus_JUDGE_STATUS_UNSPECIFIED {
		doc.JudgeStatus = g.GetJudgeStatus().String()
	}
	var err error
	if doc.JudgeReport, err = optionalMessage(g.GetJudgeReport()); err != nil {
		return doc, fmt.Errorf("judge_report: %w", err)
	}
	if doc.TraceChecksSummary, err = optionalMessage(g.GetTraceChecksSummary()); err != nil {
		return doc, fmt.Errorf("trace_checks_summary: %w", err)
	}
	if doc.CustomChecks, err = messages(g.GetCustomChecks()); err != nil {
		return doc, fmt.Errorf("custom_checks: %w", err)
	}
	if doc.CriterionResults, err = messages(g.GetCriterionResults()); err != nil {
		return doc, fmt.Errorf("criterion_results: %w", err)
	}
	if doc.TraceChecks, err = messages(g.GetTraceChecks()); err != nil {
		return doc, fmt.Errorf("trace_checks: %w", err)
	}
	return doc, nil
}

func optionalMessage[M proto.Message](m M) (json.RawMessage, error) {
	if !m.ProtoReflect().IsValid() {
		return nil, nil
	}
	return protoJSON.Marshal(m)
}

func messages[M proto.Message](ms []M) ([]json.RawMessage, error) {
	if len(ms) == 0 {
		return nil, nil
	}
	out := make([]json.RawMessage, 0, len(ms))
	for i, m := range ms {
		b, err := protoJSON.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
		out = append(out, b)
	}
	return out, nil
}

// Component statuses in grade.yaml's component_results.
const (
	ComponentScored = "scored" // a score in [0, 1]
	// ComponentErrored: the judge ran and failed (JUDGE_STATUS_ERRORED) under a weight
	// share that let the grade stand without it.
	ComponentErrored = "errored"
	// ComponentNotScored: the reasons mention the component (a recorded skip, an error
	// under fail_on_error false) but it has no score.
	ComponentNotScored = "not_scored"
)

// ComponentResult is one component's outcome in a grade: status, score (absent when
// not scored), passed (score 1.0: every check of the component held) and the reasons
// segments that are the component's own.
type ComponentResult struct {
	Status  string   `json:"status"`
	Score   *float64 `json:"score,omitempty"`
	Passed  bool     `json:"passed"`
	Reasons []string `json:"reasons,omitempty"`
}

// ComponentResults holds a ComponentResult per component the grade mentions, in
// component order; a component the grade neither scored nor mentioned is absent.
type ComponentResults struct {
	StateChecks     *ComponentResult `json:"state_checks,omitempty"`
	TranscriptRules *ComponentResult `json:"transcript_rules,omitempty"`
	TraceChecks     *ComponentResult `json:"trace_checks,omitempty"`
	LLMJudge        *ComponentResult `json:"llm_judge,omitempty"`
	CustomChecks    *ComponentResult `json:"custom_checks,omitempty"`
}

// segmentOwners maps a reasons segment's prefix to its component: the evaluators'
// segment heads, and the ledger's skip notes, which start with the component's key.
var segmentOwners = []struct{ prefix, component string }{
	{"State:", "state_checks"}, {"JSONPath:", "state_checks"}, {"DB probes:", "state_checks"}, {"state_checks.", "state_checks"},
	{"Transcript:", "transcript_rules"}, {"transcript_rules.", "transcript_rules"},
	{"Trace checks:", "trace_checks"}, {"Trace check ", "trace_checks"}, {"trace_checks.", "trace_checks"},
	{"Judge:", "llm_judge"}, {"llm_judge", "llm_judge"},
	{"Custom checks:", "custom_checks"}, {"custom_checks.", "custom_checks"},
}

// ComponentResultsOf splits g's reasons by component and pairs them with the scores.
func ComponentResultsOf(g *runnerpb.Grade) ComponentResults {
	var out ComponentResults
	if g == nil {
		return out
	}
	reasons := map[string][]string{}
	if r := g.GetReasons(); r != "" {
		for _, seg := range strings.Split(r, " | ") {
			for _, o := range segmentOwners {
				if strings.HasPrefix(seg, o.prefix) {
					reasons[o.component] = append(reasons[o.component], seg)
					break
				}
			}
		}
	}
	c := EvaluatedComponents(g.GetComponents())
	result := func(name string, score *float64) *ComponentResult {
		r := &ComponentResult{Score: score, Reasons: reasons[name]}
		switch {
		case score != nil:
			r.Status, r.Passed = ComponentScored, *score == 1
		case name == "llm_judge" && g.GetJudgeStatus() == runnerpb.JudgeStatus_JUDGE_STATUS_ERRORED:
			r.Status = ComponentErrored
		case len(r.Reasons) > 0:
			r.Status = ComponentNotScored
		default:
			return nil
		}
		return r
	}
	out.StateChecks = result("state_checks", c.StateChecks)
	out.TranscriptRules = result("transcript_rules", c.TranscriptRules)
	out.TraceChecks = result("trace_checks", c.TraceChecks)
	out.LLMJudge = result("llm_judge", c.LLMJudge)
	out.CustomChecks = result("custom_checks", c.CustomChecks)
	return out
}
