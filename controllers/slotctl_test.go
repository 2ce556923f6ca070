package controllers

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

func slotScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := evalv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return scheme
}

// ownedTrial is slotTrial controlled by Campaign c.
func ownedTrial() (*evalv1.Trial, *evalv1.Campaign) {
	c := &evalv1.Campaign{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", UID: "cuid"},
		Spec: evalv1.CampaignSpec{MaxParallel: 2}}
	tr := slotTrial()
	tr.OwnerReferences = []metav1.OwnerReference{campaignOwner(campaignRef{Name: "c", UID: "cuid"})}
	return tr, c
}

// Which Trials run their next attempt on a slot: a Campaign's, Enabled,
// admitted by Kueue onto a slot pod if queued, not held and not in backoff.
// A task with an environment of its own takes its runner from a slot too
// (its environment pod stays its attempt's).
func TestObserveSlotsDecides(t *testing.T) {
	for _, tc := range []struct {
		name    string
		noSlots bool
		mutate  func(tr *evalv1.Trial, w *world)
		slot    bool
	}{
		{name: "a campaign's trial, enabled", slot: true},
		{name: "disabled", mutate: func(tr *evalv1.Trial, _ *world) { tr.Spec.Slots.Mode = evalv1.SlotsDisabled }},
		{name: "no policy", mutate: func(tr *evalv1.Trial, _ *world) { tr.Spec.Slots = nil }},
		{name: "a bare trial", mutate: func(tr *evalv1.Trial, _ *world) { tr.OwnerReferences = nil }},
		{name: "names a queue, no Kueue integration: the label means nothing", slot: true, mutate: func(tr *evalv1.Trial, _ *world) {
			tr.Labels = map[string]string{evalv1.LabelQueueName: "lq"}
		}},
		{name: "queued, not admitted", mutate: func(tr *evalv1.Trial, w *world) {
			tr.Labels = map[string]string{evalv1.LabelQueueName: "lq"}
			w.Queue = &QueueState{Workload: "wl", SlotPodSet: true, Pending: "insufficient quota"}
		}},
		{name: "queued, admitted", slot: true, mutate: func(tr *evalv1.Trial, w *world) {
			tr.Labels = map[string]string{evalv1.LabelQueueName: "lq"}
			w.Queue = &QueueState{Workload: "wl", SlotPodSet: true, Admitted: true, ClusterQueue: "cq"}
		}},
		{name: "queued, evicted", mutate: func(tr *evalv1.Trial, w *world) {
			tr.Labels = map[string]string{evalv1.LabelQueueName: "lq"}
			w.Queue = &QueueState{Workload: "wl", SlotPodSet: true, Admitted: true, EvictedReason: "Preempted"}
		}},
		{name: "queued, admitted on a Workload reserving pods of its own", mutate: func(tr *evalv1.Trial, w *world) {
			tr.Labels = map[string]string{evalv1.LabelQueueName: "lq"}
			w.Queue = &QueueState{Workload: "wl", Admitted: true, ClusterQueue: "cq"}
		}},
		{name: "its task has an environment", slot: true, mutate: func(_ *evalv1.Trial, w *world) { w.Task = &resolvedTask{Desc: terminalTask("img")} }},
		{name: "held", mutate: func(tr *evalv1.Trial, _ *world) { tr.Spec.Suspend = ptr.To(true) }},
		{name: "in backoff", mutate: func(tr *evalv1.Trial, _ *world) {
			tr.Spec.RetryPolicy = evalv1.RetryPolicy{MaxAttempts: 3, Backoff: &metav1.Duration{Duration: time.Minute}}
			tr.Status.Attempts = []evalv1.AttemptStatus{{Number: 1, ID: "uid-1-1", EndTime: mt(0), Outcome: evalv1.OutcomeInfraFailed}}
		}},
		{name: "a manager whose pods cannot be slots (tolokaforge dev)", noSlots: true},
		{name: "readmitted after an eviction: no backoff", slot: true, mutate: func(tr *evalv1.Trial, w *world) {
			tr.Labels = map[string]string{evalv1.LabelQueueName: "lq"}
			w.Queue = &QueueState{Workload: "wl", SlotPodSet: true, Admitted: true, ClusterQueue: "cq"}
			tr.Spec.RetryPolicy = evalv1.RetryPolicy{MaxAttempts: 3, Backoff: &metav1.Duration{Duration: time.Minute}}
			tr.Status.Attempts = []evalv1.AttemptStatus{{Number: 1, ID: "uid-1-1", EndTime: mt(0), Outcome: evalv1.OutcomeInfraFailed,
				Reason: evalv1.ReasonPreempted}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, c := ownedTrial()
			w := &world{Now: t0.Add(time.Second), Trial: tr, Task: resolvedShop()}
			if tc.mutate != nil {
				tc.mutate(tr, w)
			}
			r := &TrialReconciler{Client: fake.NewClientBuilder().WithScheme(slotScheme(t)).WithObjects(c).Build(),
				Pods: PodConfig{Image: "img"}, Pool: NewPool(4, nil, logr.Discard()), Slots: newSlotRegistry(), NoSlots: tc.noSlots}
			if err := r.observeSlots(context.Background(), w); err != nil {
				t.Fatal(err)
			}
			next := w.Slots != nil && w.Slots.Next
			if next != tc.slot {
				t.Fatalf("next attempt on a slot: %t, want %t", next, tc.slot)
			}
			if !tc.slot {
				if w.Slots != nil && w.Slots.Claim != nil {
					t.Errorf("claimed %+v", w.Slots.Claim)
				}
				return
			}
			cl, mk := w.Slots.Claim, w.Slots.Make
			if cl == nil || cl.AttemptID != AttemptID(tr, int32(len(tr.Status.Attempts))+1) || mk == nil || mk.Campaign.UID != "cuid" || mk.Class != cl.Class {
				t.Fatalf("claim %+v make %+v", cl, mk)
			}
			if n := r.Slots.count(cl.Class); n != 1 {
				t.Errorf("%d slots", n)
			}
		})
	}
}

// The sweeper deletes, with their Secrets, the slot pods this process does
// not know (at startup, every one) and leaves its own and other pods alone.
func TestSweepDeletesUnknownSlots(t *testing.T) {
	class := slotClass{Namespace: "ns", Campaign: "c", Hash: "aaaaaaaaaa"}
	r := &TrialReconciler{Slots: newSlotRegistry()}
	mine := r.Slots.claim(class, trialKey(1), "t1-1", slotPolicy{Cap: 2, MaxReuses: 5, Idle: time.Hour}, allReady).View
	r.Slots.markCreated(slotKey(mine), "tok")
	tmpl := slotTemplate(PodConfig{Image: "img"}, slotTrial(), nil)
	known := slotPod(tmpl, "ns", mine.Name, class.Hash, testCampaign)
	orphan := slotPod(tmpl, "ns", "c-slot-aaaaaa-old0", class.Hash, testCampaign)
	trialPod := runnerPod(PodConfig{Image: "img"}, attemptRef{testTrial(), 1}, nil)
	objs := []client.Object{known, orphan, trialPod,
		slotSecret("ns", known.Name, class.Hash, "tok", testCampaign), slotSecret("ns", orphan.Name, class.Hash, "old", testCampaign)}
	r.Client = fake.NewClientBuilder().WithScheme(slotScheme(t)).WithObjects(objs...).Build()
	if err := r.sweepSlots(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	check := func(obj client.Object, key types.NamespacedName, gone bool) {
		t.Helper()
		err := r.Client.Get(ctx, key, obj)
		if gone != apierrors.IsNotFound(err) {
			t.Errorf("%T %s: gone %t, err %v", obj, key, gone, err)
		}
	}
	check(&corev1.Pod{}, client.ObjectKeyFromObject(orphan), true)
	check(&corev1.Secret{}, types.NamespacedName{Namespace: "ns", Name: SlotSecretName(orphan.Name)}, true)
	check(&corev1.Pod{}, client.ObjectKeyFromObject(known), false)
	check(&corev1.Secret{}, types.NamespacedName{Namespace: "ns", Name: SlotSecretName(known.Name)}, false)
	check(&corev1.Pod{}, client.ObjectKeyFromObject(trialPod), false)
}

// createSlot makes the Campaign's policy (once per Campaign: a Campaign
// re-created under the same name gets its own), the Secret, then the pod
// mounting it; a retried create finds its own Secret and keeps its token.
func TestCreateSlot(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithScheme(slotScheme(t)).Build()
	r := &TrialReconciler{Client: c, APIReader: c, Slots: newSlotRegistry(), ManagerPeer: DefaultManagerPeer("sys")}
	class, tmpl := slotClassOf(PodConfig{Image: "img"}, slotTrial(), nil, "c")
	res := r.Slots.claim(class, trialKey(1), "t1-1", slotPolicy{Cap: 2}, allReady)
	mk := &slotMake{Template: tmpl, Campaign: testCampaign, Class: class}
	if err := r.createSlot(ctx, "ns", res.View.Name, mk); err != nil {
		t.Fatal(err)
	}
	v := r.Slots.claimOf(trialKey(1))
	sec := &corev1.Secret{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: "ns", Name: SlotSecretName(v.Name)}, sec); err != nil {
		t.Fatal(err)
	}
	if !v.Created || v.Token == "" || string(sec.Data["token"]) != v.Token {
		t.Fatalf("created %t token %q, secret holds %q", v.Created, v.Token, sec.Data["token"])
	}
	pod := &corev1.Pod{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: "ns", Name: v.Name}, pod); err != nil {
		t.Fatal(err)
	}
	// Retried (a lost response): the same objects, the token of the Secret.
	if err := r.createSlot(ctx, "ns", v.Name, mk); err != nil {
		t.Fatal(err)
	}
	if again := r.Slots.claimOf(trialKey(1)); again.Token != v.Token {
		t.Errorf("token changed on a retried create: %q -> %q", v.Token, again.Token)
	}
	// The Campaign deleted and re-created: its policy went with it.
	np := &networkingv1.NetworkPolicy{}
	key := types.NamespacedName{Namespace: "ns", Name: SlotPolicyName("c")}
	if err := c.Get(ctx, key, np); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, np); err != nil {
		t.Fatal(err)
	}
	again := *mk
	again.Campaign.UID = "cuid-2"
	res = r.Slots.claim(class, trialKey(2), "t2-1", slotPolicy{Cap: 2}, allReady)
	if err := r.createSlot(ctx, "ns", res.View.Name, &again); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, key, np); err != nil || metav1.GetControllerOf(np).UID != "cuid-2" {
		t.Fatalf("the new Campaign's policy: %v", err)
	}
}

