package controllers

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// ManagerPeer says where the manager's pods are, for the network policy.
type ManagerPeer struct {
	// Namespace of the manager's pods (the Deployment's namespace).
	Namespace string
	// Labels of the manager's pods.
	Labels map[string]string
}

// DefaultManagerPeer matches config/manager's Deployment.
func DefaultManagerPeer(namespace string) ManagerPeer {
	return ManagerPeer{
		Namespace: namespace,
		Labels:    map[string]string{evalv1.LabelName: evalv1.AppName, evalv1.LabelComponent: evalv1.ComponentManager},
	}
}

// NetworkPolicyName is the name of a trial's policy.
func NetworkPolicyName(trial string) string {
	const suffix = "-isolation"
	return shortName(trial, 253-len(suffix)) + suffix
}

// NetworkPolicy isolates every pod of one trial: its dbservice accepts only
// the trial's runner, its runner accepts only the manager.
//
// One policy per trial rather than one per role or attempt keeps it to a
// single write per trial. Ingress rules are a union over the selected pods, so
// the runner rule also admits the manager on the dbservice pod's port 50051
// and the dbservice rule admits the trial's runner on the runner pod's port
// 8000; neither pod listens on the other's port, so what can actually be
// reached is exactly the two intended paths. Kubelet probes are exempt from
// network policies, so readiness keeps working.
func NetworkPolicy(t *evalv1.Trial, mgr ManagerPeer) *networkingv1.NetworkPolicy {
	trial := evalv1.LabelValue(t.Name)
	tcp := corev1.ProtocolTCP
	managerPeer := networkingv1.NetworkPolicyPeer{
		PodSelector: &metav1.LabelSelector{MatchLabels: copyLabels(mgr.Labels)},
	}
	if mgr.Namespace != "" {
		managerPeer.NamespaceSelector = &metav1.LabelSelector{
			MatchLabels: map[string]string{corev1.LabelMetadataName: mgr.Namespace},
		}
	}
	return &networkingv1.NetworkPolicy{
		TypeMeta: metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      NetworkPolicyName(t.Name),
			Namespace: t.Namespace,
			Labels: map[string]string{
				evalv1.LabelName:      evalv1.AppName,
				evalv1.LabelManagedBy: evalv1.ManagedByValue,
				evalv1.LabelInstance:  trial,
				evalv1.LabelTrial:     trial,
			},
			OwnerReferences: []metav1.OwnerReference{ownerRef(t)},
		},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{
				evalv1.LabelManagedBy: evalv1.ManagedByValue,
				evalv1.LabelTrial:     trial,
			}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{
				{
					From: []networkingv1.NetworkPolicyPeer{{
						PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
							evalv1.LabelManagedBy: evalv1.ManagedByValue,
							evalv1.LabelTrial:     trial,
							evalv1.LabelRole:      evalv1.RoleRunner,
						}},
					}},
					Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(tcp), Port: ptr.To(intstr.FromInt32(DBServicePort))}},
				},
				{
					From:  []networkingv1.NetworkPolicyPeer{managerPeer},
					Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(tcp), Port: ptr.To(intstr.FromInt32(RunnerPort))}},
				},
			},
		},
	}
}

func copyLabels(in map[string]string) map[string]string {
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}
