package campaign

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// InFlight is a creation the cache has not shown yet.
type InFlight struct {
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
	// Trials are the Trials the Campaign controls (from the cache).
	Trials []TrialView
	// InFlight are creations not yet in Trials.
	InFlight []InFlight
	Now      metav1.Time
}

// Creation is a Trial to create.
type Creation struct {
	Name string
	Cell Cell
}

// Plan is what one reconcile does and the status it writes.
type Plan struct {
	// Creates are in creation order (trial index first, then task, then
	// agent), so a budget cut leaves every cell with about the same n.
	Creates []Creation
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
			p.names[cell] = HashedTrialName(c.Name, cell.Agent, cell.Task, cell.Index)
		}
	}
	return p
}

// PlanCampaign plans one reconcile. It is pure: same world, same plan.
func PlanCampaign(w *World) *Plan {
	c := w.Campaign
	gen := c.Generation
	k := int(c.Spec.TrialsPerTask)
	exp := expand(c, w.Tasks)
	p := &Plan{}

	present := map[types.UID]*TrialView{}
	for i := range w.Trials {
		present[w.Trials[i].UID] = &w.Trials[i]
	}

	// Rerun bookkeeping: forget retired Trials that are gone, then start a
	// rerun if this generation asks for one and has not had it.
	var rerun *evalv1.RerunStatus
	if c.Status.Rerun != nil {
		rerun = c.Status.Rerun.DeepCopy()
		kept := rerun.Deleting[:0]
		for _, d := range rerun.Deleting {
			if present[d.UID] != nil {
				kept = append(kept, d)
			}
		}
		rerun.Deleting = kept
		if len(rerun.Deleting) == 0 {
			rerun.Deleting = nil
		}
	}
	retiredSpend := c.Status.RetiredSpend
	if len(c.Spec.Rerun) > 0 && (rerun == nil || rerun.Generation != gen) {
		phases := map[evalv1.TrialPhase]bool{}
		for _, ph := range c.Spec.Rerun {
			phases[ph] = true
		}
		next := &evalv1.RerunStatus{Generation: gen, Phases: sortedPhases(c.Spec.Rerun)}
		if rerun != nil {
			next.Deleting = rerun.Deleting
		}
		for _, t := range w.Trials {
			if t.Ours && t.Terminal && !t.Deleting && phases[t.Phase] &&
				t.CreatedGeneration < gen && exp.in[t.Cell] && !retiringUID(next.Deleting, t.UID) {
				next.Deleting = append(next.Deleting, evalv1.RetiredTrial{Name: t.Name, UID: t.UID})
				next.Retired++
				retiredSpend.Tokens += t.Outcome.Tokens
				retiredSpend.CostUSD += t.Outcome.CostUSD
			}
		}
		rerun = next
		p.RerunStarted = true
	}
	retiring := map[types.UID]bool{}
	if rerun != nil {
		for _, d := range rerun.Deleting {
			retiring[d.UID] = true
			if t := present[d.UID]; t != nil && !t.Deleting {
				p.Deletes = append(p.Deletes, d)
			}
		}
	}

	// What exists, what runs, what it cost.
	occupied := map[Cell]bool{}
	nonTerminal := len(w.InFlight)
	var live evalv1.Spend
	var finished int
	var finishedSpend evalv1.Spend
	for _, t := range w.Trials {
		if t.Ours {
			occupied[t.Cell] = true
		}
		if !t.Terminal {
			nonTerminal++
		}
		if retiring[t.UID] {
			continue
		}
		live.Tokens += t.Outcome.Tokens
		live.CostUSD += t.Outcome.CostUSD
		if t.Terminal {
			finished++
			finishedSpend.Tokens += t.Outcome.Tokens
			finishedSpend.CostUSD += t.Outcome.CostUSD
		}
	}
	for _, f := range w.InFlight {
		occupied[f.Cell] = true
	}
	spent := evalv1.Spend{Tokens: live.Tokens + retiredSpend.Tokens, CostUSD: live.CostUSD + retiredSpend.CostUSD}

	var missing []Cell
	for _, cell := range exp.cells {
		if !occupied[cell] {
			missing = append(missing, cell)
		}
	}
	slots := max(int(maxParallel(c))-nonTerminal, 0)
	budget := c.Spec.Budget
	reached := budgetReached(budget, spent)
	allowance := len(missing)
	if budget != nil {
		allowance = budgetAllowance(budget, spent, nonTerminal, finished, finishedSpend, len(missing))
	}
	n := min(len(missing), slots, allowance)
	for _, cell := range missing[:n] {
		p.Creates = append(p.Creates, Creation{Name: exp.names[cell], Cell: cell})
	}
	rest := len(missing) - n
	if allowance < min(len(missing), slots) {
		p.HeldByBudget = rest
	} else {
		p.HeldByParallel = rest
	}

	// Status, over the Trials of the plan (created or being created).
	st := evalv1.CampaignStatus{
		ObservedGeneration: gen,
		K:                  c.Spec.TrialsPerTask,
		AgentCount:         int32(len(c.Spec.Agents)),
		TaskCount:          int32(len(w.Tasks)),
		Spent:              spent,
		RetiredSpend:       retiredSpend,
		Rerun:              rerun,
		Conditions:         append([]metav1.Condition(nil), c.Status.Conditions...),
	}
	counts := &st.Counts
	counts.Total = int32(len(exp.cells))
	var outcomes []Outcome
	for _, t := range w.Trials {
		if !t.Ours || !exp.in[t.Cell] || retiring[t.UID] {
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
	counts.Pending += int32(len(p.Creates))
	counts.Queued = counts.Total - counts.Pending - counts.Running - counts.Passed - counts.Failed - counts.InfraFailed - counts.Invalid
	done := counts.Passed + counts.Failed + counts.InfraFailed + counts.Invalid
	st.Progress = fmt.Sprintf("%d/%d", done, counts.Total)

	agents := make([]string, len(c.Spec.Agents))
	for i, a := range c.Spec.Agents {
		agents[i] = a.Name
	}
	st.Overall, st.PerAgent, st.PerTask = Aggregates(outcomes, k, agents, w.Tasks)

	// Conditions.
	set := func(typ string, ok bool, reason, msg string) {
		s := metav1.ConditionFalse
		if ok {
			s = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: typ, Status: s, Reason: reason, Message: msg,
			ObservedGeneration: gen, LastTransitionTime: w.Now,
		})
	}
	resolved := len(w.Missing) == 0 && len(w.Tasks) > 0
	switch {
	case len(w.Missing) > 0:
		set(evalv1.CampaignTasksResolved, false, evalv1.ReasonTaskNotFound,
			fmt.Sprintf("Task %s not found in namespace %s; its Trials are created once it exists", strings.Join(w.Missing, ", "), c.Namespace))
	case len(w.Tasks) == 0:
		set(evalv1.CampaignTasksResolved, false, evalv1.ReasonNoTasksSelected,
			fmt.Sprintf("spec.tasks selects no Task in namespace %s", c.Namespace))
	default:
		set(evalv1.CampaignTasksResolved, true, evalv1.ReasonResolved, fmt.Sprintf("%d Tasks selected", len(w.Tasks)))
	}
	switch {
	case budget == nil || (budget.MaxUSD == nil && budget.MaxTokens == nil):
		set(evalv1.CampaignBudgetExceeded, false, evalv1.ReasonNoBudget, "no budget set")
	case reached:
		set(evalv1.CampaignBudgetExceeded, true, evalv1.ReasonBudgetExceeded,
			fmt.Sprintf("spent %s: no more Trials are created, running Trials finish", spendText(spent, budget)))
	default:
		set(evalv1.CampaignBudgetExceeded, false, evalv1.ReasonWithinBudget, "spent "+spendText(spent, budget))
	}
	nonTerminalAfter := nonTerminal + len(p.Creates)
	leftToCreate := rest > 0 && !reached
	complete := resolved && nonTerminalAfter == 0 && !leftToCreate && len(deletingOf(st.Rerun)) == 0
	summary := fmt.Sprintf("%s done: %d passed, %d failed, %d infra-failed, %d invalid",
		st.Progress, counts.Passed, counts.Failed, counts.InfraFailed, counts.Invalid)
	if complete {
		reason, msg := evalv1.ReasonFinished, "all Trials finished; "+summary
		if rest > 0 {
			reason, msg = evalv1.ReasonBudgetExceeded, fmt.Sprintf("budget reached with %d Trials not created; %s", rest, summary)
		}
		set(evalv1.CampaignCompleted, true, reason, msg)
		set(evalv1.CampaignProgressing, false, reason, msg)
	} else {
		msg := fmt.Sprintf("%s; %d running, %d pending, %d queued", summary, counts.Running, counts.Pending, counts.Queued)
		if p.HeldByParallel > 0 {
			msg += fmt.Sprintf(" (maxParallel %d reached)", maxParallel(c))
		}
		if p.HeldByBudget > 0 && !reached {
			msg += fmt.Sprintf(" (%d held: the running Trials' projected spend would reach the budget)", p.HeldByBudget)
		}
		if n := len(deletingOf(st.Rerun)); n > 0 {
			msg += fmt.Sprintf("; %d retired Trials being deleted for rerun", n)
		}
		set(evalv1.CampaignCompleted, false, evalv1.ReasonRunning, msg)
		set(evalv1.CampaignProgressing, true, evalv1.ReasonRunning, msg)
	}
	p.Status = st
	return p
}

func deletingOf(r *evalv1.RerunStatus) []evalv1.RetiredTrial {
	if r == nil {
		return nil
	}
	return r.Deleting
}

func retiringUID(list []evalv1.RetiredTrial, uid types.UID) bool {
	for _, d := range list {
		if d.UID == uid {
			return true
		}
	}
	return false
}

func sortedPhases(in []evalv1.TrialPhase) []evalv1.TrialPhase {
	out := append([]evalv1.TrialPhase(nil), in...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
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

func maxParallel(c *evalv1.Campaign) int32 {
	if c.Spec.MaxParallel < 1 {
		return 10 // the CRD default, for objects that bypassed defaulting
	}
	return c.Spec.MaxParallel
}

func budgetReached(b *evalv1.Budget, s evalv1.Spend) bool {
	if b == nil {
		return false
	}
	return (b.MaxUSD != nil && s.CostUSD >= *b.MaxUSD) || (b.MaxTokens != nil && s.Tokens >= *b.MaxTokens)
}

// budgetAllowance is how many of want Trials may be created now. A Trial is
// created while the spend so far plus the projected spend of the Trials
// already running (each at the mean of the finished ones) stays under the
// budget; with nothing running this is "spent < budget", so the budget stops
// creation exactly at the first Trial that starts after it was reached.
func budgetAllowance(b *evalv1.Budget, spent evalv1.Spend, running, finished int, finishedSpend evalv1.Spend, want int) int {
	var avgCost, avgTokens float64
	if finished > 0 {
		avgCost = finishedSpend.CostUSD / float64(finished)
		avgTokens = float64(finishedSpend.Tokens) / float64(finished)
	}
	n := 0
	for n < want {
		ahead := float64(running + n)
		if b.MaxUSD != nil && spent.CostUSD+ahead*avgCost >= *b.MaxUSD {
			break
		}
		if b.MaxTokens != nil && float64(spent.Tokens)+ahead*avgTokens >= float64(*b.MaxTokens) {
			break
		}
		n++
	}
	return n
}

func spendText(s evalv1.Spend, b *evalv1.Budget) string {
	var parts []string
	if b.MaxUSD != nil {
		parts = append(parts, fmt.Sprintf("$%.4f of $%.4f", s.CostUSD, *b.MaxUSD))
	}
	if b.MaxTokens != nil {
		parts = append(parts, fmt.Sprintf("%d of %d tokens", s.Tokens, *b.MaxTokens))
	}
	return strings.Join(parts, ", ")
}
