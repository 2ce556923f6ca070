package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
	// Scraper may reach every runner's /metrics (RunnerMetrics.Port).
	Scraper MetricsScraper
	// Collector is the OTLP collector every runner may export its spans to
	// (PodConfig.RunnerOTLPEndpoint).
	Collector OTLPCollector
}

// OTLPCollector is where the runners' spans go: the collector's pods, by
// their namespace's labels and their own, as for MetricsScraper, and the
// port they receive OTLP/gRPC on.
type OTLPCollector struct {
	// Port is the collector pods' OTLP/gRPC port; 0 (or no selector): no
	// rule.
	Port       int32
	Namespaces map[string]string
	Pods       map[string]string
}

// collectorEgress is the rule letting runners reach the collector; none
// when runners export nothing. Never an empty peer: that would open every
// pod of the runner's namespace on that port.
func collectorEgress(c OTLPCollector) []networkingv1.NetworkPolicyEgressRule {
	if c.Port <= 0 || (len(c.Namespaces) == 0 && len(c.Pods) == 0) {
		return nil
	}
	return []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{selectedPeer(c.Namespaces, c.Pods)}, Ports: tcpPort(c.Port)}}
}

// selectedPeer is the peer of pods with these labels in namespaces with
// those; either may be empty, not both (the callers check).
func selectedPeer(namespaces, pods map[string]string) networkingv1.NetworkPolicyPeer {
	var p networkingv1.NetworkPolicyPeer
	if len(namespaces) > 0 {
		p.NamespaceSelector = &metav1.LabelSelector{MatchLabels: copyLabels(namespaces)}
	}
	if len(pods) > 0 {
		p.PodSelector = &metav1.LabelSelector{MatchLabels: copyLabels(pods)}
	}
	return p
}

// MetricsScraper is who may scrape the runners' /metrics: a Prometheus, by
// its namespace's labels and its pods' labels, as a NetworkPolicy peer
// selects (pods alone: the runner's own namespace; namespaces alone: every
// pod there; both: those pods in those namespaces).
type MetricsScraper struct {
	// Port is the runners' /metrics port; 0 (or no selector): no rule.
	Port       int32
	Namespaces map[string]string
	Pods       map[string]string
}

// scraperIngress is the rule admitting the scraper to the runners' metrics
// port; none when metrics are off. Never an empty peer: that would admit
// every pod of the namespace.
func scraperIngress(s MetricsScraper) []networkingv1.NetworkPolicyIngressRule {
	if s.Port <= 0 || (len(s.Namespaces) == 0 && len(s.Pods) == 0) {
		return nil
	}
	return []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{selectedPeer(s.Namespaces, s.Pods)}, Ports: tcpPort(s.Port)}}
}

