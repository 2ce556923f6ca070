package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// A terminal task on a slot (docs/warm-slots.md, docs/terminal-tasks.md):
// its runner and DB service come from a slot, its environment pod is its
// attempt's own.

// envPodIn is attempt n's environment pod of trial t1 on a slot of
// campaign c, in a given state.
func envPodIn(n int32, state string) *corev1.Pod {
	p := onSlotEnvironment(environmentPod(PodConfig{Image: "img"}, attemptRef{testTrial(), n}, terminalTask("img").Environment), "c")
	switch state {
	case "ready":
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.7.7.7",
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	case "pending":
		p.Status = corev1.PodStatus{Phase: corev1.PodPending}
	case "pull":
		p.Status = corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: evalv1.RoleEnvironment,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "no such image"}}}}}
	case "failed":
		p.Status = corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{
			Name: evalv1.RoleEnvironment, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137}}}}}
	}
	return p
}

// The first attempt of a terminal task on a slot: the slot as for any
// task, and its own environment pod made with its fence (naming the slot)
// once the slot is claimed, never before. It is submitted only once both
// are Ready, with the environment's address.
func TestPlanStartsATerminalAttemptOnASlot(t *testing.T) {
	for _, tc := range []struct {
		name    string
		slots   *slotWorld
		fenced  bool // the environment pod and its policy are made now
		waitFor string
	}{
		{name: "no slot free: no environment yet", slots: &slotWorld{Next: true}},
		{name: "a new slot: the environment is made beside it", fenced: true, waitFor: slotName,
			slots: &slotWorld{Next: true, Claim: claimView("uid-1-1", false, false, false), Make: &slotMake{Campaign: testCampaign}}},
		{name: "a ready slot: waits for the environment", fenced: true, waitFor: "t1-a1-environment",
			slots: &slotWorld{Next: true, Claim: claimView("uid-1-1", true, true, false), Pod: slotPodIn("ready")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := slotTrial()
			p := planTrial(&world{Now: t0, Trial: tr, Task: &resolvedTask{Desc: terminalTask("img")}, Slots: tc.slots})
			if len(p.Status.Attempts) != 1 {
				t.Fatalf("attempts %+v", p.Status.Attempts)
			}
			a := p.Status.Attempts[0]
			if a.RunnerPod != "" || a.DBServicePod != "" || a.EnvironmentPod != "t1-a1-environment" || a.Outcome != evalv1.OutcomeRunning {
				t.Errorf("attempt %+v", a)
			}
			if p.Submit || p.EnsureNP || len(p.Events) != 0 {
				t.Errorf("submit %t np %t events %+v", p.Submit, p.EnsureNP, p.Events)
			}
			if !tc.fenced {
				if len(p.CreatePod) != 0 || p.SlotEnv != nil {
					t.Errorf("pods %v fence %+v before a slot is claimed", p.CreatePod, p.SlotEnv)
				}
				return
			}
			if !slices.Equal(p.CreatePod, []string{evalv1.RoleEnvironment}) || p.SlotEnv == nil || *p.SlotEnv != (slotEnvironment{Slot: slotName, Campaign: "c"}) {
				t.Errorf("pods %v fence %+v", p.CreatePod, p.SlotEnv)
			}
			want := "waiting for pod " + tc.waitFor + " of attempt 1"
			if c := cond(&p.Status, evalv1.TrialPodsReady); c.Reason != evalv1.ReasonPodsPending || c.Message != want {
				t.Errorf("PodsReady %s %q, want PodsPending %q", c.Reason, c.Message, want)
			}
		})
	}
}

