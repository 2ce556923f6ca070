package campaign

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1 "k8s.io/api/core/v1"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// writeStatus writes desired as c's status in one merge patch guarded by c's
// resourceVersion: a status planned from a stale Campaign conflicts and is
// replanned, so rerun bookkeeping and retired spend are never lost or
// recorded twice.
func (r *reconciler) writeStatus(ctx context.Context, c *evalv1.Campaign, desired *evalv1.CampaignStatus) (*evalv1.Campaign, error) {
	updated := c.DeepCopy()
	updated.Status = *desired.DeepCopy()
	patch := client.MergeFromWithOptions(c, client.MergeFromWithOptimisticLock{})
	if err := r.client.Status().Patch(ctx, updated, patch, client.FieldOwner(evalv1.FieldManager)); err != nil {
		return nil, fmt.Errorf("write status of campaign %s/%s: %w", c.Namespace, c.Name, err)
	}
	r.mu.Lock()
	r.lastWrite[c.UID] = r.now()
	r.mu.Unlock()
	r.announce(c, updated)
	return updated, nil
}

// maybeWriteStatus writes desired unless it equals the current status, or
// unless it changes only figures and the last write was less than the
// status interval ago; then it asks to be requeued when the interval ends.
func (r *reconciler) maybeWriteStatus(ctx context.Context, c *evalv1.Campaign, desired *evalv1.CampaignStatus) (ctrl.Result, error) {
	if equality.Semantic.DeepEqual(&c.Status, desired) {
		return ctrl.Result{}, nil
	}
	if r.statusInterval > 0 && figuresOnly(&c.Status, desired) {
		r.mu.Lock()
		last, ok := r.lastWrite[c.UID]
		r.mu.Unlock()
		if wait := r.statusInterval - r.now().Sub(last); ok && wait > 0 {
			return ctrl.Result{RequeueAfter: wait}, nil
		}
	}
	_, err := r.writeStatus(ctx, c, desired)
	return ctrl.Result{}, err
}

// figuresOnly reports whether old and new differ only in counts, aggregates,
// spend and condition messages: nothing a reader waits on.
func figuresOnly(old, new *evalv1.CampaignStatus) bool {
	if old.ObservedGeneration != new.ObservedGeneration || old.Counts.Total != new.Counts.Total ||
		!equality.Semantic.DeepEqual(old.Rerun, new.Rerun) ||
		!equality.Semantic.DeepEqual(old.RetiredSpend, new.RetiredSpend) ||
		len(old.Conditions) != len(new.Conditions) {
		return false
	}
	for _, nc := range new.Conditions {
		oc := findCondition(old.Conditions, nc.Type)
		if oc == nil || oc.Status != nc.Status || oc.Reason != nc.Reason {
			return false
		}
	}
	return true
}

func findCondition(cs []metav1.Condition, typ string) *metav1.Condition {
	for i := range cs {
		if cs[i].Type == typ {
			return &cs[i]
		}
	}
	return nil
}

func (r *reconciler) forgetWrite(uid types.UID) {
	r.mu.Lock()
	delete(r.lastWrite, uid)
	r.mu.Unlock()
}

// announce emits events for the conditions that turned True with this write.
func (r *reconciler) announce(before, after *evalv1.Campaign) {
	turned := func(typ string) *metav1.Condition {
		n := findCondition(after.Status.Conditions, typ)
		if n == nil || n.Status != metav1.ConditionTrue {
			return nil
		}
		if o := findCondition(before.Status.Conditions, typ); o != nil && o.Status == metav1.ConditionTrue {
			return nil
		}
		return n
	}
	if c := turned(evalv1.CampaignBudgetExceeded); c != nil {
		r.event(after, corev1.EventTypeWarning, c.Reason, actionBudget, c.Message)
	}
	if c := turned(evalv1.CampaignCompleted); c != nil {
		r.event(after, corev1.EventTypeNormal, c.Reason, actionComplete, c.Message)
	}
}
