package campaign

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// conditionInputs are the plan's figures the conditions speak of.
type conditionInputs struct {
	spent            evalv1.Spend
	reached          bool
	nonTerminalAfter int
	// notCreated: missing Trials not created this time.
	notCreated     int
	heldByParallel int
	heldByBudget   int
	// held: missing Trials held back by spec.suspend or a missing reference.
	held int
}

// setConditions sets TasksResolved, BudgetExceeded, Completed and
// Progressing on st, keeping the transition time of those that did not
// change.
func (w *World) setConditions(st *evalv1.CampaignStatus, in conditionInputs) {
	c := w.Campaign
	budget := c.Spec.Budget
	counts := &st.Counts
	set := func(typ string, ok bool, reason, msg string) {
		s := metav1.ConditionFalse
		if ok {
			s = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: typ, Status: s, Reason: reason, Message: msg,
			ObservedGeneration: c.Generation, LastTransitionTime: w.Now,
		})
	}
	switch {
	case suspended(c):
		// No counts here: the event that announces the condition is sent
		// once, and a count read from a cache that has not seen the Tasks
		// yet would stay wrong in it. Progressing carries the counts.
		set(evalv1.CampaignSuspended, true, evalv1.ReasonSuspended,
			"spec.suspend is true: no Trial is created; those created and not finished run to their end")
	case meta.FindStatusCondition(st.Conditions, evalv1.CampaignSuspended) != nil:
		// As a Job's: the condition appears with the first suspension.
		set(evalv1.CampaignSuspended, false, evalv1.ReasonResumed, "spec.suspend is false: Trials are created again")
	}
	switch {
	case w.MissingRef != "":
		until := "it exists"
		if w.MissingRefReason == evalv1.ReasonNamespaceNotGranted {
			until = "the namespace is granted"
		}
		set(evalv1.CampaignReferencesResolved, false, w.MissingRefReason, w.MissingRef+"; no Trial is created until "+until)
	case w.RefsChecked && meta.FindStatusCondition(st.Conditions, evalv1.CampaignReferencesResolved) != nil:
		set(evalv1.CampaignReferencesResolved, true, evalv1.ReasonResolved, "every Secret the campaign's models name exists")
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
	case in.reached:
		set(evalv1.CampaignBudgetExceeded, true, evalv1.ReasonBudgetExceeded,
			fmt.Sprintf("spent %s: no more Trials are created, running Trials finish", spendText(in.spent, budget)))
	default:
		set(evalv1.CampaignBudgetExceeded, false, evalv1.ReasonWithinBudget, "spent "+spendText(in.spent, budget))
	}
	rest := in.notCreated
	leftToCreate := rest > 0 && !in.reached
	complete := resolved && in.nonTerminalAfter == 0 && !leftToCreate && len(deletingOf(st.Rerun)) == 0
	summary := fmt.Sprintf("%s done: %d passed, %d failed, %d infra-failed, %d invalid",
		st.Progress, counts.Passed, counts.Failed, counts.InfraFailed, counts.Invalid)
	if complete {
		reason, msg := evalv1.ReasonFinished, "all Trials finished; "+summary
		if rest > 0 {
			reason, msg = evalv1.ReasonBudgetExceeded, fmt.Sprintf("budget reached with %d Trials not created; %s", rest, summary)
		}
		set(evalv1.CampaignCompleted, true, reason, msg)
		set(evalv1.CampaignProgressing, false, reason, msg)
		return
	}
	msg := fmt.Sprintf("%s; %d running, %d pending, %d queued", summary, counts.Running, counts.Pending, counts.Queued)
	if in.heldByParallel > 0 {
		msg += fmt.Sprintf(" (maxParallel %d reached)", maxParallel(c))
	}
	if in.heldByBudget > 0 && !in.reached {
		msg += fmt.Sprintf(" (%d held: the running Trials' projected spend would reach the budget)", in.heldByBudget)
	}
	if n := len(deletingOf(st.Rerun)); n > 0 {
		msg += fmt.Sprintf("; %d retired Trials being deleted for rerun", n)
	}
	switch {
	case in.held > 0 && suspended(c):
		msg += fmt.Sprintf(" (suspended: %d not created)", in.held)
	case in.held > 0:
		msg += fmt.Sprintf(" (%d held: %s)", in.held, w.MissingRef)
	}
	switch {
	case in.held > 0 && suspended(c):
		set(evalv1.CampaignCompleted, false, evalv1.ReasonSuspended, msg)
		set(evalv1.CampaignProgressing, in.nonTerminalAfter > 0, evalv1.ReasonSuspended, msg)
	case in.held > 0:
		set(evalv1.CampaignCompleted, false, w.MissingRefReason, msg)
		set(evalv1.CampaignProgressing, in.nonTerminalAfter > 0, w.MissingRefReason, msg)
	default:
		set(evalv1.CampaignCompleted, false, evalv1.ReasonRunning, msg)
		set(evalv1.CampaignProgressing, true, evalv1.ReasonRunning, msg)
	}
}
