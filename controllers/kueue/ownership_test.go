package kueue

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	kueuev1 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers"
)

func fakeClient(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	sch := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, evalv1.AddToScheme, kueuev1.AddToScheme} {
		if err := add(sch); err != nil {
			t.Fatal(err)
		}
	}
	return fake.NewClientBuilder().WithScheme(sch).WithObjects(objs...).
		WithStatusSubresource(&evalv1.Trial{}, &kueuev1.Workload{}).Build()
}

// admittedWorkload is owner's Workload as Kueue leaves it once admitted.
func admittedWorkload(owner *evalv1.Trial) *kueuev1.Workload {
	wl := NewWorkload(owner, nil)
	wl.Status.Admission = &kueuev1.Admission{ClusterQueue: "cq"}
	wl.Status.Conditions = []metav1.Condition{
		{Type: kueuev1.WorkloadQuotaReserved, Status: metav1.ConditionTrue, Reason: "QuotaReserved"},
		{Type: kueuev1.WorkloadAdmitted, Status: metav1.ConditionTrue, Reason: "Admitted"},
	}
	return wl
}

// prebuilt is a Trial that names workload as its prebuilt Workload.
func prebuilt(name string, uid types.UID, workload string) *evalv1.Trial {
	tr := trial(name)
	tr.UID = uid
	tr.Labels[PrebuiltWorkloadLabel] = workload
	return tr
}

// A label is anyone's to write: a Trial that names another Trial's admitted
// Workload as its prebuilt one neither runs under it nor, once it ends,
// finishes it.
func TestPrebuiltLabelCannotTakeAnotherTrialsWorkload(t *testing.T) {
	ctx := context.Background()
	victim := trial("victim")
	victim.UID = "uid-victim"
	wl := admittedWorkload(victim)
	hijacker := prebuilt("hijacker", "uid-hijacker", wl.Name)

	for _, tc := range []struct {
		name      string
		completed bool
	}{{"running", false}, {"completed", true}} {
		t.Run(tc.name, func(t *testing.T) {
			h := hijacker.DeepCopy()
			if tc.completed {
				h.Status.Phase = evalv1.PhaseInvalid
				h.Status.Conditions = []metav1.Condition{{Type: evalv1.TrialCompleted, Status: metav1.ConditionTrue, Reason: "Invalid"}}
			}
			c := fakeClient(t, victim.DeepCopy(), h, wl.DeepCopy())
			i := &Integration{Client: c, Log: logr.Discard()}

			st, err := i.State(ctx, h)
			if err != nil {
				t.Fatal(err)
			}
			if st.Admitted {
				t.Fatalf("hijacker sees the victim's admission: %+v", st)
			}
			if want := "workload " + wl.Name + " belongs to Trial victim, not to this Trial"; st.Pending != want {
				t.Errorf("pending = %q, want %q", st.Pending, want)
			}
			if _, err := i.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(h)}); err != nil {
				t.Fatal(err)
			}
			got := &kueuev1.Workload{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(wl), got); err != nil {
				t.Fatal(err)
			}
			if finished(got) || !admitted(got) {
				t.Errorf("the victim's workload changed: %+v", got.Status.Conditions)
			}
			if ref := metav1.GetControllerOf(got); ref == nil || ref.UID != victim.UID || len(got.OwnerReferences) != 1 {
				t.Errorf("owner references = %+v, want the victim's alone", got.OwnerReferences)
			}
			// The victim still sees its own admission.
			if st, err := i.State(ctx, victim); err != nil || !st.Admitted {
				t.Errorf("victim's state = %+v, %v", st, err)
			}
		})
	}
}

