package controllers_test

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"tolokaforge.io/operator/api/authn"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers"
)

var _ = Describe("Runner metrics", func() {
	const port = 19464
	const scraperToken = "envtest-scraper-token-0123456789"

	It("has a manager with --runner-metrics-port make runners that serve /metrics to the scraper's token and admit the scraper", func() {
		ns := newNamespace()
		Expect(h.Client.Create(ctx, shopTask(ns, "shop", nil))).To(Succeed())
		tokFile := filepath.Join(GinkgoT().TempDir(), "token")
		Expect(os.WriteFile(tokFile, []byte(scraperToken+"\n"), 0o600)).To(Succeed())

		// This spec's manager serves runner metrics; the suite's comes back after.
		Expect(mgr.Stop()).To(Succeed())
		opts := h.ManagerOptions(10)
		opts.Actors, opts.WrapRunner, opts.GatewayURL = gates.Actors, rpcs.Wrap, testGatewayURL
		opts.RunnerMetricsPort, opts.RunnerMetricsTokenFile = port, tokFile
		opts.RunnerMetricsScraperNamespaces = "kubernetes.io/metadata.name=monitoring"
		opts.RunnerMetricsScraperPods = "app.kubernetes.io/name=prometheus"
		m, err := h.StartManager(nil, opts)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			Expect(m.Stop()).To(Succeed())
			mgr = startManager(10)
		})

		key := types.NamespacedName{Namespace: ns, Name: "scraped"}
		gt := gates.Hold(key, 1)
		Expect(h.Client.Create(ctx, oracleTrial(ns, key.Name, "shop"))).To(Succeed())
		waitGate(gt)

		var cred corev1.Secret
		Expect(h.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: controllers.AuthSecretName(getTrial(key), 1)}, &cred)).To(Succeed())
		Expect(string(cred.Data[controllers.MetricsTokenKey])).To(Equal(scraperToken))
		own := string(cred.Data[authn.SecretKey])
		Expect(own).NotTo(BeEmpty())

		ip, ok := h.Sim.PodAddr(ns, controllers.PodName(key.Name, 1, evalv1.RoleRunner))
		Expect(ok).To(BeTrue())
		url := "http://" + net.JoinHostPort(ip, strconv.Itoa(port)) + "/metrics"
		scrape := func(token string) int {
			req, err := http.NewRequest(http.MethodGet, url, nil)
			Expect(err).NotTo(HaveOccurred())
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			resp, err := http.DefaultClient.Do(req)
			Expect(err).NotTo(HaveOccurred())
			resp.Body.Close()
			return resp.StatusCode
		}
		Expect(scrape(scraperToken)).To(Equal(http.StatusOK))
		Expect(scrape(own)).To(Equal(http.StatusOK))
		Expect(scrape("")).To(Equal(http.StatusUnauthorized))
		Expect(scrape("not-" + scraperToken)).To(Equal(http.StatusUnauthorized))

		// The API server took the namespace's policy with the scraper's rule
		// as the manager wrote it (no update loop: the spec compares equal).
		var np networkingv1.NetworkPolicy
		Expect(h.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: controllers.RunnersPolicyName}, &np)).To(Succeed())
		peer := controllers.DefaultManagerPeer("tolokaforge-system")
		peer.Scraper = controllers.MetricsScraper{Port: port,
			Namespaces: map[string]string{"kubernetes.io/metadata.name": "monitoring"}, Pods: map[string]string{"app.kubernetes.io/name": "prometheus"}}
		want := controllers.RunnersPolicy(ns, peer)
		Expect(np.Spec.Ingress).To(HaveLen(1))
		Expect(equality.Semantic.DeepEqual(np.Spec.Ingress, want.Spec.Ingress)).To(BeTrue(), "ingress %+v, want %+v", np.Spec.Ingress, want.Spec.Ingress)
		Expect(np.Spec.PolicyTypes).To(ConsistOf(networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress))

		close(gt.Release)
		t := completed(key)
		Expect(findCond(t.Status.Conditions, evalv1.TrialCompleted).Reason).To(Equal("Passed"), describeTrial(t))
	})
})
