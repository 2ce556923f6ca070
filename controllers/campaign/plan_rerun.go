package campaign

import (
	"sort"

	"k8s.io/apimachinery/pkg/types"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// rerunPlan is the rerun bookkeeping of one reconcile.
type rerunPlan struct {
	// status is status.rerun to write (nil: no rerun ever).
	status *evalv1.RerunStatus
	// retiredSpend includes the Trials this reconcile retires.
	retiredSpend evalv1.Spend
	// retiring are the UIDs of the retired Trials still present or being
	// deleted: they no longer count.
	retiring map[types.UID]bool
	// deletes are the retired Trials to delete (those not already deleting).
	deletes []evalv1.RetiredTrial
	// started: this reconcile starts a rerun (see Plan.RerunStarted).
	started bool
}

// planRerun forgets retired Trials that are gone, then starts a rerun if
// this generation asks for one and has not had it: every terminal Trial of
// ours in a phase spec.rerun names, created by an older generation and
// still in the plan, is retired and its spend moves to retiredSpend.
func (w *World) planRerun(exp planned, present map[types.UID]*trialView) rerunPlan {
	c := w.Campaign
	gen := c.Generation
	var rr rerunPlan
	if c.Status.Rerun != nil {
		rr.status = c.Status.Rerun.DeepCopy()
		kept := rr.status.Deleting[:0]
		for _, d := range rr.status.Deleting {
			if present[d.UID] != nil {
				kept = append(kept, d)
			}
		}
		rr.status.Deleting = kept
		if len(rr.status.Deleting) == 0 {
			rr.status.Deleting = nil
		}
	}
	rr.retiredSpend = c.Status.RetiredSpend
	if len(c.Spec.Rerun) > 0 && (rr.status == nil || rr.status.Generation != gen) {
		phases := map[evalv1.TrialPhase]bool{}
		for _, ph := range c.Spec.Rerun {
			phases[ph] = true
		}
		next := &evalv1.RerunStatus{Generation: gen, Phases: sortedPhases(c.Spec.Rerun)}
		if rr.status != nil {
			next.Deleting = rr.status.Deleting
		}
		for _, t := range w.Trials {
			if t.Ours && t.Terminal && !t.Deleting && phases[t.Phase] &&
				t.CreatedGeneration < gen && exp.in[t.Cell] && !retiringUID(next.Deleting, t.UID) {
				next.Deleting = append(next.Deleting, evalv1.RetiredTrial{Name: t.Name, UID: t.UID})
				next.Retired++
				rr.retiredSpend.Tokens += t.Outcome.Tokens
				rr.retiredSpend.CostUSD += t.Outcome.CostUSD
			}
		}
		rr.status = next
		rr.started = true
	}
	rr.retiring = map[types.UID]bool{}
	if rr.status != nil {
		for _, d := range rr.status.Deleting {
			rr.retiring[d.UID] = true
			if t := present[d.UID]; t != nil && !t.Deleting {
				rr.deletes = append(rr.deletes, d)
			}
		}
	}
	return rr
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
