package controllers

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/host"
)

// polQ is a queued class's policy: room for 4 by maxParallel, so the bound
// the tests see is Kueue's.
var polQ = slotPolicy{Cap: 4, MaxReuses: 5, Idle: 30 * time.Second, CampaignUID: "cuid", Queued: true}

func claimQ(r *slotRegistry, i int) claimResult {
	return r.claim(classA, trialKey(i), fmt.Sprintf("t%d-1", i), polQ, allReady)
}

// Under Kueue a Trial claims no slot before it is admitted (and does not
// wait for one), and a class makes no more slots than it has admitted,
// unfinished Trials, whatever its maxParallel.
func TestSlotClaimUnderKueueIsBoundByAdmittedTrials(t *testing.T) {
	now := time.Unix(0, 0)
	r := fixedRegistry(&now)

	if res := claimQ(r, 1); res.View != nil || r.count(classA) != 0 {
		t.Fatalf("a trial not admitted got %+v", res.View)
	}
	if w := r.waitersOf(classA); len(w) != 0 {
		t.Fatalf("a trial not admitted waits: %v", w)
	}

	r.admit(classA, trialKey(1))
	r.admit(classA, trialKey(2))
	a, b := claimQ(r, 1), claimQ(r, 2)
	if !a.Made || !b.Made {
		t.Fatalf("two admitted trials, two slots wanted: %+v %+v", a, b)
	}
	for _, v := range []*slotView{a.View, b.View} {
		r.markCreated(slotKey(v), "tok")
		r.markDriven(slotKey(v), v.AttemptID)
	}

	// Trial 1 is evicted: Kueue gave its quota to someone else. While its
	// slot is still being cleaned up, trial 3 is admitted in its stead:
	// two slots for two admitted trials already, so it waits.
	r.unadmit(trialKey(1))
	r.admit(classA, trialKey(3))
	if res := claimQ(r, 3); res.View != nil {
		t.Fatalf("a third slot for two admitted trials: %+v", res.View)
	}
	if w := r.waitersOf(classA); !slices.Equal(w, []types.NamespacedName{trialKey(3)}) {
		t.Fatalf("waiters %v", w)
	}
	// Trial 1's slot comes back clean: trial 3 takes it warm.
	r.release(slotKey(a.View), "t1-1", releaseClean)
	if res := claimQ(r, 3); res.Made || res.View == nil || res.View.Name != a.View.Name {
		t.Fatalf("trial 3 did not take the freed slot: %+v", res)
	}

	// A fourth admitted trial: room for a third slot (3 admitted).
	r.admit(classA, trialKey(4))
	if res := claimQ(r, 4); !res.Made {
		t.Fatalf("admitted trial 4 got %+v", res)
	}
	if n := r.count(classA); n != 3 {
		t.Errorf("%d slots for 3 admitted trials", n)
	}
	// maxParallel still bounds it: a policy with cap 3 makes no fourth.
	r.admit(classA, trialKey(5))
	capped := polQ
	capped.Cap = 3
	if res := r.claim(classA, trialKey(5), "t5-1", capped, allReady); res.View != nil {
		t.Errorf("a slot past maxParallel: %+v", res.View)
	}
}

// A trial admitted into one class counts only there (its latest), and not
// at all once it is gone.
func TestSlotAdmitMovesAndForgets(t *testing.T) {
	now := time.Unix(0, 0)
	r := fixedRegistry(&now)
	r.admit(classA, trialKey(1))
	r.admit(classB, trialKey(1))
	if len(r.admitted[classA]) != 0 || !r.admitted[classB][trialKey(1)] {
		t.Fatalf("admitted %v", r.admitted)
	}
	r.releaseTrial(trialKey(1))
	if len(r.admitted) != 0 {
		t.Fatalf("a deleted trial still counts: %v", r.admitted)
	}
}

