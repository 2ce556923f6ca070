package report

import (
	"math"

	"tolokaforge.io/operator/api/result"
)

// componentOrder is the display order of ComponentRates: the five wire
// components and the two parts api/result reads beside them (JSONPath,
// test execution).
var componentOrder = result.Order

// componentRate is how one grading component did over a set of trials.
type componentRate struct {
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
func (r *Report) ComponentRates() []componentRate {
	groups := append([]string(nil), r.Agents...)
	if len(r.Agents) > 1 {
		groups = append(groups, "(all)")
	}
	var out []componentRate
	for _, agent := range groups {
		for _, name := range componentOrder {
			cr := componentRate{Agent: agent, Component: name}
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
					if !c.Evaluated() {
						continue // not evaluated or skipped: it did not count
					}
					cr.Evaluated++
					if c.Passed {
						cr.Passed++
					}
					if c.Status == result.Errored {
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
