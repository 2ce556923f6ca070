package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers"
	"tolokaforge.io/operator/controllers/kueue"
)

// kueueManifest is Kueue v0.17.0's own install (its config/default, built
// with kustomize by hack/e2e.sh) as a cluster admin would adapt it for this
// operator: the image imported into the node, the Trial among
// integrations.externalFrameworks, and requests a 2-core node can hold. The
// visibility APIServices are left out: nothing here reads them, and an
// aggregated API that is not serving yet fails every discovery (kubectl's
// and the manager's) until it is.
func kueueManifest(path, image string) string {
	GinkgoHelper()
	raw, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred(), "hack/e2e.sh renders Kueue's install to E2E_KUEUE_MANIFEST")
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 1<<20)
	var out strings.Builder
	seen := map[string]bool{}
	for {
		var obj unstructured.Unstructured
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			Expect(err).NotTo(HaveOccurred())
		}
		if len(obj.Object) == 0 {
			continue
		}
		switch kind, name := obj.GetKind(), obj.GetName(); {
		case kind == "APIService":
			continue
		case kind == "ConfigMap" && name == "kueue-manager-config":
			cfg := map[string]any{}
			data, _, _ := unstructured.NestedString(obj.Object, "data", "controller_manager_config.yaml")
			Expect(yaml.Unmarshal([]byte(data), &cfg)).To(Succeed())
			cfg["integrations"] = map[string]any{
				"frameworks":         []any{"batch/job"},
				"externalFrameworks": []any{kueue.ExternalFramework},
			}
			b, err := yaml.Marshal(cfg)
			Expect(err).NotTo(HaveOccurred())
			Expect(unstructured.SetNestedField(obj.Object, string(b), "data", "controller_manager_config.yaml")).To(Succeed())
			seen[kind] = true
		case kind == "Deployment" && name == "kueue-controller-manager":
			containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
			Expect(containers).To(HaveLen(1))
			c := containers[0].(map[string]any)
			c["image"] = image
			c["imagePullPolicy"] = "Never"
			c["command"] = []any{"/kueue"} // hack/image single's entrypoint
			c["resources"] = map[string]any{
				"requests": map[string]any{"cpu": "100m", "memory": "128Mi"},
				"limits":   map[string]any{"cpu": "1", "memory": "512Mi"},
			}
			Expect(unstructured.SetNestedSlice(obj.Object, containers, "spec", "template", "spec", "containers")).To(Succeed())
			seen[kind] = true
		}
		b, err := yaml.Marshal(obj.Object)
		Expect(err).NotTo(HaveOccurred())
		out.WriteString("---\n")
		out.Write(b)
	}
	Expect(seen).To(HaveKey("ConfigMap"), "Kueue's install has no kueue-manager-config")
	Expect(seen).To(HaveKey("Deployment"), "Kueue's install has no kueue-controller-manager")
	return out.String()
}

// attemptQuota is room for n attempts' pods in a ClusterQueue, in the
// manager's default requests.
func attemptQuota(n int64) map[corev1.ResourceName]string {
	sum := map[corev1.ResourceName]*resource.Quantity{}
	for _, r := range controllers.AttemptResources(&evalv1.Trial{}) {
		for name, q := range r.Requests {
			if sum[name] == nil {
				sum[name] = &resource.Quantity{}
			}
			sum[name].Add(q)
		}
	}
	out := map[corev1.ResourceName]string{}
	for name, q := range sum {
		out[name] = resource.NewMilliQuantity(q.MilliValue()*n, q.Format).String()
	}
	return out
}

func kueueQueues(cq string, quota map[corev1.ResourceName]string) string {
	var covered, resources strings.Builder
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		q, ok := quota[name]
		if !ok {
			continue
		}
		fmt.Fprintf(&covered, "%q, ", name)
		fmt.Fprintf(&resources, "      - {name: %q, nominalQuota: %q}\n", name, q)
	}
	return fmt.Sprintf(`apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: e2e-default
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: %[1]s
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [%[2]s]
    flavors:
    - name: e2e-default
      resources:
%[3]s---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: evals
  namespace: %[4]s
spec:
  clusterQueue: %[1]s
`, cq, strings.TrimSuffix(covered.String(), ", "), resources.String(), ns)
}

