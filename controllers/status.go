package controllers

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// maxStatusConflicts bounds how often one reconcile replans after its status
// write lost a race; past that the reconcile is requeued.
const maxStatusConflicts = 3

// writeTrialStatus writes desired as the Trial's status in one merge patch
// guarded by the Trial's resourceVersion, under evalv1.FieldManager. A conflict means
// the plan was made from a stale Trial: the caller replans from a fresh read
// rather than forcing, so a stale cache can never record an attempt or a
// grade twice. It returns the object as written (or t when nothing changed).
func writeTrialStatus(ctx context.Context, c client.Client, t *evalv1.Trial, desired *evalv1.TrialStatus) (*evalv1.Trial, bool, error) {
	if equality.Semantic.DeepEqual(&t.Status, desired) {
		return t, false, nil
	}
	updated := t.DeepCopy()
	updated.Status = *desired.DeepCopy()
	patch := client.MergeFromWithOptions(t, client.MergeFromWithOptimisticLock{})
	if err := c.Status().Patch(ctx, updated, patch, client.FieldOwner(evalv1.FieldManager)); err != nil {
		return nil, false, fmt.Errorf("write status of trial %s/%s: %w", t.Namespace, t.Name, err)
	}
	return updated, true, nil
}

// podsReadyOnly reports whether desired differs from cur only by the
// PodsReady condition turning True, in a plan that hands the attempt to its
// driver. That write is deferred: registration follows within moments and
// its status carries PodsReady, Registered and Running in one patch, which
// saves a write per attempt (issue 15: writes per trial). Should the driver
// wait in the pool, its next event writes PodsReady on its own.
func podsReadyOnly(cur, desired *evalv1.TrialStatus, p *plan) bool {
	if !p.Submit {
		return false
	}
	if c := meta.FindStatusCondition(desired.Conditions, evalv1.TrialPodsReady); c == nil || c.Status != metav1.ConditionTrue {
		return false
	}
	a, b := cur.DeepCopy(), desired.DeepCopy()
	meta.RemoveStatusCondition(&a.Conditions, evalv1.TrialPodsReady)
	meta.RemoveStatusCondition(&b.Conditions, evalv1.TrialPodsReady)
	return equality.Semantic.DeepEqual(a, b)
}
