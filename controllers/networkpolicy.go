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
	// GatewayPort is the manager's port runners may call (the LLM gateway a
	// runner's judge uses). 0: runners may not reach the manager at all.
	GatewayPort int32
}

// DNS is where runners resolve names: kube-system's kube-dns pods (CoreDNS
// keeps the k8s-app=kube-dns label for compatibility), UDP and TCP 53.
const (
	DNSNamespace = "kube-system"
	dnsLabelKey  = "k8s-app"
	dnsLabel     = "kube-dns"
	dnsPort      = 53
)

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

// RunnerEgressPolicyName is the name of a trial's runner egress policy.
func RunnerEgressPolicyName(trial string) string {
	const suffix = "-runner-egress"
	return shortName(trial, 253-len(suffix)) + suffix
}

// NetworkPolicies are the policies a trial's pods need before any is
// created: NetworkPolicy and RunnerEgressPolicy.
func NetworkPolicies(t *evalv1.Trial, mgr ManagerPeer) []*networkingv1.NetworkPolicy {
	return []*networkingv1.NetworkPolicy{NetworkPolicy(t, mgr), RunnerEgressPolicy(t, mgr)}
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
//
// It also isolates egress and allows none: the DB service reaches nothing
// (replies to admitted connections need no rule), and the runner's only ways
// out are RunnerEgressPolicy's. Egress rules, like ingress ones, are a union
// over the selected pods, so the runner's allowances live in a policy that
// selects only the runner; with them here the DB service would get them too.
func NetworkPolicy(t *evalv1.Trial, mgr ManagerPeer) *networkingv1.NetworkPolicy {
	trial := evalv1.LabelValue(t.Name)
	tcp := corev1.ProtocolTCP
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: policyMeta(t, NetworkPolicyName(t.Name)),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{
				evalv1.LabelManagedBy: evalv1.ManagedByValue,
				evalv1.LabelTrial:     trial,
			}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Egress:      []networkingv1.NetworkPolicyEgressRule{},
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
					From:  []networkingv1.NetworkPolicyPeer{managerPeer(mgr)},
					Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(tcp), Port: ptr.To(intstr.FromInt32(RunnerPort))}},
				},
			},
		},
	}
}

// RunnerEgressPolicy lets a trial's runner reach its own DB service, the
// manager's gateway (when mgr.GatewayPort is set) and cluster DNS; nothing
// else: no other trial, no provider, no cloud metadata endpoint.
func RunnerEgressPolicy(t *evalv1.Trial, mgr ManagerPeer) *networkingv1.NetworkPolicy {
	trial := evalv1.LabelValue(t.Name)
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	rules := []networkingv1.NetworkPolicyEgressRule{
		{
			To: []networkingv1.NetworkPolicyPeer{{
				PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
					evalv1.LabelManagedBy: evalv1.ManagedByValue,
					evalv1.LabelTrial:     trial,
					evalv1.LabelRole:      evalv1.RoleDBService,
				}},
			}},
			Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(tcp), Port: ptr.To(intstr.FromInt32(DBServicePort))}},
		},
		{
			To: []networkingv1.NetworkPolicyPeer{{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: DNSNamespace}},
				PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{dnsLabelKey: dnsLabel}},
			}},
			Ports: []networkingv1.NetworkPolicyPort{
				{Protocol: ptr.To(udp), Port: ptr.To(intstr.FromInt32(dnsPort))},
				{Protocol: ptr.To(tcp), Port: ptr.To(intstr.FromInt32(dnsPort))},
			},
		},
	}
	if mgr.GatewayPort > 0 {
		rules = append(rules, networkingv1.NetworkPolicyEgressRule{
			To:    []networkingv1.NetworkPolicyPeer{managerPeer(mgr)},
			Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(tcp), Port: ptr.To(intstr.FromInt32(mgr.GatewayPort))}},
		})
	}
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: policyMeta(t, RunnerEgressPolicyName(t.Name)),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{
				evalv1.LabelManagedBy: evalv1.ManagedByValue,
				evalv1.LabelTrial:     trial,
				evalv1.LabelRole:      evalv1.RoleRunner,
			}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
			Egress:      rules,
		},
	}
}

func managerPeer(mgr ManagerPeer) networkingv1.NetworkPolicyPeer {
	p := networkingv1.NetworkPolicyPeer{
		PodSelector: &metav1.LabelSelector{MatchLabels: copyLabels(mgr.Labels)},
	}
	if mgr.Namespace != "" {
		p.NamespaceSelector = &metav1.LabelSelector{
			MatchLabels: map[string]string{corev1.LabelMetadataName: mgr.Namespace},
		}
	}
	return p
}

func copyLabels(in map[string]string) map[string]string {
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

// policyMeta is a trial's policy's metadata: our labels, owned by the Trial
// so it goes with it.
func policyMeta(t *evalv1.Trial, name string) metav1.ObjectMeta {
	trial := evalv1.LabelValue(t.Name)
	return metav1.ObjectMeta{
		Name:      name,
		Namespace: t.Namespace,
		Labels: map[string]string{
			evalv1.LabelName:      evalv1.AppName,
			evalv1.LabelManagedBy: evalv1.ManagedByValue,
			evalv1.LabelInstance:  trial,
			evalv1.LabelTrial:     trial,
		},
		OwnerReferences: []metav1.OwnerReference{ownerRef(t)},
	}
}