// The attempt as it goes on: submitted when slot and environment are both
// Ready, ended when its environment is lost, fails or is not ready within
// the environment's own bound from the claim.
func TestPlanTerminalAttemptOnASlot(t *testing.T) {
	claimed := &driverView{AttemptID: "uid-1-1", State: stateClaimed}
	runningD := &driverView{AttemptID: "uid-1-1", State: stateRunning, Registered: true}
	for _, tc := range []struct {
		name     string
		slot     *corev1.Pod
		env      *corev1.Pod
		seen     bool // the environment pod was in the cache once
		created  bool
		driver   *driverView
		now      time.Duration
		ended    string
		message  string
		submit   bool
		create   bool
		podsRdy  string
		waitsFor string
	}{
		{name: "both ready: submitted with the environment's address", slot: slotPodIn("ready"), env: envPodIn(1, "ready"), seen: true, created: true,
			driver: claimed, submit: true, podsRdy: evalv1.ReasonPodsReady},
		{name: "environment pending", slot: slotPodIn("ready"), env: envPodIn(1, "pending"), seen: true, created: true,
			driver: claimed, podsRdy: evalv1.ReasonPodsPending, waitsFor: "t1-a1-environment"},
		{name: "slot pending, environment ready", slot: slotPodIn("pending"), env: envPodIn(1, "ready"), seen: true, created: true,
			driver: claimed, podsRdy: evalv1.ReasonPodsPending, waitsFor: slotName},
		{name: "environment create failed before: made again", slot: slotPodIn("ready"),
			driver: claimed, create: true, podsRdy: evalv1.ReasonPodsPending, waitsFor: "t1-a1-environment"},
		{name: "environment created, not cached yet: not made twice", slot: slotPodIn("ready"), created: true,
			driver: claimed, podsRdy: evalv1.ReasonPodsPending, waitsFor: "t1-a1-environment"},
		{name: "environment failed mid-trial: PodFailed", slot: slotPodIn("ready"), env: envPodIn(1, "failed"), seen: true, created: true,
			driver: runningD, ended: evalv1.ReasonPodFailed},
		{name: "environment gone mid-trial: PodLost", slot: slotPodIn("ready"), seen: true, created: true,
			driver: runningD, ended: evalv1.ReasonPodLost, message: "pod t1-a1-environment disappeared"},
		{name: "environment not ready in time: EnvironmentNotReady", slot: slotPodIn("ready"), env: envPodIn(1, "pending"), seen: true, created: true,
			driver: claimed, now: 5 * time.Minute, ended: evalv1.ReasonEnvironmentNotReady,
			message: "environment pod t1-a1-environment of attempt 1 not ready after 5m0s: Pending"},
		{name: "environment image not pulled in time: EnvironmentImageUnavailable", slot: slotPodIn("ready"), env: envPodIn(1, "pull"), seen: true, created: true,
			driver: claimed, now: 5 * time.Minute, ended: evalv1.ReasonEnvironmentImageUnavailable, message: "ImagePullBackOff (no such image)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := running(1)
			tr.Spec.Slots = &evalv1.SlotPolicy{Mode: evalv1.SlotsEnabled}
			tr.Status.Attempts[0].Slot = slotName
			w := &world{Now: t0.Add(tc.now), Trial: tr, Driver: tc.driver, AttemptTask: &resolvedTask{Desc: terminalTask("img")},
				Slots:       &slotWorld{Claim: claimView("uid-1-1", true, true, tc.driver.State == stateRunning), Pod: tc.slot},
				Pods:        map[int32]map[string]*corev1.Pod{},
				PodsCreated: map[string]bool{evalv1.RoleEnvironment: tc.created}, PodsSeen: map[string]bool{evalv1.RoleEnvironment: tc.seen}}
			if tc.env != nil {
				w.Pods[1] = map[string]*corev1.Pod{evalv1.RoleEnvironment: tc.env}
			}
			p := planTrial(w)
			a := p.Status.Attempts[0]
			if tc.ended != "" {
				if a.Outcome != evalv1.OutcomeInfraFailed || a.Reason != tc.ended || !strings.Contains(a.Message, tc.message) {
					t.Fatalf("attempt %s %s: %q, want InfraFailed %s ~%q", a.Outcome, a.Reason, a.Message, tc.ended, tc.message)
				}
				return
			}
			if a.Outcome != evalv1.OutcomeRunning || a.EnvironmentPod != "t1-a1-environment" {
				t.Fatalf("attempt %+v", a)
			}
			c := cond(&p.Status, evalv1.TrialPodsReady)
			if c.Reason != tc.podsRdy || (tc.waitsFor != "" && c.Message != "waiting for pod "+tc.waitsFor+" of attempt 1") {
				t.Errorf("PodsReady %s %q", c.Reason, c.Message)
			}
			if p.Submit != tc.submit || p.OnSlot != tc.submit {
				t.Errorf("submit %t on slot %t", p.Submit, p.OnSlot)
			}
			if tc.submit && (p.RunnerIP != "10.9.9.9" || p.EnvIP != "10.7.7.7" || p.SlotToken != "slot-tok") {
				t.Errorf("runner %s environment %s token %q", p.RunnerIP, p.EnvIP, p.SlotToken)
			}
			if got := slices.Equal(p.CreatePod, []string{evalv1.RoleEnvironment}) && p.SlotEnv != nil; got != tc.create || (!tc.create && len(p.CreatePod) != 0) {
				t.Errorf("pods %v fence %+v, want made: %t", p.CreatePod, p.SlotEnv, tc.create)
			}
		})
	}
}

