package kueue

import (
	"context"
	"slices"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	kueuev1 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers"
)

// slottedTrial is a Campaign's Trial on warm slots in queue team-a.
func slottedTrial(name string) *evalv1.Trial {
	tr := trial(name)
	tr.Spec.Slots = &evalv1.SlotPolicy{Mode: evalv1.SlotsEnabled}
	tr.OwnerReferences = []metav1.OwnerReference{{APIVersion: evalv1.GroupVersion.String(), Kind: "Campaign",
		Name: "c", UID: "cuid", Controller: ptr.To(true)}}
	return tr
}

// A Trial on warm slots reserves the one slot pod it runs on (so a quota
// on pods counts one per Trial, as the slots it may have), with the requests
// of its runner and DB service together; one whose task has an environment
// keeps per-attempt pods and reserves them.
func TestWorkloadOfASlottedTrial(t *testing.T) {
	withEnv := &evalv1.Task{ObjectMeta: metav1.ObjectMeta{Name: "term", Namespace: "ns"}, Spec: evalv1.TaskSpec{
		Description: apiextensionsv1.JSON{Raw: []byte(`{"task_id":"term","environment":{"image":"i","cpus":0.5,"memory_mb":256}}`)}}}
	plain := &evalv1.Task{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "ns"}, Spec: evalv1.TaskSpec{
		Description: apiextensionsv1.JSON{Raw: []byte(`{"task_id":"shop"}`)}}}
	i := &Integration{Client: fakeClient(t, withEnv, plain), Log: logr.Discard()}
	for _, tc := range []struct {
		task string
		sets []string
	}{
		{"shop", []string{controllers.SlotPodSet}},
		{"term", []string{evalv1.RoleRunner, evalv1.RoleDBService, evalv1.RoleEnvironment}},
	} {
		tr := slottedTrial("t-" + tc.task)
		tr.Spec.TaskRef = &evalv1.TaskReference{Name: tc.task}
		tr.Spec.Runner.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
		wl := newWorkload(tr, nil, i.trialEnvironment(context.Background(), tr))
		var names []string
		for _, ps := range wl.Spec.PodSets {
			names = append(names, string(ps.Name))
		}
		if !slices.Equal(names, tc.sets) {
			t.Fatalf("%s: pod sets %v, want %v", tc.task, names, tc.sets)
		}
		if tc.task != "shop" {
			continue
		}
		ps := wl.Spec.PodSets[0]
		res := controllers.AttemptResources(tr)
		if ps.Count != 1 || len(ps.Template.Spec.Containers) != 2 {
			t.Fatalf("slot pod set x%d containers %+v", ps.Count, ps.Template.Spec.Containers)
		}
		got := podSetRequests(&ps)
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
			want := res[evalv1.RoleRunner].Requests[name]
			want.Add(res[evalv1.RoleDBService].Requests[name])
			if q := got[name]; !q.Equal(want) {
				t.Errorf("slot pod set requests %s %s, want the runner's and DB service's %s", name, q.String(), want.String())
			}
		}
		if s := stateOf(wl); !s.SlotPodSet {
			t.Error("stateOf does not see the slot pod set")
		}
		// A prebuilt Workload of this shape is in sync with the Trial.
		if why := outOfSync(tr, wl); why != "" {
			t.Errorf("outOfSync: %s", why)
		}
	}
	if s := stateOf(NewWorkload(trial("bare"), nil)); s.SlotPodSet {
		t.Error("a Trial with pods of its own: its Workload reserves a slot pod")
	}
}

// The Integration creates that Workload itself.
func TestReconcileCreatesASlotWorkload(t *testing.T) {
	tr := slottedTrial("t1")
	i := &Integration{Client: fakeClient(t, tr), Log: logr.Discard()}
	if _, err := i.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "t1"}}); err != nil {
		t.Fatal(err)
	}
	wl := &kueuev1.Workload{}
	if err := i.Client.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: WorkloadName(tr)}, wl); err != nil {
		t.Fatal(err)
	}
	if len(wl.Spec.PodSets) != 1 || string(wl.Spec.PodSets[0].Name) != controllers.SlotPodSet {
		t.Errorf("pod sets %+v", wl.Spec.PodSets)
	}
}
