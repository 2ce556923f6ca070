package controllers_test

import (
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers"
)

var _ = Describe("Runner OTLP export", func() {
	// Nothing listens there: the exporter connects lazily and drops spans.
	const endpoint = "http://127.0.0.1:14317"

	It("has a manager with --runner-otlp-endpoint give runners the endpoint and a policy rule to the collector", func() {
		ns := newNamespace()
		Expect(h.Client.Create(ctx, shopTask(ns, "shop", nil))).To(Succeed())

		// This spec's manager has runners export; the suite's comes back after.
		Expect(mgr.Stop()).To(Succeed())
		opts := h.ManagerOptions(10)
		opts.Actors, opts.WrapRunner, opts.GatewayURL = gates.Actors, rpcs.Wrap, testGatewayURL
		opts.RunnerOTLPEndpoint = endpoint
		opts.RunnerOTLPCollectorNamespaces = "kubernetes.io/metadata.name=observability"
		opts.RunnerOTLPCollectorPods = "app.kubernetes.io/name=opentelemetry-collector"
		m, err := h.StartManager(nil, opts)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			Expect(m.Stop()).To(Succeed())
			mgr = startManager(10)
		})

		key := types.NamespacedName{Namespace: ns, Name: "traced"}
		gt := gates.Hold(key, 1)
		Expect(h.Client.Create(ctx, oracleTrial(ns, key.Name, "shop"))).To(Succeed())
		waitGate(gt)

		var pod corev1.Pod
		Expect(h.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: controllers.PodName(key.Name, 1, evalv1.RoleRunner)}, &pod)).To(Succeed())
		i := slices.IndexFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == evalv1.RoleRunner })
		Expect(i).To(BeNumerically(">=", 0))
		Expect(pod.Spec.Containers[i].Env).To(ContainElement(corev1.EnvVar{Name: "OTEL_EXPORTER_OTLP_ENDPOINT", Value: endpoint}))

		// The API server took the namespace's policy with the collector's
		// rule as the manager wrote it (no update loop: the spec compares
		// equal).
		var np networkingv1.NetworkPolicy
		Expect(h.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: controllers.RunnersPolicyName}, &np)).To(Succeed())
		peer := controllers.DefaultManagerPeer("tolokaforge-system")
		peer.GatewayPort = opts.GatewayPort
		peer.Collector = controllers.OTLPCollector{Port: 14317,
			Namespaces: map[string]string{"kubernetes.io/metadata.name": "observability"}, Pods: map[string]string{"app.kubernetes.io/name": "opentelemetry-collector"}}
		want := controllers.RunnersPolicy(ns, peer)
		// Spelled out too: want is built by the code under test.
		Expect(slices.ContainsFunc(np.Spec.Egress, func(r networkingv1.NetworkPolicyEgressRule) bool {
			return len(r.Ports) == 1 && r.Ports[0].Port.IntVal == 14317 && *r.Ports[0].Protocol == corev1.ProtocolTCP && len(r.To) == 1 &&
				r.To[0].NamespaceSelector != nil && r.To[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] == "observability" &&
				r.To[0].PodSelector != nil && r.To[0].PodSelector.MatchLabels["app.kubernetes.io/name"] == "opentelemetry-collector"
		})).To(BeTrue(), "egress %+v has no rule to the collector", np.Spec.Egress)
		Expect(equality.Semantic.DeepEqual(np.Spec.Egress, want.Spec.Egress)).To(BeTrue(), "egress %+v, want %+v", np.Spec.Egress, want.Spec.Egress)
		Expect(np.Spec.PolicyTypes).To(Equal([]networkingv1.PolicyType{networkingv1.PolicyTypeEgress}))

		close(gt.Release)
		t := completed(key)
		Expect(findCond(t.Status.Conditions, evalv1.TrialCompleted).Reason).To(Equal("Passed"), describeTrial(t))
	})
})
