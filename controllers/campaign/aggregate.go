package campaign

import (
	"sort"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// Outcome is what aggregation reads from one Trial: one per Trial, whatever
// its number of attempts (the Trial's usage already sums its attempts).
type Outcome struct {
	Agent string
	Task  string
	Phase evalv1.TrialPhase
	// Score is the grade's score; nil when the Trial has no grade.
	Score   *float64
	Tokens  int64
	CostUSD float64
}

// Measured reports whether the Trial measured the agent: it ran and reached a
// verdict (Passed, Failed) or reached grading that could not finish
// (GradingFailed, counted as a non-pass as Tolokaforge counts it). Infra
// failures and invalid tasks say nothing about the agent.
func (o Outcome) Measured() bool {
	switch o.Phase {
	case evalv1.PhasePassed, evalv1.PhaseFailed, evalv1.PhaseGradingFailed:
		return true
	}
	return false
}

// Passed reports a passing Trial.
func (o Outcome) Passed() bool { return o.Phase == evalv1.PhasePassed }

// CellKey names a (agent, task) cell, the unit of pass@k and pass^k.
type CellKey struct {
	Agent string
	Task  string
}

// CellStats are one cell's figures.
type CellStats struct {
	CellKey
	// N measured Trials, C of them passed.
	N, C int
	// Scored Trials had a grade; ScoreSum sums their scores.
	Scored   int
	ScoreSum float64
	// InfraFailed and Invalid Trials are counted apart from N.
	InfraFailed int
	Invalid     int
	// Tokens and CostUSD sum every Trial of the cell, measured or not.
	Tokens  int64
	CostUSD float64
}

// Cells groups outcomes by (agent, task), sorted by agent then task.
func Cells(outcomes []Outcome) []*CellStats {
	by := map[CellKey]*CellStats{}
	for _, o := range outcomes {
		key := CellKey{Agent: o.Agent, Task: o.Task}
		c := by[key]
		if c == nil {
			c = &CellStats{CellKey: key}
			by[key] = c
		}
		c.Tokens += o.Tokens
		c.CostUSD += o.CostUSD
		switch {
		case o.Measured():
			c.N++
			if o.Passed() {
				c.C++
			}
			if o.Score != nil {
				c.Scored++
				c.ScoreSum += *o.Score
			}
		case o.Phase == evalv1.PhaseInfraFailed:
			c.InfraFailed++
		case o.Phase == evalv1.PhaseInvalid || o.Phase == evalv1.PhaseProtocolSkew:
			c.Invalid++
		}
	}
	out := make([]*CellStats, 0, len(by))
	for _, c := range by {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Agent != out[j].Agent {
			return out[i].Agent < out[j].Agent
		}
		return out[i].Task < out[j].Task
	})
	return out
}

// Summarize folds cells into an Aggregate with k as the k of pass@k and
// pass^k. Trials, Passes and MeanScore are micro figures (every measured
// Trial weighs the same); the estimators are macro means over cells, as
// tau-bench averages pass^k over tasks, and a cell enters them only when it
// has enough measured Trials (n >= k).
func Summarize(cells []*CellStats, k int) evalv1.Aggregate {
	var a evalv1.Aggregate
	var scored int
	var scoreSum float64
	var p1, pk, phk mean
	for _, c := range cells {
		a.Trials += int32(c.N)
		a.Passes += int32(c.C)
		a.Tokens += c.Tokens
		a.CostUSD += c.CostUSD
		scored += c.Scored
		scoreSum += c.ScoreSum
		if v, ok := PassAtK(c.N, c.C, 1); ok {
			p1.add(v)
		}
		v, ok := PassAtK(c.N, c.C, k)
		if !ok {
			continue
		}
		pk.add(v)
		h, _ := PassHatK(c.N, c.C, k)
		phk.add(h)
		a.KCells++
	}
	if scored > 0 {
		m := scoreSum / float64(scored)
		a.MeanScore = &m
	}
	a.PassAt1, a.PassAtK, a.PassHatK = p1.value(), pk.value(), phk.value()
	return a
}

// PassHatCurve is pass^j for j = 1..maxK, each averaged over the same cells:
// those with at least maxK measured trials, so the curve never mixes cell
// sets and falls (or stays) as j grows. It is nil when no cell qualifies.
func PassHatCurve(cells []*CellStats, maxK int) []*float64 {
	var full []*CellStats
	for _, c := range cells {
		if c.N >= maxK {
			full = append(full, c)
		}
	}
	if len(full) == 0 || maxK < 1 {
		return nil
	}
	out := make([]*float64, 0, maxK)
	for j := 1; j <= maxK; j++ {
		var m mean
		for _, c := range full {
			v, _ := PassHatK(c.N, c.C, j)
			m.add(v)
		}
		out = append(out, m.value())
	}
	return out
}

// aggregates are the overall, per-agent (in agents' order) and per-task (in
// tasks' order) summaries of outcomes. An agent or task without outcomes
// still gets its line, with zero counts and absent estimators.
func aggregates(outcomes []Outcome, k int, agents, tasks []string) (evalv1.Aggregate, []evalv1.KeyedAggregate, []evalv1.KeyedAggregate) {
	cells := Cells(outcomes)
	byAgent := map[string][]*CellStats{}
	byTask := map[string][]*CellStats{}
	for _, c := range cells {
		byAgent[c.Agent] = append(byAgent[c.Agent], c)
		byTask[c.Task] = append(byTask[c.Task], c)
	}
	perAgent := make([]evalv1.KeyedAggregate, 0, len(agents))
	for _, name := range agents {
		perAgent = append(perAgent, evalv1.KeyedAggregate{Name: name, Aggregate: Summarize(byAgent[name], k)})
	}
	perTask := make([]evalv1.KeyedAggregate, 0, len(tasks))
	for _, name := range tasks {
		perTask = append(perTask, evalv1.KeyedAggregate{Name: name, Aggregate: Summarize(byTask[name], k)})
	}
	return Summarize(cells, k), perAgent, perTask
}

// mean accumulates a mean; value is nil when nothing was added.
type mean struct {
	sum float64
	n   int
}

func (m *mean) add(v float64) { m.sum += v; m.n++ }

func (m mean) value() *float64 {
	if m.n == 0 {
		return nil
	}
	v := m.sum / float64(m.n)
	return &v
}