// A prebuilt Workload (MultiKueue's, in a worker cluster) is claimed by the
// first Trial that names it and whose requests it covers; a second claimant
// and one whose pods ask for more are refused.
func TestPrebuiltWorkloadClaim(t *testing.T) {
	ctx := context.Background()
	owner := trial("origin")
	base := admittedWorkload(owner)
	base.OwnerReferences = nil // as MultiKueue creates it in the worker
	base.Name = "prebuilt-1"

	bigger := prebuilt("greedy", "uid-greedy", base.Name)
	bigger.Spec.Runner.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}}

	for _, tc := range []struct {
		name      string
		claimant  *evalv1.Trial
		claimed   bool
		pendingRe string
	}{
		{"matching requests", prebuilt("copy", "uid-copy", base.Name), true, ""},
		{"asks for more", bigger, false, "workload prebuilt-1 is not yet claimed by this Trial"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fakeClient(t, tc.claimant.DeepCopy(), base.DeepCopy())
			i := &Integration{Client: c, Log: logr.Discard()}
			if _, err := i.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(tc.claimant)}); err != nil {
				t.Fatal(err)
			}
			got := &kueuev1.Workload{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(base), got); err != nil {
				t.Fatal(err)
			}
			ref := metav1.GetControllerOf(got)
			if tc.claimed != (ref != nil && ref.UID == tc.claimant.UID) {
				t.Fatalf("claimed = %v, want %v (owners %+v)", ref != nil, tc.claimed, got.OwnerReferences)
			}
			st, err := i.State(ctx, tc.claimant)
			if err != nil {
				t.Fatal(err)
			}
			if st.Admitted != tc.claimed || st.Pending != tc.pendingRe {
				t.Errorf("state = %+v, want admitted %v pending %q", st, tc.claimed, tc.pendingRe)
			}
			if !tc.claimed {
				return
			}
			// A second Trial naming the same Workload finds it taken.
			second := prebuilt("second", "uid-second", base.Name)
			if err := c.Create(ctx, second); err != nil {
				t.Fatal(err)
			}
			if _, err := i.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(second)}); err != nil {
				t.Fatal(err)
			}
			st, err = i.State(ctx, second)
			if err != nil || st.Admitted || !strings.Contains(st.Pending, "belongs to Trial copy") {
				t.Errorf("second claimant's state = %+v, %v", st, err)
			}
		})
	}
}

func TestOutOfSync(t *testing.T) {
	tr := trial("t1")
	cpu := func(q string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
	}
	for _, tc := range []struct {
		name string
		edit func(*kueuev1.Workload)
		want string
	}{
		{"same", func(*kueuev1.Workload) {}, ""},
		{"more reserved than asked", func(w *kueuev1.Workload) {
			w.Spec.PodSets[0].Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("4")
		}, ""},
		{"one pod set", func(w *kueuev1.Workload) { w.Spec.PodSets = w.Spec.PodSets[:1] },
			"prebuilt workload wl has 1 pod sets, the Trial's attempt runs 2 pods"},
		{"renamed", func(w *kueuev1.Workload) { w.Spec.PodSets[1].Name = "main" },
			"prebuilt workload wl: pod set 1 is main x1, the Trial's is dbservice x1"},
		{"two runners", func(w *kueuev1.Workload) { w.Spec.PodSets[0].Count = 2 },
			"prebuilt workload wl: pod set 0 is runner x2, the Trial's is runner x1"},
		{"less cpu", func(w *kueuev1.Workload) {
			w.Spec.PodSets[0].Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = cpu("1m")[corev1.ResourceCPU]
		}, "prebuilt workload wl: pod set runner reserves 1m cpu, the Trial's runner pod requests "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wl := NewWorkload(tr, nil)
			wl.Name = "wl"
			tc.edit(wl)
			got := outOfSync(tr, wl)
			if tc.want == "" && got != "" || tc.want != "" && !strings.HasPrefix(got, tc.want) {
				t.Errorf("outOfSync = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestPlacement: an admitted Workload's pods go where its flavors' nodes are,
// and where its admission checks' pod set updates say.
func TestPlacement(t *testing.T) {
	ctx := context.Background()
	spotTol := corev1.Toleration{Key: "spot", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	spot := &kueuev1.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: "spot"},
		Spec: kueuev1.ResourceFlavorSpec{NodeLabels: map[string]string{"pool": "spot"}, Tolerations: []corev1.Toleration{spotTol}}}
	plain := &kueuev1.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: "plain"}}
	tr := trial("t1")
	wl := admittedWorkload(tr)
	wl.Status.Admission.PodSetAssignments = []kueuev1.PodSetAssignment{
		{Name: evalv1.RoleRunner, Flavors: map[corev1.ResourceName]kueuev1.ResourceFlavorReference{corev1.ResourceCPU: "spot", corev1.ResourceMemory: "spot"}},
		{Name: evalv1.RoleDBService, Flavors: map[corev1.ResourceName]kueuev1.ResourceFlavorReference{corev1.ResourceCPU: "plain"}},
	}
	wl.Status.AdmissionChecks = []kueuev1.AdmissionCheckState{{Name: "prov", State: kueuev1.CheckStateReady,
		PodSetUpdates: []kueuev1.PodSetUpdate{{Name: evalv1.RoleDBService, NodeSelector: map[string]string{"provisioned": "yes"}}}}}

	c := fakeClient(t, tr, wl, spot, plain)
	i := &Integration{Client: c, Log: logr.Discard()}
	st, err := i.State(ctx, tr)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]controllers.Placement{
		evalv1.RoleRunner:    {NodeSelector: map[string]string{"pool": "spot"}, Tolerations: []corev1.Toleration{spotTol}},
		evalv1.RoleDBService: {NodeSelector: map[string]string{"provisioned": "yes"}},
	}
	if !reflect.DeepEqual(st.Placement, want) {
		t.Errorf("placement = %+v, want %+v", st.Placement, want)
	}

	// A flavor deleted under an admission: an error naming it, not pods
	// placed anywhere.
	c = fakeClient(t, tr, wl, plain)
	i = &Integration{Client: c, Log: logr.Discard()}
	if _, err := i.State(ctx, tr); err == nil || !strings.Contains(err.Error(), "ResourceFlavor spot of pod set runner") {
		t.Errorf("State with a missing flavor: %v", err)
	}
}

// TestMissingPriorityClass: a Trial whose priority-class label names no
// WorkloadPriorityClass gets no Workload, says why, and gets one once the
// class exists.
func TestMissingPriorityClass(t *testing.T) {
	ctx := context.Background()
	tr := trial("t1")
	tr.Labels[evalv1.LabelPriorityClass] = "urgent"
	c := fakeClient(t, tr)
	i := &Integration{Client: c, Log: logr.Discard()}
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(tr)}
	if _, err := i.Reconcile(ctx, req); err != nil {
		t.Fatalf("reconcile returned %v: a missing class is waited for, not retried as an error", err)
	}
	st, err := i.State(ctx, tr)
	if err != nil {
		t.Fatal(err)
	}
	if want := `WorkloadPriorityClass "urgent" (label kueue.x-k8s.io/priority-class) does not exist`; st.Pending != want || st.Workload != "" {
		t.Errorf("state = %+v, want pending %q", st, want)
	}
	wpc := &kueuev1.WorkloadPriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "urgent"}, Value: 500}
	if err := c.Create(ctx, wpc); err != nil {
		t.Fatal(err)
	}
	if got := i.classWatch(ctx, wpc); len(got) != 1 || got[0] != req {
		t.Errorf("classWatch = %v, want %v", got, req)
	}
	if _, err := i.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	wl := &kueuev1.Workload{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: tr.Namespace, Name: WorkloadName(tr)}, wl); err != nil {
		t.Fatal(err)
	}
	if wl.Spec.Priority == nil || *wl.Spec.Priority != 500 {
		t.Errorf("workload priority = %v, want 500", wl.Spec.Priority)
	}
}

