package controllers

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// The pool forgets a Trial once the cache shows its outcome: a manager that
// runs 10,000 Trials no longer holds an entry for each until it is deleted.
// A Trial still running keeps its entry.
func TestPoolForgetsTrialsTheCacheShowsFinished(t *testing.T) {
	done := running(1)
	done.Name = "done"
	done.Status.Phase = evalv1.PhasePassed
	done.Status.Attempts[0].Outcome = evalv1.OutcomePassed
	live := running(1)
	live.Name = "live"
	api, _ := newPolicyClientWith(t, func(b *fake.ClientBuilder) {
		b.WithIndex(&corev1.Pod{}, podOwnerIndex, func(client.Object) []string { return nil }).
			WithStatusSubresource(&evalv1.Trial{})
	}, done, live)
	pool := NewPool(2, nil, logr.Discard())
	for _, tr := range []*evalv1.Trial{done, live} {
		pool.Claim(client.ObjectKeyFromObject(tr), tr.Status.Attempts[0].ID, &attemptInput{Trial: tr.DeepCopy(), Number: 1})
	}
	r := &TrialReconciler{Client: api, APIReader: api, Recorder: events.NewFakeRecorder(10), Pods: PodConfig{Image: "i"},
		Pool: pool, Log: logr.Discard(), ManagerPeer: DefaultManagerPeer("tolokaforge-system")}
	for _, tr := range []*evalv1.Trial{done, live} {
		if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(tr)}); err != nil {
			t.Fatalf("reconcile %s: %v", tr.Name, err)
		}
	}
	if _, ok := pool.View(client.ObjectKeyFromObject(done)); ok {
		t.Error("the pool still holds a Trial whose outcome the cache shows")
	}
	if _, ok := pool.View(client.ObjectKeyFromObject(live)); !ok {
		t.Error("the pool forgot a Trial whose attempt is running")
	}
}