// The sweeper keeps a queued class within its admitted Trials: a free slot
// above the bound waits the handoff (the next admitted Trial takes it warm)
// and is then deleted, longest free first; slots of a class not under Kueue
// wait for idleSeconds as before.
func TestSlotSweepDeletesSlotsAboveTheAdmittedTrials(t *testing.T) {
	now := time.Unix(0, 0)
	r := fixedRegistry(&now)
	for i := 1; i <= 3; i++ {
		r.admit(classA, trialKey(i))
	}
	var views []*slotView
	for i := 1; i <= 3; i++ {
		res := claimQ(r, i)
		r.markCreated(slotKey(res.View), "tok")
		r.markDriven(slotKey(res.View), res.View.AttemptID)
		views = append(views, res.View)
	}
	unqueued := claimCreated(t, r, classB, 9, pol2)
	r.markDriven(slotKey(unqueued), "t9-1")
	r.release(slotKey(unqueued), "t9-1", releaseClean)
	notGone := func(types.NamespacedName, bool) bool { return false }

	// Trials 1 and 2 finish, a second apart; trial 3 runs on.
	r.release(slotKey(views[0]), "t1-1", releaseClean)
	r.unadmit(trialKey(1))
	now = now.Add(time.Second)
	r.release(slotKey(views[1]), "t2-1", releaseClean)
	r.unadmit(trialKey(2))

	if out := r.sweep(notGone); len(out) != 0 {
		t.Fatalf("swept within the handoff: %v", out)
	}
	now = now.Add(slotHandoff - time.Second)
	out := r.sweep(notGone)
	if !slices.Equal(out, []types.NamespacedName{slotKey(views[0])}) {
		t.Fatalf("swept %v, want the longest free %s only", out, views[0].Name)
	}
	now = now.Add(time.Second)
	// Trial 4 is admitted: it may have the one free slot left, so it stays.
	r.admit(classA, trialKey(4))
	if out := r.sweep(notGone); len(out) != 0 {
		t.Fatalf("swept %v with 2 slots for 2 admitted trials", out)
	}
	r.unadmit(trialKey(4))
	if out := r.sweep(notGone); !slices.Equal(out, []types.NamespacedName{slotKey(views[1])}) {
		t.Fatalf("swept %v, want %s", out, views[1].Name)
	}
	// The running trial's slot is never swept; the class not under Kueue
	// keeps its free slot until idleSeconds.
	r.unadmit(trialKey(3))
	if out := r.sweep(notGone); len(out) != 0 {
		t.Fatalf("swept %v: a claimed slot, or one of a class not under Kueue", out)
	}
	if r.count(classA) != 1 || r.count(classB) != 1 {
		t.Errorf("counts A %d B %d", r.count(classA), r.count(classB))
	}

	// idleSeconds shorter than the handoff: the bound applies at once.
	r2 := fixedRegistry(&now)
	r2.admit(classA, trialKey(1))
	pol0 := polQ
	pol0.Idle = 0
	v := r2.claim(classA, trialKey(1), "t1-1", pol0, allReady).View
	r2.markCreated(slotKey(v), "tok")
	r2.admit(classA, trialKey(2)) // a waiter-to-be keeps the idle rule off
	r2.waiting[classA] = map[types.NamespacedName]bool{trialKey(2): true}
	r2.release(slotKey(v), "t1-1", releaseUnused)
	r2.unadmit(trialKey(1))
	if out := r2.sweep(notGone); len(out) != 0 {
		t.Fatalf("swept %v with one slot for one admitted trial", out)
	}
	r2.unadmit(trialKey(2))
	if out := r2.sweep(notGone); len(out) != 1 {
		t.Fatalf("swept %v, want the slot no admitted trial needs", out)
	}
}

// queuedSlotTrial is ownedTrial naming a queue.
func queuedSlotTrial() (*evalv1.Trial, *evalv1.Campaign) {
	tr, c := ownedTrial()
	tr.Labels = map[string]string{evalv1.LabelQueueName: "lq"}
	c.Spec.MaxParallel = 5
	return tr, c
}