// TestPodsReadyCondition: the Workload's PodsReady follows the running
// attempt's pods, so Kueue's waitForPodsReady never evicts a Trial whose
// pods are up; nothing is written while nothing changes.
func TestPodsReadyCondition(t *testing.T) {
	runningTrial := func(podsReady bool) *evalv1.Trial {
		tr := trial("t1")
		tr.Status.Attempts = []evalv1.AttemptStatus{{Number: 1, Outcome: evalv1.OutcomeRunning}}
		st := metav1.ConditionFalse
		if podsReady {
			st = metav1.ConditionTrue
		}
		tr.Status.Conditions = []metav1.Condition{{Type: evalv1.TrialPodsReady, Status: st, Reason: "x"}}
		return tr
	}
	ended := runningTrial(false)
	ended.Status.Attempts[0].Outcome = evalv1.OutcomeInfraFailed
	podsReady := func(st metav1.ConditionStatus, reason string) []metav1.Condition {
		return []metav1.Condition{{Type: kueuev1.WorkloadPodsReady, Status: st, Reason: reason}}
	}
	for _, tc := range []struct {
		name       string
		trial      *evalv1.Trial
		have       []metav1.Condition
		wantWrite  bool
		wantStatus metav1.ConditionStatus
		wantReason string
	}{
		{"pods starting: nothing written", runningTrial(false), nil, false, "", ""},
		{"pods ready: Started", runningTrial(true), nil, true, metav1.ConditionTrue, kueuev1.WorkloadStarted},
		{"already Started: nothing written", runningTrial(true), podsReady(metav1.ConditionTrue, kueuev1.WorkloadStarted), false, "", ""},
		{"attempt ended after ready: WaitForRecovery", ended, podsReady(metav1.ConditionTrue, kueuev1.WorkloadStarted), true, metav1.ConditionFalse, kueuev1.WorkloadWaitForRecovery},
		{"retry ready: Recovered", runningTrial(true), podsReady(metav1.ConditionFalse, kueuev1.WorkloadWaitForRecovery), true, metav1.ConditionTrue, kueuev1.WorkloadRecovered},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wl := admittedWorkload(tc.trial)
			wl.Status.Conditions = append(wl.Status.Conditions, tc.have...)
			c, write := podsReadyCondition(tc.trial, wl)
			if write != tc.wantWrite || c.Status != tc.wantStatus || c.Reason != tc.wantReason {
				t.Errorf("podsReadyCondition = %s/%s write %v, want %s/%s write %v", c.Status, c.Reason, write, tc.wantStatus, tc.wantReason, tc.wantWrite)
			}
		})
	}
}