// A slot pod the API server refuses: the reconcile fails (and is retried),
// the Trial gets a Warning naming the refusal, and the slot stays not made
// so the next reconcile creates it again.
func TestExecuteSlotCreateRefused(t *testing.T) {
	refused := errors.New(`pods "c-slot" is forbidden: exceeded quota`)
	c := fake.NewClientBuilder().WithScheme(slotScheme(t)).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*corev1.Pod); ok {
				return refused
			}
			return cl.Create(ctx, obj, opts...)
		},
	}).Build()
	rec := events.NewFakeRecorder(10)
	r := &TrialReconciler{Client: c, APIReader: c, Recorder: rec, Slots: newSlotRegistry(), Log: logr.Discard()}
	tr := running(1)
	tr.Spec.Slots = &evalv1.SlotPolicy{Mode: evalv1.SlotsEnabled}
	class, tmpl := slotClassOf(PodConfig{Image: "img"}, tr, nil, "c")
	v := r.Slots.claim(class, trialKey(1), tr.Status.Attempts[0].ID, slotPolicy{Cap: 1}, allReady).View
	tr.Status.Attempts[0].Slot = v.Name
	err := r.executeSlots(context.Background(), tr, &plan{SlotCreate: &slotMake{Template: tmpl, Campaign: testCampaign, Class: class}})
	if !errors.Is(err, refused) {
		t.Fatalf("executeSlots = %v", err)
	}
	select {
	case e := <-rec.Events:
		if !strings.Contains(e, "Warning "+evalv1.ReasonPodsPending) || !strings.Contains(e, "exceeded quota") {
			t.Errorf("event %q", e)
		}
	default:
		t.Error("no event")
	}
	if got := r.Slots.claimOf(trialKey(1)); got == nil || got.Created {
		t.Errorf("slot %+v", got)
	}
}
