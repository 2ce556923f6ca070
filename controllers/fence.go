package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tolokaforge.io/operator/api/authn"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// hasNetworkPolicies reports whether every policy of the trial exists.
func (r *TrialReconciler) hasNetworkPolicies(ctx context.Context, t *evalv1.Trial) (bool, error) {
	for _, name := range []string{NetworkPolicyName(t.Name), RunnerEgressPolicyName(t.Name)} {
		var np networkingv1.NetworkPolicy
		err := r.Client.Get(ctx, types.NamespacedName{Namespace: t.Namespace, Name: name}, &np)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("get network policy %s of trial %s/%s: %w", name, t.Namespace, t.Name, err)
		}
	}
	return true, nil
}

// ensureNetworkPolicies creates the trial's policies. Pods without their
// fence would take traffic from anyone and reach anything: when a create is
// refused no pod is created, and the Trial says why twice: an event, and the
// NetworkPolicyReady=False condition (the event ages out; the condition stays
// until the policies exist). The create is retried until timeouts.podsReady
// ends the attempt.
func (r *TrialReconciler) ensureNetworkPolicies(ctx context.Context, t *evalv1.Trial) error {
	// The policies do not depend on each other: created at once, one round
	// trip instead of two on the way to the attempt's pods.
	nps := NetworkPolicies(t, r.ManagerPeer)
	errs := make([]error, len(nps))
	var wg sync.WaitGroup
	for i, np := range nps {
		wg.Go(func() {
			errs[i] = r.Client.Create(ctx, np, client.FieldOwner(evalv1.FieldManager))
		})
	}
	wg.Wait()
	for i, np := range nps {
		err := errs[i]
		if err == nil || apierrors.IsAlreadyExists(err) {
			continue
		}
		msg := fmt.Sprintf("create network policy %s: %v; no pods are created without it", np.Name, err)
		emit(r.Recorder, t, []eventRecord{warningEvent(evalv1.ReasonNetworkPolicyUnavailable, ActionStartAttempt, msg)})
		st := t.Status.DeepCopy()
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: evalv1.TrialNetworkPolicyReady, Status: metav1.ConditionFalse,
			Reason: evalv1.ReasonNetworkPolicyUnavailable, Message: truncate(msg, 4096),
			ObservedGeneration: t.Generation, LastTransitionTime: metav1.NewTime(r.now()),
		})
		if _, _, serr := writeTrialStatus(ctx, r.Client, t, st); serr != nil {
			return fmt.Errorf("create network policy of trial %s/%s: %w (and record it: %w)", t.Namespace, t.Name, err, serr)
		}
		return fmt.Errorf("create network policy of trial %s/%s: %w", t.Namespace, t.Name, err)
	}
	return nil
}

func (r *TrialReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// ensureAuthSecret creates the attempt's credential Secret before its pods
// (they mount it). An existing one is kept: its token is what pods created
// by an earlier reconcile already read.
func (r *TrialReconciler) ensureAuthSecret(ctx context.Context, a attemptRef) error {
	tok, err := authn.NewToken()
	if err != nil {
		return err
	}
	s := AuthSecret(a, tok)
	if err := r.Client.Create(ctx, s, client.FieldOwner(evalv1.FieldManager)); err != nil && !apierrors.IsAlreadyExists(err) {
		emit(r.Recorder, a.Trial, []eventRecord{warningEvent(evalv1.ReasonCredentialUnavailable, ActionStartAttempt,
			fmt.Sprintf("create credential secret %s: %v; no pods are created without it", s.Name, err))})
		return fmt.Errorf("create credential secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}