// The environment's per-attempt policy admits the one slot pod running the
// attempt (by the name label it was made with), on the exec agent's port
// only, and selects only that attempt's environment pod.
func TestSlotEnvironmentPolicy(t *testing.T) {
	tr := testTrial()
	env := terminalTask("img").Environment
	np := SlotEnvironmentPolicy(tr, 1, "c-slot-abc", env)
	if np.Name != "t1-a1-environment" || metav1.GetControllerOf(np).UID != tr.UID {
		t.Errorf("name %s owner %+v", np.Name, metav1.GetControllerOf(np))
	}
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil {
		t.Fatal(err)
	}
	other := testTrial()
	other.Name = "t2"
	for _, tc := range []struct {
		what string
		lbls map[string]string
		want bool
	}{
		{"its attempt's environment", envPodIn(1, "").Labels, true},
		{"the next attempt's environment", envPodIn(2, "").Labels, false},
		{"another trial's environment", onSlotEnvironment(environmentPod(PodConfig{}, attemptRef{other, 1}, env), "c").Labels, false},
		{"the slot", testSlotPod(t).Labels, false},
	} {
		if got := sel.Matches(labels.Set(tc.lbls)); got != tc.want {
			t.Errorf("selects %s: %t, want %t", tc.what, got, tc.want)
		}
	}
	if len(np.Spec.Ingress) != 1 || len(np.Spec.Ingress[0].From) != 1 || len(np.Spec.Ingress[0].Ports) != 1 ||
		np.Spec.Ingress[0].Ports[0].Port.IntVal != EnvironmentPort {
		t.Fatalf("ingress %+v", np.Spec.Ingress)
	}
	peer := np.Spec.Ingress[0].From[0]
	if peer.NamespaceSelector != nil || peer.IPBlock != nil {
		t.Errorf("peer %+v reaches beyond the namespace's pods", peer)
	}
	from, err := metav1.LabelSelectorAsSelector(peer.PodSelector)
	if err != nil {
		t.Fatal(err)
	}
	otherSlot := slotPod(testSlotPod(t), "ns", "c-slot-xyz", "h", testCampaign)
	for _, tc := range []struct {
		what string
		lbls map[string]string
		want bool
	}{
		{"the slot running the attempt", testSlotPod(t).Labels, true},
		{"another slot of the campaign", otherSlot.Labels, false},
		{"the trial's own runner", podLabels(tr.Name, 1, evalv1.RoleRunner), false},
		{"a pod naming the slot without being one", map[string]string{evalv1.LabelManagedBy: evalv1.ManagedByValue, evalv1.LabelSlot: "c-slot-abc"}, false},
	} {
		if got := from.Matches(labels.Set(tc.lbls)); got != tc.want {
			t.Errorf("admits %s: %t, want %t", tc.what, got, tc.want)
		}
	}
	if len(np.Spec.Egress) != 0 || len(np.Spec.PolicyTypes) != 2 {
		t.Errorf("egress %+v types %v", np.Spec.Egress, np.Spec.PolicyTypes)
	}
	env.AllowInternet = true
	if np := SlotEnvironmentPolicy(tr, 1, "c-slot-abc", env); len(np.Spec.Egress) != 1 {
		t.Errorf("allow_internet: egress %+v", np.Spec.Egress)
	}
}

