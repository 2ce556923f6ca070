package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tolokaforge.io/operator/api/authn"
	"tolokaforge.io/operator/api/task"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// hasNetworkPolicies reports whether the trial's policy exists and its
// namespace's RunnersPolicy exists as this manager would write it.
func (r *TrialReconciler) hasNetworkPolicies(ctx context.Context, t *evalv1.Trial, env *task.Environment) (bool, error) {
	var np networkingv1.NetworkPolicy
	names := []string{NetworkPolicyName(t.Name)}
	if env != nil {
		names = append(names, EnvironmentPolicyName(t.Name))
	}
	for _, name := range names {
		err := r.Client.Get(ctx, types.NamespacedName{Namespace: t.Namespace, Name: name}, &np)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("get network policy %s of trial %s/%s: %w", name, t.Namespace, t.Name, err)
		}
	}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: t.Namespace, Name: RunnersPolicyName}, &np)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("get network policy %s/%s: %w", t.Namespace, RunnersPolicyName, err)
	}
	return equality.Semantic.DeepEqual(np.Spec, RunnersPolicy(t.Namespace, r.ManagerPeer).Spec), nil
}

// ensureNetworkPolicies creates the trial's policy and, where it is missing
// or stale, its namespace's RunnersPolicy. Pods without their fence would
// take traffic from anyone and reach anything (or, without RunnersPolicy,
// a runner would resolve no name): when a write is refused no pod is
// created, and the Trial says why twice: an event, and the
// NetworkPolicyReady=False condition (the event ages out; the condition
// stays until the policies exist). The write is retried until
// timeouts.podsReady ends the attempt.
func (r *TrialReconciler) ensureNetworkPolicies(ctx context.Context, t *evalv1.Trial, env *task.Environment) error {
	// They do not depend on each other: written at once, one round trip
	// instead of two on the way to the attempt's pods.
	own := []*networkingv1.NetworkPolicy{NetworkPolicy(t, r.ManagerPeer)}
	if env != nil {
		own = append(own, EnvironmentPolicy(t, env))
	}
	ownErr := make([]error, len(own))
	var nsErr error
	var wg sync.WaitGroup
	for i, np := range own {
		wg.Go(func() {
			if err := r.Client.Create(ctx, np, client.FieldOwner(evalv1.FieldManager)); err != nil && !apierrors.IsAlreadyExists(err) {
				ownErr[i] = fmt.Errorf("create network policy %s: %w", np.Name, err)
			}
		})
	}
	wg.Go(func() { nsErr = r.ensureRunnersPolicy(ctx, t.Namespace) })
	wg.Wait()
	for _, err := range append(ownErr, nsErr) {
		if err == nil {
			continue
		}
		msg := fmt.Sprintf("%v; no pods are created without it", err)
		emit(r.Recorder, t, []eventRecord{warningEvent(evalv1.ReasonNetworkPolicyUnavailable, actionStartAttempt, msg)})
		st := t.Status.DeepCopy()
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: evalv1.TrialNetworkPolicyReady, Status: metav1.ConditionFalse,
			Reason: evalv1.ReasonNetworkPolicyUnavailable, Message: truncate(msg, 4096),
			ObservedGeneration: t.Generation, LastTransitionTime: metav1.NewTime(r.now()),
		})
		if _, _, serr := writeTrialStatus(ctx, r.Client, t, st); serr != nil {
			return fmt.Errorf("network policy of trial %s/%s: %w (and record it: %w)", t.Namespace, t.Name, err, serr)
		}
		return fmt.Errorf("network policy of trial %s/%s: %w", t.Namespace, t.Name, err)
	}
	return nil
}

// ensureRunnersPolicy makes the namespace's RunnersPolicy exist with this
// manager's spec. The first trials of a namespace start together; one lock
// and the memory of what this process wrote keep them to one create, not one
// each, while the cache has not seen it yet.
func (r *TrialReconciler) ensureRunnersPolicy(ctx context.Context, namespace string) error {
	want := RunnersPolicy(namespace, r.ManagerPeer)
	key := client.ObjectKeyFromObject(want)
	if m := r.runners; m != nil {
		m.mu.Lock()
		defer m.mu.Unlock()
	}
	var cur networkingv1.NetworkPolicy
	err := r.Client.Get(ctx, key, &cur)
	if apierrors.IsNotFound(err) && r.runners != nil && r.runners.written[namespace] {
		// Written by this process, not cached yet, or deleted since: the
		// API server says which.
		err = r.uncached().Get(ctx, key, &cur)
	}
	switch {
	case apierrors.IsNotFound(err):
		err := r.Client.Create(ctx, want, client.FieldOwner(evalv1.FieldManager))
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create network policy %s: %w", want.Name, err)
		}
		if err == nil {
			r.markRunnersWritten(namespace)
			return nil
		}
		// Written by another manager since the read: checked as found.
		if err := r.uncached().Get(ctx, key, &cur); err != nil {
			return fmt.Errorf("get network policy %s: %w", want.Name, err)
		}
	case err != nil:
		return fmt.Errorf("get network policy %s: %w", want.Name, err)
	}
	if equality.Semantic.DeepEqual(cur.Spec, want.Spec) {
		return nil
	}
	// Another manager's settings (gateway port, namespace): this manager's
	// runners need its own.
	cur.Spec = want.Spec
	if err := r.Client.Update(ctx, &cur, client.FieldOwner(evalv1.FieldManager)); err != nil {
		return fmt.Errorf("update network policy %s: %w", want.Name, err)
	}
	r.markRunnersWritten(namespace)
	return nil
}

// uncached is the API reader, or the client where none is set (tests).
func (r *TrialReconciler) uncached() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}

// runnersMemo serialises ensureRunnersPolicy and holds the namespaces whose
// RunnersPolicy this process wrote.
type runnersMemo struct {
	mu      sync.Mutex
	written map[string]bool
}

func (r *TrialReconciler) markRunnersWritten(namespace string) {
	if r.runners != nil {
		r.runners.written[namespace] = true
	}
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
	envTok, err := authn.NewToken()
	if err != nil {
		return err
	}
	s := authSecret(a, tok, envTok)
	addMetricsToken(s, r.Pods.RunnerMetrics)
	if err := r.Client.Create(ctx, s, client.FieldOwner(evalv1.FieldManager)); err != nil && !apierrors.IsAlreadyExists(err) {
		emit(r.Recorder, a.Trial, []eventRecord{warningEvent(evalv1.ReasonCredentialUnavailable, actionStartAttempt,
			fmt.Sprintf("create credential secret %s: %v; no pods are created without it", s.Name, err))})
		return fmt.Errorf("create credential secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}
