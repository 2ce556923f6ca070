package controllers

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// TestNetworkPolicyReachability evaluates the policy the way a CNI does and
// checks who may reach which pod on which port.
func TestNetworkPolicyReachability(t *testing.T) {
	tr := testTrial()
	np := NetworkPolicy(tr, DefaultManagerPeer("tolokaforge-system"))

	runner := runnerPod(PodConfig{Image: "i"}, attemptRef{tr, 1}, nil)
	db := dbServicePod(PodConfig{Image: "i"}, attemptRef{tr, 1})
	otherTrial := testTrial()
	otherTrial.Name, otherTrial.UID = "t2", "uid-2"
	otherRunner := runnerPod(PodConfig{Image: "i"}, attemptRef{otherTrial, 1}, nil)

	type peer struct {
		ns     string
		labels map[string]string
	}
	manager := peer{"tolokaforge-system", map[string]string{evalv1.LabelName: evalv1.AppName, evalv1.LabelComponent: evalv1.ComponentManager}}
	managerElsewhere := peer{"default", manager.labels}
	for _, tc := range []struct {
		name string
		from peer
		to   *corev1.Pod
		port int32
		want bool
	}{
		{"runner to its dbservice", peer{"ns", runner.Labels}, db, DBServicePort, true},
		{"manager to runner", manager, runner, RunnerPort, true},
		{"another trial's runner to this dbservice", peer{"ns", otherRunner.Labels}, db, DBServicePort, false},
		{"dbservice to runner", peer{"ns", db.Labels}, runner, RunnerPort, false},
		{"manager to dbservice http", manager, db, DBServicePort, false},
		{"same labels in another namespace to runner", managerElsewhere, runner, RunnerPort, false},
		{"any pod to runner", peer{"ns", map[string]string{"app": "x"}}, runner, RunnerPort, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := admits(t, np, tc.to, tc.from.ns, tc.from.labels, tc.port); got != tc.want {
				t.Errorf("admitted = %v, want %v", got, tc.want)
			}
		})
	}
	if !reflect.DeepEqual(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}) {
		t.Errorf("policy types = %v", np.Spec.PolicyTypes)
	}
	if o := np.OwnerReferences; len(o) != 1 || o[0].UID != "uid-1" {
		t.Errorf("owner = %+v", o)
	}
	if otherSel, _ := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector); otherSel.Matches(labels.Set(otherRunner.Labels)) {
		t.Error("policy selects another trial's pods")
	}
}

// admits reports whether np lets a pod (namespace ns, labels l) reach pod
// `to` on port. The namespace's only label is kubernetes.io/metadata.name.
func admits(t *testing.T, np *networkingv1.NetworkPolicy, to *corev1.Pod, ns string, l map[string]string, port int32) bool {
	t.Helper()
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil {
		t.Fatal(err)
	}
	if !sel.Matches(labels.Set(to.Labels)) {
		return true // not isolated by this policy
	}
	for _, rule := range np.Spec.Ingress {
		portOK := len(rule.Ports) == 0
		for _, p := range rule.Ports {
			if p.Port != nil && p.Port.IntVal == port {
				portOK = true
			}
		}
		if !portOK {
			continue
		}
		for _, from := range rule.From {
			nsOK := ns == np.Namespace
			if from.NamespaceSelector != nil {
				s, err := metav1.LabelSelectorAsSelector(from.NamespaceSelector)
				if err != nil {
					t.Fatal(err)
				}
				nsOK = s.Matches(labels.Set{corev1.LabelMetadataName: ns})
			}
			podOK := true
			if from.PodSelector != nil {
				s, err := metav1.LabelSelectorAsSelector(from.PodSelector)
				if err != nil {
					t.Fatal(err)
				}
				podOK = s.Matches(labels.Set(l))
			}
			if nsOK && podOK {
				return true
			}
		}
	}
	return false
}

func TestDefaultManagerPeerMatchesManagerDeploymentLabels(t *testing.T) {
	p := DefaultManagerPeer("x")
	want := map[string]string{"app.kubernetes.io/name": "tolokaforge", "app.kubernetes.io/component": "manager"}
	if !reflect.DeepEqual(p.Labels, want) || p.Namespace != "x" {
		t.Errorf("peer = %+v", p)
	}
}