// Observing a queued Trial: admitted, it counts for its class and claims a
// slot placed where Kueue counted its quota (its flavor's nodes, a class of
// its own); evicted, it counts for none and claims nothing, and the slot its
// attempt held stays its own until the plan releases it.
func TestObserveSlotsUnderKueue(t *testing.T) {
	ctx := context.Background()
	tr, c := queuedSlotTrial()
	r := &TrialReconciler{Client: fake.NewClientBuilder().WithScheme(slotScheme(t)).WithObjects(c).Build(),
		Pods: PodConfig{Image: "img"}, Pool: NewPool(4, nil, logr.Discard()), Slots: newSlotRegistry()}
	spot := corev1.Toleration{Key: "pool", Operator: corev1.TolerationOpEqual, Value: "spot", Effect: corev1.TaintEffectNoSchedule}
	admitted := &QueueState{Workload: "wl", SlotPodSet: true, Admitted: true, ClusterQueue: "cq",
		Placement: map[string]Placement{SlotPodSet: {NodeSelector: map[string]string{"pool": "spot"}, Tolerations: []corev1.Toleration{spot}}}}
	w := &world{Now: t0, Trial: tr, Task: resolvedShop(), Queue: admitted}
	if err := r.observeSlots(ctx, w); err != nil {
		t.Fatal(err)
	}
	cl, mk := w.Slots.Claim, w.Slots.Make
	if !w.Slots.Next || cl == nil || mk == nil {
		t.Fatalf("slots %+v", w.Slots)
	}
	if mk.Template.Spec.NodeSelector["pool"] != "spot" || !slices.Contains(mk.Template.Spec.Tolerations, spot) {
		t.Errorf("slot pod placed %v %v, want the flavor's", mk.Template.Spec.NodeSelector, mk.Template.Spec.Tolerations)
	}
	plain, _ := slotClassOf(r.Pods, tr, resolvedShop().Desc, "c")
	if cl.Class == plain || cl.Class.Hash != slotClassHash(mk.Template) {
		t.Errorf("class %v, unplaced %v", cl.Class, plain)
	}
	if !r.Slots.admitted[cl.Class][client.ObjectKeyFromObject(tr)] {
		t.Errorf("admitted %v", r.Slots.admitted)
	}

	// The attempt started on it; then Kueue preempts the Workload.
	tr.Status.Attempts = []evalv1.AttemptStatus{{Number: 1, ID: cl.AttemptID, StartTime: mt(0),
		Outcome: evalv1.OutcomeRunning, Reason: evalv1.ReasonStarting, Slot: cl.Name}}
	w = &world{Now: t0, Trial: tr, AttemptTask: resolvedShop(),
		Queue: &QueueState{Workload: "wl", SlotPodSet: true, Admitted: true, EvictedReason: "Preempted"}}
	if err := r.observeSlots(ctx, w); err != nil {
		t.Fatal(err)
	}
	if w.Slots.Claim == nil || w.Slots.Claim.Name != cl.Name {
		t.Errorf("the evicted attempt's claim %+v", w.Slots.Claim)
	}
	if len(r.Slots.admitted) != 0 {
		t.Errorf("an evicted trial counts: %v", r.Slots.admitted)
	}
}

// An attempt Kueue evicts from a slot ends InfraFailed (Preempted) and its
// driver is cancelled; the slot waits for that driver's CleanupTrial, and is
// free again only when it answered the slot is clean.
func TestPlanReleasesAnEvictedSlotByItsCleanup(t *testing.T) {
	tr := running(1)
	tr.Spec.Slots = &evalv1.SlotPolicy{Mode: evalv1.SlotsEnabled}
	tr.Labels = map[string]string{evalv1.LabelQueueName: "lq"}
	tr.Status.Attempts[0].Slot = slotName
	evicted := &QueueState{Workload: "wl", SlotPodSet: true, Admitted: true, EvictedReason: "Preempted", EvictedMessage: "to accommodate"}
	slots := func(driven bool) *slotWorld {
		return &slotWorld{Claim: claimView("uid-1-1", true, true, driven), Pod: slotPodIn("ready")}
	}
	p := planTrial(&world{Now: t0.Add(time.Second), Trial: tr, AttemptTask: resolvedShop(), Queue: evicted,
		Driver: &driverView{AttemptID: "uid-1-1", State: stateRunning, Registered: true}, Slots: slots(true)})
	a := p.Status.Attempts[0]
	if a.Outcome != evalv1.OutcomeInfraFailed || a.Reason != evalv1.ReasonPreempted || p.Cancel == nil {
		t.Fatalf("attempt %+v cancel %v", a, p.Cancel)
	}
	if p.SlotRelease != nil {
		t.Fatalf("released %+v while the cancelled driver cleans up", p.SlotRelease)
	}
	tr.Status = p.Status

	canceled := host.AttemptResult{Outcome: evalv1.OutcomeInfraFailed, Reason: evalv1.ReasonCanceled, Message: "attempt canceled"}
	dirty := canceled
	dirty.CleanupError = "CleanupTrial refused: 1 processes below the runner belong to no registered trial"
	lost := canceled
	lost.Reason = evalv1.ReasonRunnerUnavailable
	graded := host.AttemptResult{Outcome: evalv1.OutcomePassed, Reason: evalv1.ReasonPassed}
	for _, tc := range []struct {
		name   string
		res    *host.AttemptResult
		driven bool
		kind   releaseKind
		why    string
	}{
		{name: "cancelled, CleanupTrial clean: free again", res: &canceled, driven: true, kind: releaseClean},
		{name: "finished before the cancel, clean: free again", res: &graded, driven: true, kind: releaseClean},
		{name: "CleanupTrial refused: replaced", res: &dirty, driven: true, kind: releaseDirty, why: "belong to no registered trial"},
		{name: "its runner failed too: replaced", res: &lost, driven: true, kind: releaseDirty, why: evalv1.ReasonRunnerUnavailable},
		{name: "never driven: free, unused", driven: false, kind: releaseUnused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d *driverView
			if tc.res != nil {
				d = &driverView{AttemptID: "uid-1-1", State: stateDone, Result: tc.res}
			}
			p := planTrial(&world{Now: t0.Add(2 * time.Second), Trial: tr, Task: resolvedShop(), Queue: evicted,
				Driver: d, Slots: slots(tc.driven)})
			r := p.SlotRelease
			if r == nil || r.Slot != slotName || r.Kind != tc.kind || !strings.Contains(r.Why, tc.why) {
				t.Fatalf("release %+v, want kind %d why ~%q", r, tc.kind, tc.why)
			}
			if len(p.Status.Attempts) != 1 {
				t.Errorf("an attempt started while evicted: %+v", p.Status.Attempts)
			}
		})
	}
}

