package campaign

import (
	"context"
	"sort"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

func ownedTrial(name, campaign string) *evalv1.Trial {
	t := &evalv1.Trial{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	if campaign != "" {
		t.OwnerReferences = []metav1.OwnerReference{{APIVersion: evalv1.GroupVersion.String(), Kind: "Campaign",
			Name: campaign, UID: "uid-" + "campaign", Controller: ptr.To(true)}}
	}
	return t
}

// The changes of many Trials within the delay make one reconcile of their
// Campaign; a Trial no Campaign controls enqueues nothing.
func TestTrialEventsAreBatchedPerCampaign(t *testing.T) {
	for _, tc := range []struct {
		name  string
		delay time.Duration
	}{{"delayed", 300 * time.Millisecond}, {"at once", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
			defer q.ShutDown()
			h := (&reconciler{trialEventDelay: tc.delay}).trialEvents()
			ctx := context.Background()
			for i, name := range []string{"a", "b", "c", "d", "e"} {
				tr := ownedTrial(name, "c1")
				if i%2 == 0 {
					h.Update(ctx, event.UpdateEvent{ObjectOld: tr, ObjectNew: tr}, q)
				} else {
					h.Create(ctx, event.CreateEvent{Object: tr}, q)
				}
			}
			h.Delete(ctx, event.DeleteEvent{Object: ownedTrial("x", "c2")}, q)
			h.Update(ctx, event.UpdateEvent{ObjectOld: ownedTrial("y", ""), ObjectNew: ownedTrial("y", "")}, q)
			if tc.delay > 0 {
				if n := q.Len(); n != 0 {
					t.Fatalf("%d requests queued at once, want none before the delay", n)
				}
				deadline := time.Now().Add(10 * time.Second)
				for q.Len() < 2 && time.Now().Before(deadline) {
					time.Sleep(20 * time.Millisecond)
				}
				time.Sleep(2 * tc.delay) // nothing more is coming
			}
			if n := q.Len(); n != 2 {
				t.Fatalf("%d requests queued, want 2 (one per campaign)", n)
			}
			var got []string
			for range 2 {
				req, _ := q.Get()
				got = append(got, req.String())
				q.Done(req)
			}
			sort.Strings(got)
			if want := []string{"ns/c1", "ns/c2"}; got[0] != want[0] || got[1] != want[1] {
				t.Errorf("queued %v, want %v", got, want)
			}
		})
	}
}

// A Trial that finishes frees a maxParallel slot, so its Campaign is woken
// after a quarter of the delay; other changes wait the whole delay.
func TestFinishedTrialWakesItsCampaignSooner(t *testing.T) {
	const delay = 2 * time.Second
	phase := func(name string, p evalv1.TrialPhase) *evalv1.Trial {
		tr := ownedTrial(name, "c1")
		tr.Status.Phase = p
		return tr
	}
	for _, tc := range []struct {
		name     string
		old, new *evalv1.Trial
		wantBy   time.Duration // queued by then
	}{
		{"finished", phase("a", evalv1.PhaseRunning), phase("a", evalv1.PhasePassed), 3 * delay / 4},
		{"started", phase("a", evalv1.PhaseStarting), phase("a", evalv1.PhaseRunning), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
			defer q.ShutDown()
			(&reconciler{trialEventDelay: delay}).trialEvents().Update(context.Background(), event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}, q)
			time.Sleep(3 * delay / 4)
			if got, want := q.Len(), map[bool]int{true: 1, false: 0}[tc.wantBy > 0]; got != want {
				t.Errorf("after %s: %d requests queued, want %d", 3*delay/4, got, want)
			}
		})
	}
}