// A slot serves a terminal task as any other: its runner reads no exec
// agent token file (each trial's comes in RegisterTrial's metadata), so
// the task's environment does not change the slot's class.
func TestSlotOfATerminalTask(t *testing.T) {
	cfg := PodConfig{Image: "img"}
	plain, _ := slotClassOf(cfg, slotTrial(), resolvedShop().Desc, "c")
	class, tmpl := slotClassOf(cfg, slotTrial(), terminalTask("img"), "c")
	if class != plain {
		t.Errorf("a terminal task's class %v, the same Trial's plain task's %v", class, plain)
	}
	for _, a := range tmpl.Spec.Containers[0].Args {
		if strings.HasPrefix(a, "--environment-token") {
			t.Errorf("slot runner has %s", a)
		}
	}
	for _, v := range tmpl.Spec.Volumes {
		if v.Secret != nil && slices.ContainsFunc(v.Secret.Items, func(k corev1.KeyToPath) bool { return k.Key == EnvironmentTokenKey }) {
			t.Errorf("slot mounts %s", EnvironmentTokenKey)
		}
	}
}

// startAttempt of a terminal attempt on a slot: the attempt's Secret (the
// environment's token), then the environment's fence naming the slot, then
// the pod, labelled with its Campaign. A fence the API server refuses
// leaves no pod behind and says why in a Warning.
func TestStartAttemptMakesTheSlotEnvironment(t *testing.T) {
	for _, refuse := range []bool{false, true} {
		name := map[bool]string{false: "made in order", true: "fence refused: no pod"}[refuse]
		t.Run(name, func(t *testing.T) {
			refused := errors.New(`networkpolicies is forbidden: quota`)
			var order []string
			c := fake.NewClientBuilder().WithScheme(slotScheme(t)).WithInterceptorFuncs(interceptor.Funcs{
				Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					kind := strings.TrimPrefix(fmt.Sprintf("%T", obj), "*v1.")
					if _, ok := obj.(*networkingv1.NetworkPolicy); ok && refuse {
						return refused
					}
					order = append(order, kind+" "+obj.GetName())
					return cl.Create(ctx, obj, opts...)
				},
			}).Build()
			rec := events.NewFakeRecorder(10)
			pool := NewPool(2, nil, logr.Discard())
			r := &TrialReconciler{Client: c, APIReader: c, Recorder: rec, Pool: pool, Pods: PodConfig{Image: "img"}, Log: logr.Discard()}
			tr := running(1)
			tr.Spec.Slots = &evalv1.SlotPolicy{Mode: evalv1.SlotsEnabled}
			a := &tr.Status.Attempts[0]
			a.Slot = slotName
			key := client.ObjectKeyFromObject(tr)
			pool.Claim(key, a.ID, &attemptInput{Trial: tr, Number: 1, Task: &resolvedTask{Desc: terminalTask("img")}})
			p := &plan{CreatePod: []string{evalv1.RoleEnvironment}, SlotEnv: &slotEnvironment{Slot: slotName, Campaign: "c"}}
			createErrs, err := r.startAttempt(context.Background(), tr, a, p)
			if refuse {
				if !errors.Is(err, refused) {
					t.Fatalf("startAttempt = %v, %v", createErrs, err)
				}
				if slices.ContainsFunc(order, func(s string) bool { return strings.HasPrefix(s, "Pod ") }) {
					t.Errorf("created %v without the fence", order)
				}
				select {
				case e := <-rec.Events:
					if !strings.Contains(e, "Warning "+evalv1.ReasonNetworkPolicyUnavailable) || !strings.Contains(e, "t1-a1-environment") {
						t.Errorf("event %q", e)
					}
				default:
					t.Error("no event")
				}
				return
			}
			if err != nil || len(createErrs) != 0 {
				t.Fatalf("startAttempt = %v, %v", createErrs, err)
			}
			want := []string{"Secret " + AuthSecretName(tr, 1), "NetworkPolicy t1-a1-environment", "Pod t1-a1-environment"}
			if !slices.Equal(order, want) {
				t.Fatalf("created %v, want %v", order, want)
			}
			pod := &corev1.Pod{}
			if err := c.Get(context.Background(), types.NamespacedName{Namespace: tr.Namespace, Name: "t1-a1-environment"}, pod); err != nil {
				t.Fatal(err)
			}
			if pod.Labels[evalv1.LabelCampaign] != "c" || pod.Labels[evalv1.LabelAttempt] != "1" {
				t.Errorf("labels %v", pod.Labels)
			}
			np := &networkingv1.NetworkPolicy{}
			if err := c.Get(context.Background(), types.NamespacedName{Namespace: tr.Namespace, Name: "t1-a1-environment"}, np); err != nil {
				t.Fatal(err)
			}
			if got := np.Spec.Ingress[0].From[0].PodSelector.MatchLabels[evalv1.LabelSlot]; got != slotName {
				t.Errorf("the fence admits slot %q", got)
			}
			if created, _ := pool.PodBookkeeping(key, a.ID); !created[evalv1.RoleEnvironment] {
				t.Error("the environment pod is not recorded as created")
			}
		})
	}
}