// A slotted Trial's Workload reserves the slot pod it runs on: one pod whose
// containers ask what the slot pod's containers ask (the Trial's runner and
// DB service overrides included), never two.
func TestSlotPodSetSpecIsTheSlotPod(t *testing.T) {
	tr, _ := ownedTrial()
	tr.Spec.Runner.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
	tr.Spec.DBService.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("3Gi")}}
	_, tmpl := slotClassOf(PodConfig{Image: "img", GatewayURL: "http://gw:8090/v1"}, tr, resolvedShop().Desc, "c")
	pod := slotPod(tmpl, "ns", "c-slot-x", "h", testCampaign)
	spec := SlotPodSetSpec(tr)
	if len(spec.Containers) != len(pod.Spec.Containers) {
		t.Fatalf("pod set containers %d, slot pod %d", len(spec.Containers), len(pod.Spec.Containers))
	}
	for i, c := range pod.Spec.Containers {
		if got := spec.Containers[i]; got.Name != c.Name || !reflect.DeepEqual(got.Resources, c.Resources) {
			t.Errorf("container %d: pod set %s %v, slot pod %s %v", i, got.Name, got.Resources, c.Name, c.Resources)
		}
	}
	if len(pod.Spec.InitContainers) != 0 || pod.Spec.Overhead != nil || pod.Spec.Resources != nil {
		t.Error("the slot pod asks for more than its containers: the pod set must say so")
	}
	res := AttemptResources(tr)
	if cpu, want := spec.Containers[0].Resources.Requests[corev1.ResourceCPU], res[evalv1.RoleRunner].Requests[corev1.ResourceCPU]; cpu.String() != "1" || !cpu.Equal(want) {
		t.Errorf("runner cpu %s", cpu.String())
	}

	for _, tc := range []struct {
		name   string
		mutate func(*evalv1.Trial)
		env    bool
		want   bool
	}{
		{name: "a campaign's slotted trial", want: true},
		{name: "its task has an environment", env: true},
		{name: "slots disabled", mutate: func(t *evalv1.Trial) { t.Spec.Slots = nil }},
		{name: "a bare trial", mutate: func(t *evalv1.Trial) { t.OwnerReferences = nil }},
		{name: "run by MultiKueue", mutate: func(t *evalv1.Trial) { t.Spec.ManagedBy = ptr.To(evalv1.ManagedByMultiKueue) }},
	} {
		tr, _ := ownedTrial()
		if tc.mutate != nil {
			tc.mutate(tr)
		}
		if got := QueuedOnSlots(tr, tc.env); got != tc.want {
			t.Errorf("%s: QueuedOnSlots = %t", tc.name, got)
		}
	}
}
