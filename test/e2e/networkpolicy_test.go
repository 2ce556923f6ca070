package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers"
)

// The NetworkPolicies the manager writes (controllers/networkpolicy.go), as
// kube-router enforces them on the cluster's node (test/nodecluster). The
// probes are pods of the Python runner image (python3 is the only program
// with sockets in the project's images; the runner itself has no shell and
// no client): a pod carrying a Trial's runner labels is what the policies
// select, whatever it runs, so it stands in for that Trial's runner as the
// policies see it. Each refusal is paired with a connection that succeeds
// from the same probe or to the same kind of peer, so a probe that cannot
// connect at all fails the spec instead of passing it; on a cluster without
// enforcement every refusal below is a connection, and the specs fail.

// probeScript listens on the port it is given (so a probe can also be the
// peer) and otherwise sleeps.
const probeScript = `import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("", int(sys.argv[1])))
s.listen(64)
while True:
    c, _ = s.accept()
    c.close()
`

// connectScript exits 0 when a TCP connection to host:port opens within 3 s.
const connectScript = `import socket, sys
try:
    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3).close()
except OSError as e:
    print(e)
    sys.exit(1)
`

// probePod is a pod of the restricted namespace running probeScript on port
// with labels.
func probePod(name string, labels map[string]string, port int32) string {
	GinkgoHelper()
	image := os.Getenv("E2E_PYTHON_IMAGE")
	Expect(image).NotTo(BeEmpty(), "E2E_PYTHON_IMAGE names the Python runner image (python3) imported into the node")
	var ls []string
	for k, v := range labels {
		ls = append(ls, fmt.Sprintf("%q: %q", k, v))
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  labels: {%s}
spec:
  terminationGracePeriodSeconds: 1
  securityContext:
    runAsNonRoot: true
    runAsUser: 65532
    runAsGroup: 65532
    seccompProfile: {type: RuntimeDefault}
  containers:
  - name: probe
    image: %s
    imagePullPolicy: Never
    command: [python3, -c, %q, "%d"]
    ports: [{containerPort: %d}]
    resources: {requests: {cpu: 10m, memory: 32Mi}}
    readinessProbe:
      tcpSocket: {port: %d}
      timeoutSeconds: 5
      periodSeconds: 1
    securityContext:
      allowPrivilegeEscalation: false
      readOnlyRootFilesystem: true
      capabilities: {drop: [ALL]}
`, name, strings.Join(ls, ", "), image, probeScript, port, port, port)
}

// connects says whether pod opens a TCP connection to ip:port.
func connects(pod, ip string, port int32) func() error {
	return func() error {
		_, err := kubectl("", "-n", ns, "exec", pod, "--", "python3", "-c", connectScript, ip, strconv.Itoa(int(port)))
		return err
	}
}

// podIP is the IP of the one Running pod in namespace with labels.
func podIP(namespace string, labels map[string]string) string {
	GinkgoHelper()
	var ip string
	Eventually(func() error {
		var pods corev1.PodList
		if err := k8s.List(context.Background(), &pods, client.InNamespace(namespace), client.MatchingLabels(labels)); err != nil {
			return err
		}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" && p.DeletionTimestamp == nil {
				ip = p.Status.PodIP
				return nil
			}
		}
		return fmt.Errorf("no Running pod in %s with %v among %d", namespace, labels, len(pods.Items))
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	return ip
}

// podIPOf is the IP of pod name in ns.
func podIPOf(name string) string {
	GinkgoHelper()
	var p corev1.Pod
	Expect(k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &p)).To(Succeed())
	Expect(p.Status.PodIP).NotTo(BeEmpty(), "pod %s has no IP", name)
	return p.Status.PodIP
}

func networkPolicySpecs() {
	// Two Trials whose pods stay after they pass (keepPodsAfterFinished):
	// their DB services keep serving and their NetworkPolicies, owned by the
	// Trials, stay until the Trials are deleted. Each passed through the
	// manager calling its runner on the runner's port, the one peer the
	// runner's ingress admits.
	trials := []string{"np-a", "np-b"}
	trialLabel := func(t string) string { return evalv1.LabelValue(t) }
	runnerLabels := func(t string) map[string]string {
		return map[string]string{evalv1.LabelManagedBy: evalv1.ManagedByValue,
			evalv1.LabelTrial: trialLabel(t), evalv1.LabelRole: evalv1.RoleRunner}
	}
	dbLabels := func(t string) map[string]string {
		return map[string]string{evalv1.LabelManagedBy: evalv1.ManagedByValue,
			evalv1.LabelTrial: trialLabel(t), evalv1.LabelRole: evalv1.RoleDBService}
	}
	const (
		runnerProbe  = "np-probe-runner-a" // trial np-a's runner labels
		otherProbe   = "np-probe-other"    // no labels a policy selects
		fakeRunner   = "np-probe-listener" // trial np-a's runner labels, listening on the runner's port
		openListener = "np-probe-open"     // no labels a policy selects, listening on the runner's port
	)
	var dbA, dbB, manager string
	var metricsPort, gatewayPort int32

	It("runs two Trials at once whose pods and NetworkPolicies stay after they pass (the manager reaches each runner)", func() {
		for _, name := range trials {
			trial := strings.NewReplacer("name: shop-oracle\n", "name: "+name+"\n",
				"ttlSecondsAfterFinished: 86400", "keepPodsAfterFinished: true").Replace(sample("eval_v1alpha1_trial_oracle.yaml"))
			Expect(trial).To(ContainSubstring("keepPodsAfterFinished: true"))
			mustKubectl(trial, "-n", ns, "apply", "-f", "-")
		}
		for _, name := range trials {
			Eventually(trialPhase(name)).WithTimeout(4 * time.Minute).WithPolling(time.Second).Should(Equal(evalv1.PhasePassed))
			var np networkingv1.NetworkPolicy
			Expect(k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: controllers.NetworkPolicyName(name)}, &np)).To(Succeed())
		}
		var np networkingv1.NetworkPolicy
		Expect(k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: controllers.RunnersPolicyName}, &np)).To(Succeed())
		dbA, dbB = podIP(ns, dbLabels("np-a")), podIP(ns, dbLabels("np-b"))

		var pods corev1.PodList
		Expect(k8s.List(context.Background(), &pods, client.InNamespace("tolokaforge-system"),
			client.MatchingLabels{evalv1.LabelName: evalv1.AppName, evalv1.LabelComponent: evalv1.ComponentManager})).To(Succeed())
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" || p.DeletionTimestamp != nil {
				continue
			}
			manager = p.Status.PodIP
			for _, port := range p.Spec.Containers[0].Ports {
				switch port.Name {
				case "metrics":
					metricsPort = port.ContainerPort
				case "gateway":
					gatewayPort = port.ContainerPort
				}
			}
			break
		}
		Expect(manager).NotTo(BeEmpty(), "a Running manager pod")
		Expect(metricsPort).NotTo(BeZero(), "the manager's metrics port")
		Expect(gatewayPort).NotTo(BeZero(), "the manager's gateway port")

		mustKubectl(probePod(runnerProbe, runnerLabels("np-a"), 9000), "-n", ns, "apply", "-f", "-")
		mustKubectl(probePod(otherProbe, map[string]string{"app": "np-probe"}, 9000), "-n", ns, "apply", "-f", "-")
		mustKubectl(probePod(fakeRunner, runnerLabels("np-a"), controllers.RunnerPort), "-n", ns, "apply", "-f", "-")
		mustKubectl(probePod(openListener, map[string]string{"app": "np-probe"}, controllers.RunnerPort), "-n", ns, "apply", "-f", "-")
		mustKubectl("", "-n", ns, "wait", "--for=condition=Ready", "--timeout=2m",
			"pod/"+runnerProbe, "pod/"+otherProbe, "pod/"+fakeRunner, "pod/"+openListener)
	})

	It("lets a runner reach its own Trial's DB service but not another Trial's", func() {
		// Positive control first: the probe connects at all.
		Eventually(connects(runnerProbe, dbA, controllers.DBServicePort)).WithTimeout(30*time.Second).WithPolling(time.Second).
			Should(Succeed(), "trial np-a's runner to its own DB service %s:%d", dbA, controllers.DBServicePort)
		// kube-router fills a new pod's chains shortly after the pod starts.
		Eventually(connects(runnerProbe, dbB, controllers.DBServicePort)).WithTimeout(30*time.Second).WithPolling(time.Second).
			ShouldNot(Succeed(), "trial np-a's runner to trial np-b's DB service %s:%d", dbB, controllers.DBServicePort)
		Consistently(connects(runnerProbe, dbB, controllers.DBServicePort)).WithTimeout(8 * time.Second).WithPolling(time.Second).
			ShouldNot(Succeed())
		Expect(connects(runnerProbe, dbA, controllers.DBServicePort)()).To(Succeed(), "own DB service, after the refusals")
	})

	It("lets a runner reach the manager's gateway but not its metrics", func() {
		Eventually(connects(otherProbe, manager, metricsPort)).WithTimeout(30*time.Second).WithPolling(time.Second).
			Should(Succeed(), "a pod no policy selects to the manager's metrics %s:%d", manager, metricsPort)
		Eventually(connects(runnerProbe, manager, gatewayPort)).WithTimeout(30*time.Second).WithPolling(time.Second).
			Should(Succeed(), "a runner to the manager's gateway %s:%d", manager, gatewayPort)
		Eventually(connects(runnerProbe, manager, metricsPort)).WithTimeout(30*time.Second).WithPolling(time.Second).
			ShouldNot(Succeed(), "a runner to the manager's metrics %s:%d", manager, metricsPort)
		Consistently(connects(runnerProbe, manager, metricsPort)).WithTimeout(8 * time.Second).WithPolling(time.Second).
			ShouldNot(Succeed())
	})

	It("lets no pod but the manager reach a runner's port", func() {
		runner, open := podIPOf(fakeRunner), podIPOf(openListener)
		// Positive control: the same port on a pod no policy selects.
		Eventually(connects(otherProbe, open, controllers.RunnerPort)).WithTimeout(30*time.Second).WithPolling(time.Second).
			Should(Succeed(), "a pod no policy selects to another such pod's %s:%d", open, controllers.RunnerPort)
		for _, from := range []string{otherProbe, runnerProbe} {
			Eventually(connects(from, runner, controllers.RunnerPort)).WithTimeout(30*time.Second).WithPolling(time.Second).
				ShouldNot(Succeed(), "%s to trial np-a's runner %s:%d", from, runner, controllers.RunnerPort)
			Consistently(connects(from, runner, controllers.RunnerPort)).WithTimeout(5 * time.Second).WithPolling(time.Second).
				ShouldNot(Succeed())
		}
	})

	It("resolves names from a runner through the cluster's CoreDNS pods", func() {
		out, err := kubectl("", "-n", ns, "exec", runnerProbe, "--", "python3", "-c",
			`import socket; print(socket.gethostbyname("kubernetes.default.svc.cluster.local"))`)
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.TrimSpace(out)).To(Equal("10.96.0.1"))
	})

	It("deletes the two Trials and the probes", func() {
		mustKubectl("", "-n", ns, "delete", "pod", runnerProbe, otherProbe, fakeRunner, openListener, "--ignore-not-found", "--wait=true", "--timeout=2m")
		for _, name := range trials {
			mustKubectl("", "-n", ns, "delete", "trial", name, "--wait=true", "--timeout=2m")
		}
		Eventually(func() int {
			var left corev1.PodList
			_ = k8s.List(context.Background(), &left, client.InNamespace(ns), client.MatchingLabels{evalv1.LabelManagedBy: evalv1.ManagedByValue})
			n := 0
			for _, p := range left.Items {
				if t := p.Labels[evalv1.LabelTrial]; t == trialLabel("np-a") || t == trialLabel("np-b") {
					n++
				}
			}
			return n
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(BeZero())
	})
}