// A slot whose attempt ended because its own environment never came up,
// before any driver ran, goes back unused: the slot's runner never saw the
// trial. Driven, or ended for a reason of the slot, it is replaced as before.
func TestReleaseAfterAnEnvironmentFault(t *testing.T) {
	for _, tc := range []struct {
		name   string
		reason string
		driven bool
		kind   releaseKind
	}{
		{"environment not ready, never driven", evalv1.ReasonEnvironmentNotReady, false, releaseUnused},
		{"environment image unavailable, never driven", evalv1.ReasonEnvironmentImageUnavailable, false, releaseUnused},
		{"environment not ready, driven", evalv1.ReasonEnvironmentNotReady, true, releaseDirty},
		{"the slot not ready", evalv1.ReasonPodsNotReady, false, releaseDirty},
		{"a pod lost (the slot's or the environment's)", evalv1.ReasonPodLost, false, releaseDirty},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := running(1)
			tr.Spec.Slots = &evalv1.SlotPolicy{Mode: evalv1.SlotsEnabled}
			a := &tr.Status.Attempts[0]
			a.Slot, a.Outcome, a.Reason, a.EndTime = slotName, evalv1.OutcomeInfraFailed, tc.reason, mt(time.Second)
			tr.Status.Phase = evalv1.PhaseInfraFailed
			p := planTrial(&world{Now: t0.Add(2 * time.Second), Trial: tr, AttemptTask: &resolvedTask{Desc: terminalTask("img")},
				Slots: &slotWorld{Claim: claimView("uid-1-1", true, true, tc.driven), Pod: slotPodIn("ready")}})
			if r := p.SlotRelease; r == nil || r.Kind != tc.kind {
				t.Fatalf("release %+v, want kind %d", r, tc.kind)
			}
		})
	}
}