// kueueSpecs: Kueue v0.17.0 as a pod of the cluster, the manager finding it
// at its next start (--kueue=auto), and a Campaign queued under a
// ClusterQueue with room for two attempts.
func kueueSpecs() {
	It("queues a Campaign under Kueue running as a pod: two attempts at a time within the ClusterQueue's quota, every Trial Passes once", func() {
		image, manifest := os.Getenv("E2E_KUEUE_IMAGE"), os.Getenv("E2E_KUEUE_MANIFEST")
		Expect(image).NotTo(BeEmpty(), "E2E_KUEUE_IMAGE names Kueue's image imported into the node")
		start := time.Now()
		mustKubectl(kueueManifest(manifest, image), "apply", "--server-side", "-f", "-")
		// Kueue is Ready once its certificates reached its pod through the
		// kubelet's Secret volume: 15-25 s on an idle node, 3.5 min once
		// right after the benchmark's pod churn.
		// (kubectl runs at most 5 min here, so the wait is in minutes.)
		Eventually(func() error {
			_, err := kubectl("", "-n", "kueue-system", "rollout", "status", "deploy/kueue-controller-manager", "--timeout=1m")
			return err
		}).WithTimeout(8 * time.Minute).WithPolling(time.Second).Should(Succeed())
		GinkgoWriter.Printf("kueue rolled out in %s\n", time.Since(start).Round(time.Second))
		const cq, n, room = "e2e-evals", 6, 2
		// Kueue's webhooks answer once its Service's rules reach kube-proxy
		// (a Ready pod is not yet a reachable one).
		Eventually(func() error {
			_, err := kubectl(kueueQueues(cq, attemptQuota(room)), "apply", "-f", "-")
			return err
		}).WithTimeout(4 * time.Minute).WithPolling(3 * time.Second).Should(Succeed())
		GinkgoWriter.Printf("kueue's webhooks answered %s after the install\n", time.Since(start).Round(time.Second))
		// The manager turns its Kueue integration on when it starts and
		// finds Kueue's API: installed after it, Kueue needs a restart.
		// Kueue's own install puts a Deployment and a Pod webhook
		// (failurePolicy Fail) in front of every namespace but kube-system
		// and kueue-system, so the restart goes through Kueue too: a restart
		// its webhook refused changed nothing and is tried again.
		Eventually(func() error {
			_, err := kubectl("", "-n", "tolokaforge-system", "rollout", "restart", "deploy/tolokaforge-manager")
			return err
		}).WithTimeout(2 * time.Minute).WithPolling(3 * time.Second).Should(Succeed())
		mustKubectl("", "-n", "tolokaforge-system", "rollout", "status", "deploy/tolokaforge-manager", "--timeout=3m")

		c := oracleCampaign(ns, "queued", int32(n), int32(n), nil, "shop-orders-02")
		c.Labels = map[string]string{evalv1.LabelQueueName: "evals"}
		Expect(k8s.Create(context.Background(), c)).To(Succeed())
		// At no moment do more than room runners hold pods: Kueue admits
		// two Workloads, a Trial runs only while its Workload is, and the
		// Campaign's slots never outnumber its admitted Trials (a Workload
		// reserves the one slot pod its Trial runs on).
		most := 0
		Eventually(func(g Gomega) {
			var pods corev1.PodList
			g.Expect(k8s.List(context.Background(), &pods, client.InNamespace(ns))).To(Succeed())
			running := 0
			for _, p := range pods.Items {
				runner := p.Labels[evalv1.LabelRole] == evalv1.RoleRunner || p.Labels[evalv1.LabelSlotClass] != ""
				if runner && strings.HasPrefix(p.Name, "queued-") && p.DeletionTimestamp == nil &&
					p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
					running++
				}
			}
			most = max(most, running)
			var got evalv1.Campaign
			g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(c), &got)).To(Succeed())
			g.Expect(got.Status.Counts.Passed).To(BeEquivalentTo(n), "counts %+v", got.Status.Counts)
		}).WithTimeout(6 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		GinkgoWriter.Printf("queued campaign: %d Trials in %s, at most %d runner or slot pods at once\n", n, time.Since(start).Round(time.Second), most)
		Expect(most).To(BeNumerically("<=", room), "more attempts ran than the ClusterQueue admits")
		Expect(most).To(BeNumerically(">=", 1))

		var trials evalv1.TrialList
		Expect(k8s.List(context.Background(), &trials, client.InNamespace(ns), client.MatchingLabels{evalv1.LabelCampaign: "queued"})).To(Succeed())
		Expect(trials.Items).To(HaveLen(n))
		for i := range trials.Items {
			t := &trials.Items[i]
			Expect(t.Status.Phase).To(Equal(evalv1.PhasePassed), t.Name)
			Expect(t.Status.Attempts).To(HaveLen(1), t.Name)
			// On the Campaign's warm slots (the default), once admitted.
			Expect(t.Status.Attempts[0].Slot).NotTo(BeEmpty(), "%s ran on no slot: %s", t.Name, describe(t))
			Expect(t.Status.Grade).NotTo(BeNil(), t.Name)
			adm := condition(t, evalv1.TrialAdmitted)
			Expect(adm).NotTo(BeNil(), t.Name)
			Expect(adm.Message).To(HavePrefix("admitted by ClusterQueue "+cq+" (LocalQueue evals"), t.Name)
		}
		// Every Workload finished: the quota is free again.
		Eventually(func() string {
			out, _ := kubectl("", "get", "clusterqueue", cq, "-o", "jsonpath={.status.reservingWorkloads}")
			return out
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Equal("0"))
	})
}
