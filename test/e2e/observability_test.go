package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// The OTLP receiver (the fake LLM's image with --otlp-listen: it keeps what
// it receives and lists it at /otlp/traces) and the scraper standing in for
// Prometheus.
const (
	otlpSink          = "otlp-sink"
	otlpSinkHTTPPort  = 8080
	otlpSinkGRPCPort  = 4317
	runnerMetricsPort = 9095
	scraperPod        = "e2e-scraper"
	metricsReader     = "tolokaforge-metrics-reader"
)

func otlpSinkManifest() string {
	GinkgoHelper()
	image := os.Getenv("E2E_FAKELLM_IMAGE")
	Expect(image).NotTo(BeEmpty(), "E2E_FAKELLM_IMAGE names the fake LLM's image imported into the node")
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %[1]s
  labels: {app: %[1]s}
spec:
  terminationGracePeriodSeconds: 1
  securityContext:
    runAsNonRoot: true
    runAsUser: 65532
    runAsGroup: 65532
    seccompProfile: {type: RuntimeDefault}
  containers:
  - name: sink
    image: %[2]s
    imagePullPolicy: Never
    args: [--listen=:%[3]d, --otlp-listen=:%[4]d]
    ports: [{containerPort: %[3]d}, {containerPort: %[4]d}]
    resources: {requests: {cpu: 10m, memory: 32Mi}}
    readinessProbe:
      tcpSocket: {port: %[4]d}
      periodSeconds: 1
    securityContext:
      allowPrivilegeEscalation: false
      readOnlyRootFilesystem: true
      capabilities: {drop: [ALL]}
---
apiVersion: v1
kind: Service
metadata:
  name: %[1]s
spec:
  selector: {app: %[1]s}
  ports:
  - {name: http, port: %[3]d, targetPort: %[3]d}
  - {name: otlp, port: %[4]d, targetPort: %[4]d}
`, otlpSink, image, otlpSinkHTTPPort, otlpSinkGRPCPort)
}

// scrapeScript GETs argv[1] with argv[2] as bearer token ("" for none) and
// prints the status code, then the body.
const scrapeScript = `import sys, urllib.request, urllib.error
req = urllib.request.Request(sys.argv[1])
if sys.argv[2]:
    req.add_header("Authorization", "Bearer " + sys.argv[2])
try:
    with urllib.request.urlopen(req, timeout=5) as r:
        print(r.status)
        sys.stdout.write(r.read().decode())
except urllib.error.HTTPError as e:
    print(e.code)
`

// observabilitySpecs: issue 37 on the real node. The manager is configured
// as docs/observability.md tells an operator: OTEL_EXPORTER_OTLP_ENDPOINT
// for traces, --runner-metrics-port with the scraper's token and selector
// for runner pods. A Trial then runs; its trace id is in its status and its
// spans reached the receiver, the manager's /metrics has its series, and its
// kept runner pod's /metrics answers the scraper's token (only).
func observabilitySpecs() {
	It("exports a Trial's trace (its id in status) over OTLP and serves the manager's and a runner pod's metrics to a scraper", func() {
		ctx := context.Background()
		mustKubectl(otlpSinkManifest(), "-n", ns, "apply", "-f", "-")
		mustKubectl(probePod(scraperPod, map[string]string{"app": scraperPod}, 8081), "-n", ns, "apply", "-f", "-")
		mustKubectl("", "-n", ns, "wait", "--for=condition=Ready", "pod/"+otlpSink, "pod/"+scraperPod, "--timeout=2m")

		token := fmt.Sprintf("e2e-scraper-%d", time.Now().UnixNano())
		Expect(k8s.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: metricsReader, Namespace: managerNamespace},
			Data:       map[string][]byte{"token": []byte(token)},
		})).To(Succeed())
		endpoint := fmt.Sprintf("http://%s.%s.svc:%d", otlpSink, ns, otlpSinkGRPCPort)
		patch := []map[string]any{
			{"op": "add", "path": "/spec/template/spec/containers/0/args/-", "value": "--runner-metrics-port=" + strconv.Itoa(runnerMetricsPort)},
			{"op": "add", "path": "/spec/template/spec/containers/0/args/-", "value": "--runner-metrics-token-file=/var/run/tolokaforge/metrics-reader/token"},
			{"op": "add", "path": "/spec/template/spec/containers/0/args/-", "value": "--runner-metrics-scraper-pod-selector=app=" + scraperPod},
			{"op": "add", "path": "/spec/template/spec/containers/0/env/-", "value": map[string]string{
				"name": "OTEL_EXPORTER_OTLP_ENDPOINT", "value": endpoint}},
			// The runners export theirs to the same receiver, which their
			// egress policy admits (a pod selector alone: pods of the
			// runners' own namespace).
			{"op": "add", "path": "/spec/template/spec/containers/0/args/-", "value": "--runner-otlp-endpoint=" + endpoint},
			{"op": "add", "path": "/spec/template/spec/containers/0/args/-", "value": "--runner-otlp-collector-pod-selector=app=" + otlpSink},
			{"op": "add", "path": "/spec/template/spec/volumes/-", "value": map[string]any{
				"name": "metrics-reader", "secret": map[string]string{"secretName": metricsReader}}},
			{"op": "add", "path": "/spec/template/spec/containers/0/volumeMounts/-", "value": map[string]any{
				"name": "metrics-reader", "mountPath": "/var/run/tolokaforge/metrics-reader", "readOnly": true}},
		}
		b, err := json.Marshal(patch)
		Expect(err).NotTo(HaveOccurred())
		mustKubectl("", "-n", managerNamespace, "patch", "deploy/tolokaforge-manager", "--type=json", "-p", string(b))
		mustKubectl("", "-n", managerNamespace, "rollout", "status", "deploy/tolokaforge-manager", "--timeout=3m")

		var tr evalv1.Trial
		Expect(yaml.Unmarshal([]byte(sample("eval_v1alpha1_trial_oracle.yaml")), &tr)).To(Succeed())
		tr.ObjectMeta = metav1.ObjectMeta{Name: "shop-observed", Namespace: ns}
		// Kept: its runner still serves /metrics after the Trial ends.
		tr.Spec.KeepPodsAfterFinished = true
		Expect(k8s.Create(ctx, &tr)).To(Succeed())
		Eventually(trialPhase("shop-observed")).WithTimeout(4*time.Minute).WithPolling(time.Second).
			Should(Equal(evalv1.PhasePassed), func() string { return describe(getTrial("shop-observed")) })
		t := getTrial("shop-observed")
		a := t.Status.Attempts[len(t.Status.Attempts)-1]
		Expect(a.TraceID).To(MatchRegexp(`^[0-9a-f]{32}$`), "the attempt's trace id in status: %s", describe(t))
		GinkgoWriter.Printf("trace %s of %s\n", a.TraceID, t.Name)

		// The trace reached the receiver: its attempt span is a root and
		// the others hang below it.
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		Expect(err).NotTo(HaveOccurred())
		cs, err := kubernetes.NewForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		type span struct {
			TraceID, SpanID, ParentSpanID, Name, ServiceName string
		}
		var spans []span
		Eventually(func() error {
			raw, err := cs.CoreV1().Pods(ns).ProxyGet("http", otlpSink, strconv.Itoa(otlpSinkHTTPPort), "/otlp/traces",
				map[string]string{"trace_id": a.TraceID}).DoRaw(ctx)
			if err != nil {
				return err
			}
			var got struct {
				Spans []struct {
					TraceID      string `json:"trace_id"`
					SpanID       string `json:"span_id"`
					ParentSpanID string `json:"parent_span_id"`
					Name         string `json:"name"`
					ServiceName  string `json:"service_name"`
				} `json:"spans"`
			}
			if err := json.Unmarshal(raw, &got); err != nil {
				return fmt.Errorf("%w: %s", err, raw)
			}
			spans = spans[:0]
			roots, runner := 0, 0
			for _, s := range got.Spans {
				spans = append(spans, span{s.TraceID, s.SpanID, s.ParentSpanID, s.Name, s.ServiceName})
				if s.ParentSpanID == "" {
					roots++
				}
				if s.ServiceName == "tolokaforge-runner" {
					runner++
				}
			}
			// The runner's spans come on its batcher's interval (5 s).
			if roots != 1 || len(spans) < 3 || runner == 0 {
				return fmt.Errorf("%d spans, %d roots, %d of the runner: %+v", len(spans), roots, runner, spans)
			}
			return nil
		}).WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		names, ids := map[string]bool{}, map[string]bool{}
		for _, s := range spans {
			Expect(s.TraceID).To(Equal(a.TraceID))
			names[s.ServiceName+": "+s.Name] = true
			ids[s.SpanID] = true
		}
		GinkgoWriter.Printf("%d spans of trace %s reached the receiver: %v\n", len(spans), a.TraceID, names)
		Expect(names).To(HaveKey("tolokaforge-manager: attempt"))
		// The runner's spans hang below the manager's calls (the context
		// went over gRPC), and its grading has a span per component.
		for _, s := range spans {
			if s.ServiceName == "tolokaforge-runner" {
				Expect(ids).To(HaveKey(s.ParentSpanID), "runner span %q has a parent in the trace", s.Name)
			}
		}
		Expect(names).To(HaveKey("tolokaforge-runner: grading hash"))

		// The manager's metrics (its metrics port, as a ServiceMonitor reads it).
		var mgrText strings.Builder
		pods, err := cs.CoreV1().Pods(managerNamespace).List(ctx, metav1.ListOptions{LabelSelector: evalv1.LabelComponent + "=manager"})
		Expect(err).NotTo(HaveOccurred())
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil || p.Status.PodIP == "" {
				continue
			}
			raw, err := cs.CoreV1().Pods(managerNamespace).ProxyGet("http", p.Name, "8080", "/metrics", nil).DoRaw(ctx)
			if err == nil {
				mgrText.Write(raw)
			}
		}
		for _, series := range []string{"tolokaforge_trials_completed_total", "tolokaforge_attempt_start_seconds_count",
			"tolokaforge_registration_duration_seconds_count", "tolokaforge_driver_pool_capacity"} {
			Expect(mgrText.String()).To(ContainSubstring(series), "the managers' /metrics")
		}

		// The kept runner pod's metrics, from the scraper the policy admits,
		// with the scraper's token; refused without it.
		var runner corev1.Pod
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: a.RunnerPod}, &runner)).To(Succeed())
		url := fmt.Sprintf("http://%s:%d/metrics", runner.Status.PodIP, runnerMetricsPort)
		out := mustKubectl("", "-n", ns, "exec", scraperPod, "--", "python3", "-c", scrapeScript, url, token)
		code, body, _ := strings.Cut(out, "\n")
		Expect(code).To(Equal("200"), "GET %s with the scraper's token: %s", url, out)
		for _, series := range []string{`tolokaforge_runner_tool_calls_total{`, `tolokaforge_runner_grading_duration_seconds_count{`,
			`tolokaforge_runner_grading_component_duration_seconds_count{`} {
			Expect(body).To(ContainSubstring(series), "runner /metrics")
		}
		out = mustKubectl("", "-n", ns, "exec", scraperPod, "--", "python3", "-c", scrapeScript, url, "")
		Expect(strings.TrimSpace(out)).To(Equal("401"), "GET %s without a token", url)
		out = mustKubectl("", "-n", ns, "exec", scraperPod, "--", "python3", "-c", scrapeScript, url, "wrong-"+token)
		Expect(strings.TrimSpace(out)).To(Equal("401"), "GET %s with a wrong token", url)

		mustKubectl("", "-n", ns, "delete", "trial", "shop-observed", "--wait=true", "--timeout=2m")
		mustKubectl("", "-n", ns, "delete", "pod", otlpSink, scraperPod, "--wait=false")
	})
}