// DNS is where runners resolve names: kube-system's kube-dns pods (CoreDNS
// keeps the k8s-app=kube-dns label for compatibility), UDP and TCP 53.
const (
	dnsNamespace = "kube-system"
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

// RunnersPolicyName is the name of the one runner egress policy of a
// namespace. No trial's policy can take it: those end in "-isolation".
const RunnersPolicyName = "tolokaforge-runners"

// legacyRunnerEgressPolicyName is the per-trial runner egress policy of
// releases before the namespace's RunnersPolicy; a deleted Trial's is still
// removed.
func legacyRunnerEgressPolicyName(trial string) string {
	const suffix = "-runner-egress"
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
//
// It also isolates egress: the one way out it allows is to the trial's own DB
// service on its port. Egress rules, like ingress ones, are a union over the
// selected pods, so the DB service may open a connection to itself and to
// nothing else (replies to admitted connections need no rule). What every
// runner may reach besides (DNS, the manager's gateway) is the same for all
// trials, so it lives in the namespace's RunnersPolicy, written once, not in
// a second policy per trial: the union for a runner is the same.
func NetworkPolicy(t *evalv1.Trial, mgr ManagerPeer) *networkingv1.NetworkPolicy {
	trial := evalv1.LabelValue(t.Name)
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: policyMeta(t, NetworkPolicyName(t.Name)),
		Spec: networkingv1.NetworkPolicySpec{
			// A terminal task's environment pod has a policy of its own
			// (EnvironmentPolicy): selected here too, the union would admit
			// the manager and the runner on its other ports.
			PodSelector: metav1.LabelSelector{
				MatchLabels: map[string]string{
					evalv1.LabelManagedBy: evalv1.ManagedByValue,
					evalv1.LabelTrial:     trial,
				},
				MatchExpressions: []metav1.LabelSelectorRequirement{{
					Key: evalv1.LabelRole, Operator: metav1.LabelSelectorOpNotIn, Values: []string{evalv1.RoleEnvironment},
				}},
			},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Egress: []networkingv1.NetworkPolicyEgressRule{
				{To: trialPod(trial, evalv1.RoleDBService), Ports: tcpPort(DBServicePort)},
				// The runner drives a terminal task's environment (the exec
				// agent); the environment's own policy admits nobody else.
				{To: trialPod(trial, evalv1.RoleEnvironment), Ports: tcpPort(EnvironmentPort)},
			},
			Ingress: []networkingv1.NetworkPolicyIngressRule{
				{From: trialPod(trial, evalv1.RoleRunner), Ports: tcpPort(DBServicePort)},
				{From: []networkingv1.NetworkPolicyPeer{managerPeer(mgr)}, Ports: tcpPort(RunnerPort)},
			},
		},
	}
}

// RunnersPolicy lets every runner of the namespace reach cluster DNS, the
// manager's gateway (when mgr.GatewayPort is set) and the OTLP collector
// (when mgr.Collector has a port), and, when runners serve
// metrics, lets mgr.Scraper in to their metrics port. With each trial's
// NetworkPolicy that is all a runner reaches: its own DB service, DNS, the
// gateway; no other trial, no provider, no cloud metadata endpoint. It has
// no owner: it serves every trial of the namespace, outlives each, and is
// brought back to this spec when a manager with other settings finds it.
func RunnersPolicy(namespace string, mgr ManagerPeer) *networkingv1.NetworkPolicy {
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	rules := []networkingv1.NetworkPolicyEgressRule{
		{
			To: []networkingv1.NetworkPolicyPeer{{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: dnsNamespace}},
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
			Ports: tcpPort(mgr.GatewayPort),
		})
	}
	rules = append(rules, collectorEgress(mgr.Collector)...)
	policyTypes := []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
	ingress := scraperIngress(mgr.Scraper)
	if len(ingress) > 0 {
		// Adds to each trial's policy, which admits the manager alone: a
		// runner is already isolated for ingress, so this takes nothing
		// away. Without a scraper the policy stays egress-only, as before.
		policyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}
	}
	return &networkingv1.NetworkPolicy{
		TypeMeta: metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      RunnersPolicyName,
			Namespace: namespace,
			Labels: map[string]string{
				evalv1.LabelName:      evalv1.AppName,
				evalv1.LabelManagedBy: evalv1.ManagedByValue,
			},
		},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{
				evalv1.LabelManagedBy: evalv1.ManagedByValue,
				evalv1.LabelRole:      evalv1.RoleRunner,
			}},
			PolicyTypes: policyTypes,
			Ingress:     ingress,
			Egress:      rules,
		},
	}
}

// trialPod selects the pod of one role of one trial.
func trialPod(trial, role string) []networkingv1.NetworkPolicyPeer {
	return []networkingv1.NetworkPolicyPeer{{
		PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
			evalv1.LabelManagedBy: evalv1.ManagedByValue,
			evalv1.LabelTrial:     trial,
			evalv1.LabelRole:      role,
		}},
	}}
}

func tcpPort(port int32) []networkingv1.NetworkPolicyPort {
	return []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(port))}}
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

// refreshSlotPolicy brings a Campaign's existing slot policy to want's spec:
// one an earlier manager wrote with other settings (a metrics scraper turned
// on since) would not admit what this manager's slots serve. Run once per
// Campaign and process, like the create.
func (r *TrialReconciler) refreshSlotPolicy(ctx context.Context, want *networkingv1.NetworkPolicy) error {
	var cur networkingv1.NetworkPolicy
	if err := r.uncached().Get(ctx, client.ObjectKeyFromObject(want), &cur); err != nil {
		return fmt.Errorf("get slot network policy %s/%s: %w", want.Namespace, want.Name, err)
	}
	if equality.Semantic.DeepEqual(cur.Spec, want.Spec) {
		return nil
	}
	cur.Spec = want.Spec
	if err := r.Client.Update(ctx, &cur, client.FieldOwner(evalv1.FieldManager)); err != nil {
		return fmt.Errorf("update slot network policy %s/%s: %w", want.Namespace, want.Name, err)
	}
	return nil
}
