package controllers

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
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
