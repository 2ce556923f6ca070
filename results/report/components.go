package report

import (
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Grading components as the report names them, in display order. JSONPath
// and test execution have no score of their own in GradeComponents (JSONPath
// folds into state_checks; test_execution replaces the component phase), so
// they are read from their reasons segment, the only place the runner says
// how they did.
const (
	CompStateChecks     = "state_checks"
	CompJSONPath        = "jsonpath"
	CompTranscriptRules = "transcript_rules"
	CompTraceChecks     = "trace_checks"
	CompLLMJudge        = "llm_judge"
	CompCustomChecks    = "custom_checks"
	CompTestExecution   = "test_execution"
)

// ComponentOrder is the display order of ComponentRates.
var ComponentOrder = []string{CompStateChecks, CompJSONPath, CompTranscriptRules, CompTraceChecks, CompLLMJudge, CompCustomChecks, CompTestExecution}

// ComponentResult is one component's verdict in one trial's grade.
type ComponentResult struct {
	Name string
	// Score is the component's score (nil when it errored without one).
	Score *float64
	// Passed: full marks (every check of the component met).
	Passed bool
	// Errored: evaluated but no verdict (a judge that errored).
	Errored bool
}

// The reasons segments the runner writes (runner/grading: scoreOutcomes,
// runTestExecution).
var (
	jsonPathAll  = regexp.MustCompile(`^JSONPath: all ([0-9]+) checks passed`)
	jsonPathSome = regexp.MustCompile(`^JSONPath: ([0-9]+) of ([0-9]+) checks passed`)
	testExecRe   = regexp.MustCompile(`^Test execution: score=`)
)

const fullMarks = 1 - 1e-9

// componentsOf reads the per-component verdicts of a grade.yaml.
func componentsOf(gd *gradeDoc) []ComponentResult {
	if gd == nil {
		return nil
	}
	byName := map[string]ComponentResult{}
	for name, v := range gd.Components {
		s := v
		byName[name] = ComponentResult{Name: name, Score: &s, Passed: v >= fullMarks}
	}
	if gd.JudgeStatus == "JUDGE_STATUS_ERRORED" {
		byName[CompLLMJudge] = ComponentResult{Name: CompLLMJudge, Errored: true}
	}
	for _, seg := range reasonSegments(gd.Reasons) {
		switch {
		case jsonPathAll.MatchString(seg):
			one := 1.0
			byName[CompJSONPath] = ComponentResult{Name: CompJSONPath, Score: &one, Passed: true}
		case jsonPathSome.MatchString(seg):
			m := jsonPathSome.FindStringSubmatch(seg)
			p, _ := strconv.Atoi(m[1])
			n, _ := strconv.Atoi(m[2])
			if n > 0 {
				s := float64(p) / float64(n)
				byName[CompJSONPath] = ComponentResult{Name: CompJSONPath, Score: &s, Passed: p == n}
			}
		case testExecRe.MatchString(seg):
			s := gd.Score
			byName[CompTestExecution] = ComponentResult{Name: CompTestExecution, Score: &s, Passed: gd.BinaryPass}
		}
	}
	var out []ComponentResult
	for _, name := range ComponentOrder {
		if c, ok := byName[name]; ok {
			out = append(out, c)
		}
	}
	return out
}

// reasonSegments splits Grade.reasons into its " | "-joined segments.
func reasonSegments(reasons string) []string {
	var out []string
	for _, s := range strings.Split(reasons, " | ") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// ComponentRate is how one grading component did over a set of trials.
type ComponentRate struct {
	Agent, Component string
	// Evaluated trials had the component in their grade; Passed gave it
	// full marks; Errored ran it without a verdict.
	Evaluated, Passed, Errored int
	// PassRate is Passed/Evaluated and MeanScore the mean score over the
	// trials that scored it (nil when none did).
	PassRate, MeanScore *float64
}

// ComponentRates are the per-component pass rates per agent (and over all
// agents when there are several), components in ComponentOrder; a component
// no trial evaluated is left out.
func (r *Report) ComponentRates() []ComponentRate {
	groups := append([]string(nil), r.Agents...)
	if len(r.Agents) > 1 {
		groups = append(groups, "(all)")
	}
	var out []ComponentRate
	for _, agent := range groups {
		for _, name := range ComponentOrder {
			cr := ComponentRate{Agent: agent, Component: name}
			var sum float64
			var scored int
			for _, t := range r.Trials {
				if agent != "(all)" && t.Agent != agent {
					continue
				}
				for _, c := range t.Components {
					if c.Name != name {
						continue
					}
					cr.Evaluated++
					if c.Passed {
						cr.Passed++
					}
					if c.Errored {
						cr.Errored++
					}
					if c.Score != nil {
						scored++
						sum += *c.Score
					}
				}
			}
			if cr.Evaluated == 0 {
				continue
			}
			rate := float64(cr.Passed) / float64(cr.Evaluated)
			cr.PassRate = &rate
			if scored > 0 {
				m := sum / float64(scored)
				cr.MeanScore = &m
			}
			out = append(out, cr)
		}
	}
	return out
}

// componentRatesJSON is ComponentRates of every trial for aggregate.json.
func componentRatesJSON(trials []Trial) map[string]any {
	r := &Report{Trials: trials, Agents: []string{"(all)"}}
	out := map[string]any{}
	for _, cr := range r.ComponentRates() {
		row := map[string]any{"evaluated": cr.Evaluated, "passed": cr.Passed, "errored": cr.Errored, "pass_rate": nil, "mean_score": nil}
		if cr.PassRate != nil {
			row["pass_rate"] = *cr.PassRate
		}
		if cr.MeanScore != nil && !math.IsNaN(*cr.MeanScore) {
			row["mean_score"] = *cr.MeanScore
		}
		out[cr.Component] = row
	}
	return out
}
