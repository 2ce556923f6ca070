package result

import (
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
)

// File is grade.yaml: the runner's Grade as the host recorded it, with the
// reading of it (component_results) beside the raw fields it came from.
type File struct {
	TrialID    string  `json:"trial_id"`
	Attempt    int     `json:"attempt"`
	GradedBy   string  `json:"graded_by"`
	BinaryPass bool    `json:"binary_pass"`
	Score      float64 `json:"score"`
	// Components are the wire scores with "not evaluated" absent, never 0.
	Components Scores `json:"components"`
	// ComponentResults is each component's status, score and own reasons,
	// so a reader needs no second reading of the reasons.
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

// Scores are the five wire components' scores, nil when not evaluated.
type Scores struct {
	StateChecks     *float64 `json:"state_checks,omitempty"`
	TranscriptRules *float64 `json:"transcript_rules,omitempty"`
	LLMJudge        *float64 `json:"llm_judge,omitempty"`
	CustomChecks    *float64 `json:"custom_checks,omitempty"`
	TraceChecks     *float64 `json:"trace_checks,omitempty"`
}

func (s Scores) byName() map[string]*float64 {
	return map[string]*float64{
		task.ComponentStateChecks: s.StateChecks, task.ComponentTranscriptRules: s.TranscriptRules,
		task.ComponentLLMJudge: s.LLMJudge, task.ComponentCustomChecks: s.CustomChecks, task.ComponentTraceChecks: s.TraceChecks,
	}
}

// ComponentResults holds a Component per wire component the grade has, in
// the spec's order.
type ComponentResults struct {
	StateChecks     *Component `json:"state_checks,omitempty"`
	TranscriptRules *Component `json:"transcript_rules,omitempty"`
	TraceChecks     *Component `json:"trace_checks,omitempty"`
	LLMJudge        *Component `json:"llm_judge,omitempty"`
	CustomChecks    *Component `json:"custom_checks,omitempty"`
}

// Every field of nested results is written, false and 0 included: a check
// that "passed: false" must not read as a check with no verdict.
var protoJSON = protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}

// NewFile is the grade.yaml of g.
func NewFile(trialID string, attempt int, gradedBy string, g *runnerpb.Grade) (*File, error) {
	f := &File{
		TrialID: trialID, Attempt: attempt, GradedBy: gradedBy,
		BinaryPass: g.GetBinaryPass(), Score: g.GetScore(), Reasons: g.GetReasons(),
	}
	scores := WireScores(g.GetComponents())
	pick := func(name string) *float64 {
		if v, ok := scores[name]; ok {
			return &v
		}
		return nil
	}
	f.Components = Scores{
		StateChecks: pick(task.ComponentStateChecks), TranscriptRules: pick(task.ComponentTranscriptRules),
		LLMJudge: pick(task.ComponentLLMJudge), CustomChecks: pick(task.ComponentCustomChecks),
		TraceChecks: pick(task.ComponentTraceChecks),
	}
	f.ComponentResults = componentResults(FromWire(g))
	if d := g.GetStateDiffJson(); d != "" {
		if json.Valid([]byte(d)) {
			f.StateDiff = json.RawMessage(d)
		} else {
			f.StateDiffJSON = d
		}
	}
	if g.GetJudgeStatus() != runnerpb.JudgeStatus_JUDGE_STATUS_UNSPECIFIED {
		f.JudgeStatus = g.GetJudgeStatus().String()
	}
	var err error
	if f.JudgeReport, err = optionalMessage(g.GetJudgeReport()); err != nil {
		return nil, fmt.Errorf("judge_report: %w", err)
	}
	if f.TraceChecksSummary, err = optionalMessage(g.GetTraceChecksSummary()); err != nil {
		return nil, fmt.Errorf("trace_checks_summary: %w", err)
	}
	if f.CustomChecks, err = messages(g.GetCustomChecks()); err != nil {
		return nil, fmt.Errorf("custom_checks: %w", err)
	}
	if f.CriterionResults, err = messages(g.GetCriterionResults()); err != nil {
		return nil, fmt.Errorf("criterion_results: %w", err)
	}
	if f.TraceChecks, err = messages(g.GetTraceChecks()); err != nil {
		return nil, fmt.Errorf("trace_checks: %w", err)
	}
	return f, nil
}

func componentResults(g *Grade) ComponentResults {
	var out ComponentResults
	for _, slot := range []struct {
		name string
		dst  **Component
	}{
		{task.ComponentStateChecks, &out.StateChecks}, {task.ComponentTranscriptRules, &out.TranscriptRules},
		{task.ComponentTraceChecks, &out.TraceChecks}, {task.ComponentLLMJudge, &out.LLMJudge},
		{task.ComponentCustomChecks, &out.CustomChecks},
	} {
		if c, ok := g.Component(slot.name); ok {
			*slot.dst = &c
		}
	}
	return out
}

// ParseFile reads a grade.yaml. It reads the raw fields, not
// component_results, so a file written before the statuses existed reads
// the same as a new one.
func ParseFile(data []byte) (*File, error) {
	var f File
	if err := yaml.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("grade.yaml: %w", err)
	}
	return &f, nil
}

// Grade is the file's reading, derived from its raw fields exactly as
// FromWire derives the response it was written from.
func (f *File) Grade() (*Grade, error) {
	ev := evidence{pass: f.BinaryPass, score: f.Score, reasons: f.Reasons, scores: map[string]float64{},
		judgeErrored: f.JudgeStatus == runnerpb.JudgeStatus_JUDGE_STATUS_ERRORED.String()}
	for name, v := range f.Components.byName() {
		if v != nil {
			ev.scores[name] = *v
		}
	}
	switch {
	case len(f.StateDiff) > 0:
		ev.stateDiff = string(f.StateDiff)
	default:
		ev.stateDiff = f.StateDiffJSON
	}
	for i, raw := range f.CustomChecks {
		var c struct {
			Status string `json:"status"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			return nil, fmt.Errorf("grade.yaml custom_checks[%d]: %w", i, err)
		}
		ev.customStatuses = append(ev.customStatuses, c.Status)
	}
	return derive(ev), nil
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
