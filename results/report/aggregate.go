package report

import (
	"encoding/json"
	"io"
	"sort"
	"strconv"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"

	"tolokaforge.io/operator/controllers/campaign"
)

// Tolokaforge's aggregate.json keys (tolokaforge/core/metrics.py,
// calculate_aggregate_metrics), computed from one trial per line. Rates are
// over measured trials; pass@k and pass_hat@k are macro means over tasks
// (over task x agent cells at the top level when there are several agents)
// and null when no task has k measured trials. pass_hat@k is tau-bench's
// pass^k here, not Tolokaforge's alias of pass@k.

// Aggregate is the report's aggregate.json: the run-level keys over every
// trial, and the same keys per agent under "by_agent".
func (r *Report) Aggregate() map[string]any {
	out := aggregateOf(r.Trials, r.ks())
	if len(r.Agents) > 0 {
		by := map[string]any{}
		for _, a := range r.Agents {
			var ts []Trial
			for _, t := range r.Trials {
				if t.Agent == a {
					ts = append(ts, t)
				}
			}
			by[a] = aggregateOf(ts, r.ks())
		}
		out["by_agent"] = by
	}
	out["k"] = r.K
	return out
}

// WriteAggregate writes Aggregate as indented JSON.
func (r *Report) WriteAggregate(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r.Aggregate())
}

// ks are Tolokaforge's k values and the report's own.
func (r *Report) ks() []int {
	ks := []int{1, 5, 10}
	for _, k := range ks {
		if k == r.K {
			return ks
		}
	}
	ks = append(ks, r.K)
	sort.Ints(ks)
	return ks
}

// tally is what aggregate.json counts over the trials.
type tally struct {
	aborts                                                 map[string]int
	byReason                                               map[string]map[string]any
	tasks                                                  map[string]bool
	measured, scored, passes, ungradeable, invalid, costed int
	scoreSum, cost, turns                                  float64
	prompt, completion, reasoning, tokens                  int64
	latencies                                              []float64
}

// add counts one trial: its class (measured, ungradeable, infrastructure
// abort, invalid, unfinished), its termination reason and its spend.
func (c *tally) add(t Trial, o campaign.Outcome) {
	c.tasks[t.Task] = true
	class := "measured"
	switch {
	case o.Measured():
		c.measured++
		c.turns += float64(t.Turns)
		if o.Passed() {
			c.passes++
		}
		if t.Score != nil {
			c.scored++
			c.scoreSum += *t.Score
		}
		if t.Phase == string(evalv1.PhaseGradingFailed) {
			c.ungradeable++
			class = "ungradeable"
		}
	case t.Phase == string(evalv1.PhaseInfraFailed):
		c.aborts[t.Reason]++
		class = "infrastructure_abort"
	case t.Phase == string(evalv1.PhaseInvalid) || t.Phase == string(evalv1.PhaseProtocolSkew):
		c.invalid++
		class = "invalid"
	default:
		class = "unfinished"
	}
	key := t.Termination
	if key == "" {
		key = "unset_" + t.Phase
	}
	if class == "ungradeable" {
		key = "ungradeable_" + key
	}
	row := c.byReason[key]
	if row == nil {
		row = map[string]any{"class": class, "count": 0}
		c.byReason[key] = row
	}
	row["count"] = row["count"].(int) + 1
	c.prompt += t.PromptTokens
	c.completion += t.CompletionTokens
	c.reasoning += t.ReasoningTokens
	c.tokens += t.Tokens
	c.cost += t.CostUSD
	if t.Costed {
		c.costed++
	}
	if t.LatencyS > 0 {
		c.latencies = append(c.latencies, t.LatencyS)
	}
}

func aggregateOf(trials []Trial, ks []int) map[string]any {
	outcomes := make([]campaign.Outcome, len(trials))
	c := &tally{aborts: map[string]int{}, byReason: map[string]map[string]any{}, tasks: map[string]bool{}}
	for i, t := range trials {
		outcomes[i] = t.outcome()
		c.add(t, outcomes[i])
	}
	cells := campaign.Cells(outcomes)
	out := map[string]any{
		"total_tasks":             len(c.tasks),
		"total_trials":            len(trials),
		"measured_trials":         c.measured,
		"scored_trials":           c.scored,
		"successful_trials":       c.passes,
		"ungradeable":             c.ungradeable,
		"invalid_trials":          c.invalid,
		"infrastructure_aborts":   c.aborts,
		"outcomes_by_reason":      c.byReason,
		"success_rate_micro":      ratio(float64(c.passes), c.measured),
		"avg_score_micro":         ratio(c.scoreSum, c.scored),
		"avg_turns":               ratio(c.turns, c.measured),
		"total_prompt_tokens":     c.prompt,
		"total_completion_tokens": c.completion,
		"total_reasoning_tokens":  c.reasoning,
		"total_tokens":            c.tokens,
		"total_cost_usd":          nil,
		"avg_cost_usd":            nil,
		"costed_trials":           c.costed,
		"unpriced_trials":         len(trials) - c.costed,
		"component_pass_rates":    componentRatesJSON(trials),
	}
	if c.costed > 0 {
		out["total_cost_usd"] = c.cost
		out["avg_cost_usd"] = c.cost / float64(c.costed)
	}
	for _, k := range ks {
		at, hat := macro(cells, k, campaign.PassAtK), macro(cells, k, campaign.PassHatK)
		out["pass@"+itoa(k)+"_macro"] = at
		out["pass_hat@"+itoa(k)+"_macro"] = hat
	}
	sort.Float64s(c.latencies)
	for _, p := range []int{50, 90, 99} {
		out["latency_p"+itoa(p)+"_s"] = percentile(c.latencies, float64(p))
	}
	return out
}

func macro(cells []*campaign.CellStats, k int, f func(n, c, k int) (float64, bool)) *float64 {
	var sum float64
	var n int
	for _, c := range cells {
		if v, ok := f(c.N, c.C, k); ok {
			sum += v
			n++
		}
	}
	if n == 0 {
		return nil
	}
	v := sum / float64(n)
	return &v
}

func ratio(num float64, den int) *float64 {
	if den == 0 {
		return nil
	}
	v := num / float64(den)
	return &v
}

// percentile interpolates linearly, as Tolokaforge's _percentile does.
func percentile(sorted []float64, p float64) float64 {
	switch len(sorted) {
	case 0:
		return 0
	case 1:
		return sorted[0]
	}
	idx := float64(len(sorted)-1) * p / 100
	lo := int(idx)
	hi := min(lo+1, len(sorted)-1)
	return sorted[lo] + (sorted[hi]-sorted[lo])*(idx-float64(lo))
}

func itoa(i int) string { return strconv.Itoa(i) }
