package campaign

import (
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// Cell is one planned Trial: an agent on a Task (by object name), at a trial
// index.
type Cell struct {
	Agent string
	Task  string
	Index int32
}

// terminalPhases end a Trial for good.
var terminalPhases = map[evalv1.TrialPhase]bool{
	evalv1.PhasePassed: true, evalv1.PhaseFailed: true, evalv1.PhaseGradingFailed: true,
	evalv1.PhaseInfraFailed: true, evalv1.PhaseInvalid: true, evalv1.PhaseProtocolSkew: true,
}

// IsTerminalPhase reports whether p ends a Trial.
func IsTerminalPhase(p evalv1.TrialPhase) bool { return terminalPhases[p] }

// PhaseOf is the Trial's phase; a Trial whose Completed condition is True
// but whose phase is not terminal yet (a status written by an older
// controller) takes the condition's reason when that is a terminal phase.
func PhaseOf(t *evalv1.Trial) evalv1.TrialPhase {
	if IsTerminalPhase(t.Status.Phase) {
		return t.Status.Phase
	}
	if c := meta.FindStatusCondition(t.Status.Conditions, evalv1.TrialCompleted); c != nil &&
		c.Status == metav1.ConditionTrue && IsTerminalPhase(evalv1.TrialPhase(c.Reason)) {
		return evalv1.TrialPhase(c.Reason)
	}
	return t.Status.Phase
}

// trialView is what the planner reads from one Trial.
type trialView struct {
	Name string
	UID  types.UID
	// Cell is read from the labels and annotations the campaign wrote; Ours
	// is false when they are missing or malformed.
	Cell              Cell
	Ours              bool
	CreatedGeneration int64
	Phase             evalv1.TrialPhase
	Terminal          bool
	Deleting          bool
	Outcome           Outcome
}

// viewOf reads a Trial for the planner.
func viewOf(t *evalv1.Trial) trialView {
	v := trialView{
		Name:     t.Name,
		UID:      t.UID,
		Phase:    PhaseOf(t),
		Deleting: t.DeletionTimestamp != nil,
	}
	v.Terminal = IsTerminalPhase(v.Phase)
	v.Cell, v.Ours = cellOf(t)
	v.CreatedGeneration, _ = strconv.ParseInt(t.Annotations[evalv1.AnnotationCampaignGeneration], 10, 64)
	v.Outcome = OutcomeOf(t)
	return v
}

func cellOf(t *evalv1.Trial) (Cell, bool) {
	agent, okAgent := t.Labels[evalv1.LabelAgent]
	taskName, okTask := t.Annotations[evalv1.AnnotationTaskName]
	idx, err := strconv.ParseInt(t.Labels[evalv1.LabelTrialIndex], 10, 32)
	if !okAgent || !okTask || err != nil || idx < 0 || int32(idx) != t.Spec.TrialIndex {
		return Cell{}, false
	}
	return Cell{Agent: agent, Task: taskName, Index: int32(idx)}, true
}

// OutcomeOf is what aggregation reads from a Trial: its agent and task (as
// the campaign labelled them), phase, grade score and the usage of all its
// attempts.
func OutcomeOf(t *evalv1.Trial) Outcome {
	o := Outcome{
		Agent: t.Labels[evalv1.LabelAgent],
		Task:  t.Annotations[evalv1.AnnotationTaskName],
		Phase: PhaseOf(t),
	}
	if g := t.Status.Grade; g != nil {
		o.Score = ptr.To(g.Score)
	}
	if u := t.Status.Usage; u != nil {
		o.Tokens = u.TotalTokens
		o.CostUSD = u.TotalCostUSD
	}
	// The running attempt's spend so far is spent too (the budget sees it
	// before the attempt ends); status.usage holds only ended attempts, and
	// an ended attempt's progress is cleared, so nothing counts twice.
	if pr := t.Status.Progress; pr != nil && !IsTerminalPhase(o.Phase) {
		o.Tokens += pr.Usage.TotalTokens
		o.CostUSD += pr.Usage.TotalCostUSD
	}
	return o
}

// buildTrial is the Trial of cell, named name, owned by c and created under
// c's current generation. Everything the Campaign passes down is copied, so
// the Trial (immutable once created) runs as the Campaign said at that
// moment.
func buildTrial(c *evalv1.Campaign, cell Cell, name string, agent evalv1.ModelSpec) *evalv1.Trial {
	s := c.Spec.DeepCopy()
	t := &evalv1.Trial{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: c.Namespace,
			Labels: map[string]string{
				evalv1.LabelCampaign:   evalv1.LabelValue(c.Name),
				evalv1.LabelAgent:      cell.Agent,
				evalv1.LabelTask:       evalv1.LabelValue(cell.Task),
				evalv1.LabelTrialIndex: strconv.Itoa(int(cell.Index)),
			},
			Annotations: map[string]string{
				evalv1.AnnotationCampaignGeneration: strconv.FormatInt(c.Generation, 10),
				evalv1.AnnotationTaskName:           cell.Task,
			},
		},
		Spec: evalv1.TrialSpec{
			TaskRef:       &evalv1.TaskReference{Name: cell.Task},
			TrialIndex:    cell.Index,
			Agent:         *agent.DeepCopy(),
			UserSimulator: s.UserSimulator,
			Judge:         s.Judge,
			MaxTurns:      s.MaxTurns,
			Timeouts:      s.Timeouts,
			RetryPolicy:   s.RetryPolicy,
			Runner:        s.Runner,
			DBService:     s.DBService,
			// Not the ttl: a Trial deleted under its Campaign would be
			// re-created; the Campaign's ttl deletes it with its Trials.
			KeepPodsAfterFinished: s.KeepPodsAfterFinished,
			ManagedBy:             s.TrialManagedBy,
			Slots:                 trialSlots(s),
		},
	}
	if evalv1.OwnedByReference(s.TrialManagedBy) {
		t.OwnerReferences = []metav1.OwnerReference{{
			APIVersion:         evalv1.GroupVersion.String(),
			Kind:               "Campaign",
			Name:               c.Name,
			UID:                c.UID,
			Controller:         ptr.To(true),
			BlockOwnerDeletion: ptr.To(true),
		}}
	} else {
		// MultiKueue copies the Trial's metadata into a worker cluster,
		// whose garbage collector would delete a copy owned by a Campaign
		// it does not have: the Campaign is named by label and annotation,
		// and deletes these Trials itself (evalv1.FinalizerCampaignTrials).
		t.Labels[evalv1.LabelCampaignUID] = string(c.UID)
		t.Annotations[evalv1.AnnotationCampaignName] = c.Name
	}
	// Kueue: the Campaign's queue and priority class are its Trials' (each
	// Trial is one Workload), so a whole Campaign queues under one quota.
	for _, k := range []string{evalv1.LabelQueueName, evalv1.LabelPriorityClass} {
		if v := c.Labels[k]; v != "" {
			t.Labels[k] = v
		}
	}
	return t
}

// Defaults of a Campaign's slots (the CRD's for a spec.slots that is set).
const (
	defaultMaxReuses   = 50
	defaultIdleSeconds = 30
)

// trialSlots is the spec.slots a Campaign gives its Trials: its own, or, when
// it says nothing, warm slots (docs/warm-slots.md: a quarter of the API writes
// and four times the Trials/s of pods of their own on a real node). A
// Campaign that keeps its Trials' pods after they finish asked for pods to
// look at, so it keeps per-attempt pods unless it names slots itself.
func trialSlots(s *evalv1.CampaignSpec) *evalv1.SlotPolicy {
	if s.Slots != nil {
		return s.Slots.DeepCopy()
	}
	if s.KeepPodsAfterFinished {
		return nil
	}
	return &evalv1.SlotPolicy{Mode: evalv1.SlotsEnabled, MaxReuses: defaultMaxReuses,
		IdleSeconds: ptr.To[int32](defaultIdleSeconds)}
}
