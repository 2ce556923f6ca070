package kueue

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueuev1 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers"
)

func trial(name string) *evalv1.Trial {
	return &evalv1.Trial{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: "uid-1",
		Labels: map[string]string{evalv1.LabelQueueName: "team-a"}}}
}

func TestWorkloadName(t *testing.T) {
	long := strings.Repeat("x", 80)
	for _, tc := range []struct{ name, want string }{
		{"t1", "trial-t1-"},
		{long, "trial-" + long[:63-6-6]},
	} {
		got := WorkloadName(trial(tc.name))
		if !strings.HasPrefix(got, tc.want) || len(got) > 63 {
			t.Errorf("WorkloadName(%q) = %q (%d chars), want prefix %q within 63", tc.name, got, len(got), tc.want)
		}
		other := trial(tc.name)
		other.UID = "uid-2"
		if WorkloadName(other) == got {
			t.Errorf("a re-created Trial %q gets the same workload name %q", tc.name, got)
		}
	}
}

func TestNewWorkload(t *testing.T) {
	tr := trial("t1")
	tr.Spec.Runner.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
	wpc := &kueuev1.WorkloadPriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000}
	for _, tc := range []struct {
		name     string
		wpc      *kueuev1.WorkloadPriorityClass
		priority int32
	}{{"no priority class", nil, 0}, {"priority class", wpc, 1000}} {
		t.Run(tc.name, func(t *testing.T) {
			wl := NewWorkload(tr, tc.wpc)
			if wl.Spec.QueueName != "team-a" || wl.Namespace != "ns" || wl.Name != WorkloadName(tr) {
				t.Errorf("workload %s/%s queue %q", wl.Namespace, wl.Name, wl.Spec.QueueName)
			}
			ref := metav1.GetControllerOf(wl)
			if ref == nil || ref.Kind != "Trial" || ref.Name != "t1" || ref.UID != "uid-1" || ref.APIVersion != evalv1.GroupVersion.String() {
				t.Errorf("controller = %+v", ref)
			}
			res := controllers.AttemptResources(tr)
			if len(wl.Spec.PodSets) != 2 {
				t.Fatalf("pod sets = %+v", wl.Spec.PodSets)
			}
			for i, role := range []string{evalv1.RoleRunner, evalv1.RoleDBService} {
				ps := wl.Spec.PodSets[i]
				got := ps.Template.Spec.Containers[0].Resources.Requests
				want := res[role].Requests
				if string(ps.Name) != role || ps.Count != 1 || !got.Cpu().Equal(*want.Cpu()) || !got.Memory().Equal(*want.Memory()) {
					t.Errorf("pod set %d = %s x%d requests %v, want %s x1 %v", i, ps.Name, ps.Count, got, role, want)
				}
			}
			if got := wl.Spec.PodSets[0].Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; got.String() != "1" {
				t.Errorf("runner cpu request = %s, want the Trial's override 1", got.String())
			}
			gotPrio := int32(0)
			if wl.Spec.Priority != nil {
				gotPrio = *wl.Spec.Priority
			}
			if gotPrio != tc.priority || (tc.wpc != nil) != (wl.Spec.PriorityClassRef != nil) {
				t.Errorf("priority %d ref %+v, want %d", gotPrio, wl.Spec.PriorityClassRef, tc.priority)
			}
		})
	}
}

func TestStateOf(t *testing.T) {
	cond := func(typ string, st metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: st, Reason: reason, Message: msg}
	}
	for _, tc := range []struct {
		name string
		wl   kueuev1.WorkloadStatus
		want controllers.QueueState
	}{
		{"pending", kueuev1.WorkloadStatus{Conditions: []metav1.Condition{
			cond(kueuev1.WorkloadQuotaReserved, metav1.ConditionFalse, "Pending", "insufficient quota")}},
			controllers.QueueState{Workload: "wl", Pending: "insufficient quota"}},
		{"admitted", kueuev1.WorkloadStatus{Admission: &kueuev1.Admission{ClusterQueue: "cq"}, Conditions: []metav1.Condition{
			cond(kueuev1.WorkloadQuotaReserved, metav1.ConditionTrue, "QuotaReserved", ""),
			cond(kueuev1.WorkloadAdmitted, metav1.ConditionTrue, "Admitted", "")}},
			controllers.QueueState{Workload: "wl", Admitted: true, ClusterQueue: "cq"}},
		{"preempted", kueuev1.WorkloadStatus{Admission: &kueuev1.Admission{ClusterQueue: "cq"}, Conditions: []metav1.Condition{
			cond(kueuev1.WorkloadQuotaReserved, metav1.ConditionTrue, "QuotaReserved", ""),
			cond(kueuev1.WorkloadEvicted, metav1.ConditionTrue, "Preempted", "Preempted to accommodate a workload")}},
			controllers.QueueState{Workload: "wl", EvictedReason: "Preempted", EvictedMessage: "Preempted to accommodate a workload"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wl := &kueuev1.Workload{ObjectMeta: metav1.ObjectMeta{Name: "wl"}, Status: tc.wl}
			if got := stateOf(wl); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("stateOf = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// A terminal task's Trial reserves its environment pod too: the Task's
// sizes (or Harbor's defaults), as a third pod set; other Trials two.
func TestWorkloadReservesTheEnvironment(t *testing.T) {
	withEnv := &evalv1.Task{ObjectMeta: metav1.ObjectMeta{Name: "term", Namespace: "ns"}, Spec: evalv1.TaskSpec{
		Description: apiextensionsv1.JSON{Raw: []byte(`{"task_id":"term","environment":{"image":"i","cpus":0.5,"memory_mb":256}}`)}}}
	plain := &evalv1.Task{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "ns"}, Spec: evalv1.TaskSpec{
		Description: apiextensionsv1.JSON{Raw: []byte(`{"task_id":"shop"}`)}}}
	i := &Integration{Client: fakeClient(t, withEnv, plain), Log: logr.Discard()}
	for _, tc := range []struct {
		task string
		sets []string
		cpu  string
	}{
		{"term", []string{evalv1.RoleRunner, evalv1.RoleDBService, evalv1.RoleEnvironment}, "500m"},
		{"shop", []string{evalv1.RoleRunner, evalv1.RoleDBService}, ""},
		{"missing", []string{evalv1.RoleRunner, evalv1.RoleDBService}, ""},
	} {
		tr := trial("t-" + tc.task)
		tr.Spec.TaskRef = &evalv1.TaskReference{Name: tc.task}
		wl := NewWorkload(tr, nil)
		if env := i.trialEnvironment(context.Background(), tr); env != nil {
			WithEnvironment(wl, env)
		}
		var names []string
		for _, ps := range wl.Spec.PodSets {
			names = append(names, string(ps.Name))
		}
		if !slices.Equal(names, tc.sets) {
			t.Errorf("%s: pod sets %v, want %v", tc.task, names, tc.sets)
		}
		if tc.cpu != "" {
			res := wl.Spec.PodSets[2].Template.Spec.Containers[0].Resources.Requests
			if cpu, mem, disk := res[corev1.ResourceCPU], res[corev1.ResourceMemory], res[corev1.ResourceEphemeralStorage]; cpu.String() != tc.cpu || mem.String() != "256Mi" || disk.String() != "10Gi" {
				t.Errorf("%s: environment requests cpu %s memory %s storage %s", tc.task, cpu.String(), mem.String(), disk.String())
			}
		}
	}
}
