package report

import (
	"fmt"
	"sort"
	"strings"
	"tolokaforge.io/operator/api/result"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/campaign"
)

// Trial is one trial's line in a report.
type Trial struct {
	// Name identifies the trial (the Trial object, or its directory).
	Name  string
	Agent string
	// Task is the task's display name (its task_id).
	Task  string
	Index int
	// Phase is a Trial phase (evalv1.Phase*), terminal or not.
	Phase string
	// Score is the grade's score (nil without a grade).
	Score *float64
	// Reason is why a trial that did not pass did not (empty for a pass).
	Reason string
	// Usage sums every attempt.
	PromptTokens, CompletionTokens, ReasoningTokens, Tokens int64
	CostUSD                                                 float64
	// Costed is false when no attempt reported a price.
	Costed   bool
	Turns    int
	LatencyS float64
	// Termination is the termination reason (agent_done, max_turns, ...).
	Termination string
	// GradeFile and TranscriptFile locate the grade and the transcript
	// (trajectory), when known.
	GradeFile, TranscriptFile string
	// Dir is the trial's artifacts directory (empty from the cluster).
	Dir string
	// Components are the grade's components as api/result reads them.
	Components []result.Component
	// attemptRoots are the manager layout's attempt-N copies of the trial,
	// oldest first (nil in the other layouts, where attempts/<n>/ holds them).
	attemptRoots []trialDir
	// root is the directory every read of the trial's files stays below
	// (the artifacts directory; for a cluster's trial, its own directory):
	// a link in it that leaves it is refused, never followed.
	root string
	// Page is the trial page's link, relative to the campaign page (set by
	// WriteSite; empty when the trial has no page).
	Page string
}

func (t Trial) outcome() campaign.Outcome {
	return campaign.Outcome{Agent: t.Agent, Task: t.Task, Phase: evalv1.TrialPhase(t.Phase), Score: t.Score, Tokens: t.Tokens, CostUSD: t.CostUSD}
}

// Report is the data every output is rendered from.
type Report struct {
	// Title names the campaign or directory.
	Title string
	// K is the k of pass@k and pass^k in the tables.
	K      int
	Trials []Trial
	// Agents and Tasks in display order.
	Agents []string
	Tasks  []string
}

// normalize sorts trials and fills Agents, Tasks and K when unset.
func (r *Report) normalize() {
	sort.SliceStable(r.Trials, func(i, j int) bool {
		a, b := r.Trials[i], r.Trials[j]
		if a.Task != b.Task {
			return a.Task < b.Task
		}
		if a.Agent != b.Agent {
			return a.Agent < b.Agent
		}
		return a.Index < b.Index
	})
	seenA, seenT := map[string]bool{}, map[string]bool{}
	for _, a := range r.Agents {
		seenA[a] = true
	}
	for _, t := range r.Tasks {
		seenT[t] = true
	}
	var extraA, extraT []string
	for _, t := range r.Trials {
		if !seenA[t.Agent] {
			seenA[t.Agent] = true
			extraA = append(extraA, t.Agent)
		}
		if !seenT[t.Task] {
			seenT[t.Task] = true
			extraT = append(extraT, t.Task)
		}
	}
	sort.Strings(extraA)
	sort.Strings(extraT)
	r.Agents = append(r.Agents, extraA...)
	r.Tasks = append(r.Tasks, extraT...)
	if r.K <= 0 {
		for _, c := range campaign.Cells(r.outcomes()) {
			r.K = max(r.K, c.N)
		}
		r.K = max(r.K, 1)
	}
}

func (r *Report) outcomes() []campaign.Outcome {
	out := make([]campaign.Outcome, len(r.Trials))
	for i, t := range r.Trials {
		out[i] = t.outcome()
	}
	return out
}

// Row is one (task, agent) line of the table.
type Row struct {
	Task, Agent string
	campaign.CellStats
	Trials  int // every trial of the cell, measured or not
	PassAt1 *float64
	PassHat *float64
	// Failures are the most common reasons of the cell's non-passing
	// trials, most frequent first.
	Failures []reasonCount
}

