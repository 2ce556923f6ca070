package campaign

import (
	"fmt"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// inFlight is a creation the cache has not shown yet.
type inFlight struct {
	Name string
	Cell Cell
}

// World is everything one reconcile knows.
type World struct {
	Campaign *evalv1.Campaign
	// Tasks are the selected Tasks' names, sorted; Missing are names
	// spec.tasks.names lists that do not exist.
	Tasks   []string
	Missing []string
	// MissingRef names an object the Campaign's models need that does not
	// exist (a Secret, "Secret ns/name not found (field)"), with its Reason;
	// while set, no Trial is created: each would fail at once.
	MissingRef       string
	MissingRefReason string
	// RefsChecked: the Secrets were looked up this time (only when a Trial
	// was about to be created); otherwise ReferencesResolved stays as it was.
	RefsChecked bool
	// Trials are the Trials the Campaign controls (from the cache).
	Trials []trialView
	// inFlight are creations not yet in Trials.
	InFlight []inFlight
	Now      metav1.Time

	// memo, when set, keeps the expansion of the spec between plans: a
	// reconcile plans twice, and re-expanding a thousand cells (names and
	// maps) on every Trial event was an eighth of a campaign's allocation.
	memo *expansionMemo
}

// expansionMemo holds the last expansion of one Campaign and what it was
// expanded from. An expansion is never modified once made, so it is shared.
type expansionMemo struct {
	mu  sync.Mutex
	key string
	exp *planned
}

// expansionKey is everything expand reads.
func expansionKey(c *evalv1.Campaign, tasks []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\x00%s\x00%d", c.UID, c.Name, c.Spec.TrialsPerTask)
	for _, a := range c.Spec.Agents {
		b.WriteString("\x00a:")
		b.WriteString(a.Name)
	}
	for _, t := range tasks {
		b.WriteString("\x00t:")
		b.WriteString(t)
	}
	return b.String()
}

// expansion returns the expansion of the spec, from the memo when the spec
// and the tasks are those it was made from.
func (w *World) expansion() planned {
	if w.memo == nil {
		return expand(w.Campaign, w.Tasks)
	}
	key := expansionKey(w.Campaign, w.Tasks)
	w.memo.mu.Lock()
	defer w.memo.mu.Unlock()
	if w.memo.exp == nil || w.memo.key != key {
		exp := expand(w.Campaign, w.Tasks)
		w.memo.key, w.memo.exp = key, &exp
	}
	return *w.memo.exp
}

// creation is a Trial to create.
type creation struct {
	Name string
	Cell Cell
}

// plan is what one reconcile does and the status it writes.
type plan struct {
	// Creates are in creation order (trial index first, then task, then
	// agent), so a budget cut leaves every cell with about the same n.
	Creates []creation
	// Deletes are the retired Trials to delete (those not already deleting).
	Deletes []evalv1.RetiredTrial
	// RerunStarted: Status records a new rerun and must be written (under
	// the Campaign's resourceVersion) before Deletes are acted on, so the
	// retired Trials' spend is recorded exactly once.
	RerunStarted bool
	Status       evalv1.CampaignStatus
	// HeldByParallel and HeldByBudget count the missing Trials not created
	// this time and why.
	HeldByParallel int
	HeldByBudget   int
}

// planned is the expansion of the spec.
type planned struct {
	cells []Cell
	names map[Cell]string
	in    map[Cell]bool
}

func expand(c *evalv1.Campaign, tasks []string) planned {
	p := planned{names: map[Cell]string{}, in: map[Cell]bool{}}
	for i := int32(0); i < c.Spec.TrialsPerTask; i++ {
		for _, t := range tasks {
			for _, a := range c.Spec.Agents {
				p.cells = append(p.cells, Cell{Agent: a.Name, Task: t, Index: i})
			}
		}
	}
	byName := map[string][]Cell{}
	for _, cell := range p.cells {
		p.in[cell] = true
		n := TrialName(c.Name, cell.Agent, cell.Task, cell.Index)
		byName[n] = append(byName[n], cell)
		p.names[cell] = n
	}
	for _, cells := range byName {
		if len(cells) < 2 {
			continue
		}
		for _, cell := range cells {
			p.names[cell] = hashedTrialName(c.Name, cell.Agent, cell.Task, cell.Index)
		}
	}
	return p
}

// plan plans one reconcile. It is pure: same world, same plan.
func (w *World) Plan() *plan {
	c := w.Campaign
	exp := w.expansion()
	p := &plan{}

	present := map[types.UID]*trialView{}
	for i := range w.Trials {
		present[w.Trials[i].UID] = &w.Trials[i]
	}
	rr := w.planRerun(exp, present)
	p.Deletes, p.RerunStarted = rr.deletes, rr.started

	// What exists, what runs, what it cost.
	cs := w.census(rr.retiring)
	spent := evalv1.Spend{Tokens: cs.live.Tokens + rr.retiredSpend.Tokens, CostUSD: cs.live.CostUSD + rr.retiredSpend.CostUSD}

	var missing []Cell
	for _, cell := range exp.cells {
		if !cs.occupied[cell] {
			missing = append(missing, cell)
		}
	}
	g := gate(c, cs, spent, len(missing))
	held := 0
	if suspended(c) || w.MissingRef != "" {
		// Held back whole: running Trials finish, nothing new starts.
		held, g.create, g.rest, g.heldByBudget, g.heldByParallel = len(missing), 0, len(missing), 0, 0
	}
	for _, cell := range missing[:g.create] {
		p.Creates = append(p.Creates, creation{Name: exp.names[cell], Cell: cell})
	}
	p.HeldByBudget, p.HeldByParallel = g.heldByBudget, g.heldByParallel

	st := w.status(exp, rr, spent, len(p.Creates))
	w.setConditions(&st, conditionInputs{
		spent:            spent,
		reached:          g.reached,
		nonTerminalAfter: cs.nonTerminal + len(p.Creates),
		notCreated:       g.rest,
		heldByParallel:   p.HeldByParallel,
		heldByBudget:     p.HeldByBudget,
		held:             held,
	})
	p.Status = st
	return p
}

// census is what the Trials and the creations in flight add up to.
type census struct {
	// occupied cells have a Trial of ours or a creation in flight.
	occupied map[Cell]bool
	// nonTerminal counts every Trial not finished, retiring or not, and
	// the creations in flight: what maxParallel bounds.
	nonTerminal int
	// live is the spend of the Trials not retiring; finished and
	// finishedSpend, of those that are also terminal.
	live          evalv1.Spend
	finished      int
	finishedSpend evalv1.Spend
}

func (w *World) census(retiring map[types.UID]bool) census {
	cs := census{occupied: map[Cell]bool{}, nonTerminal: len(w.InFlight)}
	for _, t := range w.Trials {
		if t.Ours {
			cs.occupied[t.Cell] = true
		}
		if !t.Terminal {
			cs.nonTerminal++
		}
		if retiring[t.UID] {
			continue
		}
		cs.live.Tokens += t.Outcome.Tokens
		cs.live.CostUSD += t.Outcome.CostUSD
		if t.Terminal {
			cs.finished++
			cs.finishedSpend.Tokens += t.Outcome.Tokens
			cs.finishedSpend.CostUSD += t.Outcome.CostUSD
		}
	}
	for _, f := range w.InFlight {
		cs.occupied[f.Cell] = true
	}
	return cs
}

// status is the Campaign's status over the Trials of the plan (created or
// being created), before its conditions are set.
func (w *World) status(exp planned, rr rerunPlan, spent evalv1.Spend, creates int) evalv1.CampaignStatus {
	c := w.Campaign
	st := evalv1.CampaignStatus{
		ObservedGeneration: c.Generation,
		K:                  c.Spec.TrialsPerTask,
		AgentCount:         int32(len(c.Spec.Agents)),
		TaskCount:          int32(len(w.Tasks)),
		Spent:              spent,
		RetiredSpend:       rr.retiredSpend,
		Rerun:              rr.status,
		Conditions:         append([]metav1.Condition(nil), c.Status.Conditions...),
	}
	counts := &st.Counts
	counts.Total = int32(len(exp.cells))
	var outcomes []Outcome
	for _, t := range w.Trials {
		if !t.Ours || !exp.in[t.Cell] || rr.retiring[t.UID] {
			continue
		}
		countPhase(counts, t.Phase)
		outcomes = append(outcomes, t.Outcome)
	}
	for _, f := range w.InFlight {
		if exp.in[f.Cell] {
			counts.Pending++
		}
	}
	counts.Pending += int32(creates)
	counts.Queued = counts.Total - counts.Pending - counts.Running - counts.Passed - counts.Failed - counts.InfraFailed - counts.Invalid
	done := counts.Passed + counts.Failed + counts.InfraFailed + counts.Invalid
	st.Progress = fmt.Sprintf("%d/%d", done, counts.Total)

	agents := make([]string, len(c.Spec.Agents))
	for i, a := range c.Spec.Agents {
		agents[i] = a.Name
	}
	st.Overall, st.PerAgent, st.PerTask = aggregates(outcomes, int(c.Spec.TrialsPerTask), agents, w.Tasks)
	return st
}

func countPhase(c *evalv1.TrialCounts, p evalv1.TrialPhase) {
	switch p {
	case evalv1.PhasePassed:
		c.Passed++
	case evalv1.PhaseFailed, evalv1.PhaseGradingFailed:
		c.Failed++
	case evalv1.PhaseInfraFailed:
		c.InfraFailed++
	case evalv1.PhaseInvalid, evalv1.PhaseProtocolSkew:
		c.Invalid++
	case evalv1.PhaseRunning, evalv1.PhaseGrading:
		c.Running++
	default:
		c.Pending++
	}
}