// reasonCount is one failure reason and how many trials it ended.
type reasonCount struct {
	Reason string
	Count  int
}

func (rc reasonCount) String() string { return fmt.Sprintf("%s ×%d", rc.Reason, rc.Count) }

// topFailures is how many reasons a row lists.
const topFailures = 3

// Rows are the table's lines, by task then agent.
func (r *Report) Rows() []Row {
	cells := map[campaign.CellKey]*campaign.CellStats{}
	for _, c := range campaign.Cells(r.outcomes()) {
		cells[c.CellKey] = c
	}
	type agg struct {
		trials  int
		reasons map[string]int
	}
	per := map[campaign.CellKey]*agg{}
	for _, t := range r.Trials {
		k := campaign.CellKey{Agent: t.Agent, Task: t.Task}
		a := per[k]
		if a == nil {
			a = &agg{reasons: map[string]int{}}
			per[k] = a
		}
		a.trials++
		if t.Phase != string(evalv1.PhasePassed) && t.Reason != "" {
			a.reasons[t.Reason]++
		}
	}
	var rows []Row
	for _, task := range r.Tasks {
		for _, agent := range r.Agents {
			k := campaign.CellKey{Agent: agent, Task: task}
			a := per[k]
			if a == nil {
				continue
			}
			row := Row{Task: task, Agent: agent, Trials: a.trials}
			if c := cells[k]; c != nil {
				row.CellStats = *c
			}
			if v, ok := campaign.PassAtK(row.N, row.C, 1); ok {
				row.PassAt1 = &v
			}
			if v, ok := campaign.PassHatK(row.N, row.C, r.K); ok {
				row.PassHat = &v
			}
			row.Failures = topReasons(a.reasons, topFailures)
			rows = append(rows, row)
		}
	}
	return rows
}

func topReasons(m map[string]int, n int) []reasonCount {
	out := make([]reasonCount, 0, len(m))
	for r, c := range m {
		out = append(out, reasonCount{Reason: r, Count: c})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Reason < out[j].Reason
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// agentSummary is one agent's line under the table, with its pass^j curve.
type agentSummary struct {
	Agent   string
	Summary evalv1.Aggregate
	// InfraFailed counts the agent's infra-failed trials, left out of Summary.
	InfraFailed int
	// Curve is pass^j for j = 1..K over the cells with K measured trials
	// (nil when no cell has K).
	Curve []*float64
}

// Agents are the per-agent summaries in display order; the last one,
// named "(all)", covers every trial.
func (r *Report) AgentSummaries() []agentSummary {
	cells := campaign.Cells(r.outcomes())
	by := map[string][]*campaign.CellStats{}
	for _, c := range cells {
		by[c.Agent] = append(by[c.Agent], c)
	}
	infra := map[string]int{}
	for _, c := range cells {
		infra[c.Agent] += c.InfraFailed
		infra["\x00all"] += c.InfraFailed
	}
	var out []agentSummary
	for _, a := range r.Agents {
		out = append(out, agentSummary{Agent: a, Summary: campaign.Summarize(by[a], r.K), Curve: campaign.PassHatCurve(by[a], r.K), InfraFailed: infra[a]})
	}
	if len(r.Agents) > 1 {
		out = append(out, agentSummary{Agent: "(all)", Summary: campaign.Summarize(cells, r.K), Curve: campaign.PassHatCurve(cells, r.K), InfraFailed: infra["\x00all"]})
	}
	return out
}

// Failing are the trials that did not pass, in table order.
func (r *Report) Failing() []Trial {
	var out []Trial
	for _, t := range r.Trials {
		if t.Phase != string(evalv1.PhasePassed) {
			out = append(out, t)
		}
	}
	return out
}

// shortReason keeps a reason readable in a table cell.
func shortReason(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 80 {
		cut := 77
		for cut > 0 && !isRuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
