package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pb "tolokaforge.io/operator/api/execagentpb"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	agentclient "tolokaforge.io/operator/runner/execagent/client"
	"tolokaforge.io/operator/test/nodecluster"
)

// The terminal benchmark measures what a terminal task (Harbor,
// Terminal-Bench) adds to a Trial: its commands go through the exec agent's
// gRPC instead of the API server's pod exec, every attempt starts a third
// pod (the task's image, the exec agent copied in by an init container),
// and a Campaign of such a task runs three pods per attempt.
//
// It runs after terminalSpecs, which leaves the Task termTask (a
// digest-pinned image in the node's registry, an oracle that passes) in
// termNamespace (Pod Security "baseline", granted to the manager).
const (
	termNamespace = "e2e-term"
	termTask      = "hello-harbor"
	// The bench's own pods carry these labels and none of the manager's:
	// no trial NetworkPolicy selects them and the manager's cache (pods
	// labelled managed-by=tolokaforge) never sees them.
	termBenchLabel = "e2e.tolokaforge.io/bench"
	termBenchValue = "terminal"
	// termAgentPort, termAgentDir and termAgentTokenEnv are the exec
	// agent's port, directory and token variable in controllers/environment.go.
	termAgentPort     = 7070
	termAgentDir      = "/.tolokaforge"
	termAgentTokenEnv = "TOLOKAFORGE_EXECAGENT_TOKEN"
	termTokenKey      = "token"
	termSecret        = "tbench-execagent"
	termCampaign      = "tbench"
	termMaxParallel   = 2
	termWarmup        = 10
)

// termBenchSizes are the benchmark's sizes: exec calls per path, pods per
// kind, Trials of the Campaign.
type termBenchSizes struct {
	exec, pods, trials int
}

// termSizes reads E2E_BENCH_EXEC, E2E_BENCH_TERMINAL_PODS and
// E2E_BENCH_TERMINAL_TRIALS (an unset variable keeps the default).
func termSizes(getenv func(string) string) (termBenchSizes, error) {
	s := termBenchSizes{exec: 200, pods: 8, trials: 20}
	for _, v := range []struct {
		name string
		dst  *int
		min  int
	}{{"E2E_BENCH_EXEC", &s.exec, 1}, {"E2E_BENCH_TERMINAL_PODS", &s.pods, 1}, {"E2E_BENCH_TERMINAL_TRIALS", &s.trials, 1}} {
		raw := getenv(v.name)
		if raw == "" {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(raw))
		if err != nil || n < v.min {
			return s, fmt.Errorf("%s=%q: want a whole number, at least %d", v.name, raw, v.min)
		}
		*v.dst = n
	}
	return s, nil
}

// taskEnvironmentImage is environment.image of a Task's spec.description.
func taskEnvironmentImage(description []byte) (string, error) {
	var d struct {
		TaskID      string `json:"task_id"`
		Environment *struct {
			Image string `json:"image"`
		} `json:"environment"`
	}
	if err := json.Unmarshal(description, &d); err != nil {
		return "", fmt.Errorf("task description: %w", err)
	}
	if d.Environment == nil {
		return "", fmt.Errorf("task %q has no environment: not a terminal task", d.TaskID)
	}
	if d.Environment.Image == "" {
		return "", fmt.Errorf("task %q: environment.image is empty (not built by `pack build`)", d.TaskID)
	}
	return d.Environment.Image, nil
}

// trialRunTimes is each Trial's start-to-finish (status.startTime to
// status.completionTime: whole seconds, as the API server stores times).
func trialRunTimes(trials []evalv1.Trial) ([]time.Duration, error) {
	out := make([]time.Duration, 0, len(trials))
	for _, t := range trials {
		if t.Status.StartTime == nil || t.Status.CompletionTime == nil {
			return nil, fmt.Errorf("Trial %s has no startTime or completionTime: %+v", t.Name, t.Status)
		}
		out = append(out, t.Status.CompletionTime.Sub(t.Status.StartTime.Time))
	}
	return out, nil
}

// durRatio is a/b to two decimals, "n/a" without a b.
func durRatio(a, b time.Duration) string {
	if b <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", float64(a)/float64(b))
}

// termBenchResult is what the terminal benchmark measured.
type termBenchResult struct {
	image, execProtocol  string
	agentExec, apiExec   []time.Duration // per call
	envReady, pauseReady []time.Duration // create-to-Ready per pod
	trials, maxParallel  int
	campaignWall         time.Duration
	trialRun             []time.Duration
}

func (r termBenchResult) table() string {
	var sb strings.Builder
	ms := func(d time.Duration) string {
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + " ms"
	}
	w := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "exec of `true` (%d calls each, interleaved)\texec agent gRPC\tAPI server exec (%s)\tAPI / agent\t\n",
		len(r.agentExec), r.execProtocol)
	for _, q := range []float64{0.5, 0.95} {
		a, b := percentile(r.agentExec, q), percentile(r.apiExec, q)
		fmt.Fprintf(w, "p%.0f\t%s\t%s\t%s\t\n", q*100, ms(a), ms(b), durRatio(b, a))
	}
	_ = w.Flush()
	w = tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "pod create-to-Ready (%d each, image cached)\tenvironment pod\tpause pod\tenvironment / pause\t\n", len(r.envReady))
	for _, q := range []float64{0.5, 0.95} {
		a, b := percentile(r.envReady, q), percentile(r.pauseReady, q)
		fmt.Fprintf(w, "p%.0f\t%s\t%s\t%s\t\n", q*100, a.Round(time.Millisecond), b.Round(time.Millisecond), durRatio(a, b))
	}
	_ = w.Flush()
	w = tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	perMin, perSec := 0.0, 0.0
	if r.campaignWall > 0 {
		perMin = float64(r.trials) / r.campaignWall.Minutes()
		perSec = float64(r.trials) / r.campaignWall.Seconds()
	}
	fmt.Fprintf(w, "Campaign of %s (%d Trials, maxParallel %d, oracle)\t\t\n", termTask, r.trials, r.maxParallel)
	fmt.Fprintf(w, "wall\t%s\t\n", r.campaignWall.Round(100*time.Millisecond))
	fmt.Fprintf(w, "Trials/min\t%.2f\t\n", perMin)
	// The shop Campaign's rate is the "Trials/s" row, Campaign column, of
	// benchmarkSpecs' table (bench_test.go), printed and written to
	// E2E_BENCH_OUT by that spec, at maxParallel 8: compare by hand.
	fmt.Fprintf(w, "Trials/s (the shop Campaign's: the benchmark table's Trials/s)\t%.3f\t\n", perSec)
	for _, q := range []float64{0.5, 0.95} {
		fmt.Fprintf(w, "Trial start-to-finish p%.0f (whole seconds)\t%s\t\n", q*100, percentile(r.trialRun, q))
	}
	_ = w.Flush()
	return fmt.Sprintf("\nterminal benchmark on real nodes (single node, 2 cores; task image %s)\n%s", r.image, sb.String())
}

// appendBenchOut appends block to E2E_BENCH_OUT, when set.
func appendBenchOut(block string) error {
	out := os.Getenv("E2E_BENCH_OUT")
	if out == "" {
		return nil
	}
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(block)
	return errors.Join(err, f.Close())
}

// termBenchPod is what the bench pods share, environmentPod's: no service
// account token, no service links, RuntimeDefault seccomp, never restarted.
func termBenchPod(name, role string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: termNamespace,
			Labels: map[string]string{termBenchLabel: termBenchValue, "e2e.tolokaforge.io/role": role},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](5),
			SecurityContext: &corev1.PodSecurityContext{
				FSGroup:        ptr.To[int64](65532),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
		},
	}
}

// termBenchResources are the bench pods' main container's: a small request
// (a task's default, 1 CPU and 2 GiB as requests, might not fit beside
// what the suite left on a 2-core node), up to a core.
func termBenchResources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
	}
}

// termEnvPod is controllers/environment.go's environmentPod, with the
// bench's labels and resources: the exec agent installed from the manager's
// image by an init container, the task's image running it on the pod IP's
// port 7070, its token from a Secret, Ready when the port answers.
func termEnvPod(name, managerImage, taskImage string) *corev1.Pod {
	p := termBenchPod(name, "environment")
	mount := corev1.VolumeMount{Name: "execagent", MountPath: termAgentDir}
	p.Spec.InitContainers = []corev1.Container{{
		Name:            "install-execagent",
		Image:           managerImage,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{"/tolokaforge-execagent", "--install", termAgentDir + "/execagent"},
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			RunAsNonRoot:             ptr.To(true),
			RunAsUser:                ptr.To[int64](65532),
			RunAsGroup:               ptr.To[int64](65532),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		VolumeMounts: []corev1.VolumeMount{mount},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
		},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}}
	mount.ReadOnly = true
	p.Spec.Containers = []corev1.Container{{
		Name:            "environment",
		Image:           taskImage,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{termAgentDir + "/execagent", fmt.Sprintf("--listen=$(POD_IP):%d", termAgentPort)},
		Env: []corev1.EnvVar{
			{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}}},
			{Name: termAgentTokenEnv, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: termSecret}, Key: termTokenKey,
			}}},
		},
		Ports:     []corev1.ContainerPort{{Name: "execagent", ContainerPort: termAgentPort, Protocol: corev1.ProtocolTCP}},
		Resources: termBenchResources(),
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(termAgentPort)}},
			PeriodSeconds:    1,
			TimeoutSeconds:   2,
			FailureThreshold: 3,
		},
		SecurityContext: &corev1.SecurityContext{
			Privileged:     ptr.To(false),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		VolumeMounts:             []corev1.VolumeMount{mount},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}}
	p.Spec.Volumes = []corev1.Volume{{Name: "execagent", VolumeSource: corev1.VolumeSource{
		EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("64Mi"))},
	}}}
	return p
}

// termPausePod is the baseline: the least a pod can be (the node's pause
// image, imported by `cluster up`; no init container, no probe).
func termPausePod(name string) *corev1.Pod {
	p := termBenchPod(name, "pause")
	p.Spec.Containers = []corev1.Container{{
		Name:            "pause",
		Image:           nodecluster.PauseImage,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Resources:       termBenchResources(),
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			RunAsNonRoot:             ptr.To(true),
			RunAsUser:                ptr.To[int64](65532),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}}
	return p
}

// readyWatch records when a pod watch first showed each bench pod Ready.
type readyWatch struct {
	mu    sync.Mutex
	ready map[string]time.Time // pod name (with its UID) -> first seen Ready
}

func (rw *readyWatch) start(cs kubernetes.Interface, stop chan struct{}) error {
	rw.ready = map[string]time.Time{}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(termNamespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = termBenchLabel + "=" + termBenchValue }))
	inf := f.Core().V1().Pods().Informer()
	observe := func(o interface{}) {
		now := time.Now()
		p, ok := o.(*corev1.Pod)
		if !ok {
			return
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				key := p.Name + "/" + string(p.UID)
				rw.mu.Lock()
				if _, seen := rw.ready[key]; !seen {
					rw.ready[key] = now
				}
				rw.mu.Unlock()
			}
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    observe,
		UpdateFunc: func(_, o interface{}) { observe(o) },
	}); err != nil {
		return err
	}
	f.Start(stop)
	if !cache.WaitForCacheSync(stop, inf.HasSynced) {
		return fmt.Errorf("pod informer of %s did not sync", termNamespace)
	}
	return nil
}

func (rw *readyWatch) readyAt(p *corev1.Pod) (time.Time, bool) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	t, ok := rw.ready[p.Name+"/"+string(p.UID)]
	return t, ok
}

// createReady creates pod and returns its create-to-Ready (from just before
// the create call to the watch event that showed it Ready). benchProbe
// (bench_test.go) does not fit: it watches the namespace e2e and needs the
// cluster's cgroups and state.
func (rw *readyWatch) createReady(ctx context.Context, pod *corev1.Pod) time.Duration {
	GinkgoHelper()
	start := time.Now()
	Expect(k8s.Create(ctx, pod)).To(Succeed())
	var at, checked time.Time
	Eventually(func() error {
		var ok bool
		if at, ok = rw.readyAt(pod); ok {
			return nil
		}
		// The watch times it; a GET a second (not at every poll, which
		// would load the API server being measured) notices a pod that
		// ended.
		if time.Since(checked) < time.Second {
			return fmt.Errorf("pod %s not Ready yet", pod.Name)
		}
		checked = time.Now()
		var got corev1.Pod
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(pod), &got); err != nil {
			return err
		}
		if got.Status.Phase == corev1.PodFailed || got.Status.Phase == corev1.PodSucceeded {
			return StopTrying(fmt.Sprintf("pod %s ended %s: %+v", pod.Name, got.Status.Phase, got.Status.ContainerStatuses))
		}
		return fmt.Errorf("pod %s not Ready: %s %+v", pod.Name, got.Status.Phase, got.Status.Conditions)
	}).WithTimeout(3 * time.Minute).WithPolling(20 * time.Millisecond).Should(Succeed())
	return at.Sub(start)
}

// deletePodGone deletes a pod and waits until it is gone, so the next one
// meets an idle node.
func deletePodGone(ctx context.Context, pod *corev1.Pod) {
	GinkgoHelper()
	if err := k8s.Delete(ctx, pod); err != nil && !apierrors.IsNotFound(err) {
		Expect(err).NotTo(HaveOccurred())
	}
	Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{}))
	}).WithTimeout(2*time.Minute).WithPolling(100*time.Millisecond).Should(BeTrue(), "pod %s deleted", pod.Name)
}

// apiExecutors are kubectl's: a WebSocket executor, falling back to SPDY
// when the server refuses the upgrade. The WebSocket one is returned alone
// too, to tell which protocol served.
func apiExecutors(cfg *rest.Config, cs kubernetes.Interface, pod, container string, cmd []string) (fallback, ws remotecommand.Executor, err error) {
	req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(termNamespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: cmd, Stdout: true, Stderr: true}, clientgoscheme.ParameterCodec)
	spdy, err := remotecommand.NewSPDYExecutor(cfg, "POST", req.URL())
	if err != nil {
		return nil, nil, err
	}
	// WebSocket needs GET (RFC 6455 4.1), as kubectl says.
	ws, err = remotecommand.NewWebSocketExecutor(cfg, "GET", req.URL().String())
	if err != nil {
		return nil, nil, err
	}
	fallback, err = remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	return fallback, ws, err
}

// terminalBenchSpecs registers the terminal benchmark inside the suite's
// Ordered container, right after terminalSpecs (which leaves the Task it
// measures).
func terminalBenchSpecs() {
	It("measures a terminal task: exec agent against API server exec, the environment pod's start, a Campaign", func() {
		sizes, err := termSizes(os.Getenv)
		Expect(err).NotTo(HaveOccurred())
		managerImage := os.Getenv("E2E_IMAGE")
		Expect(managerImage).NotTo(BeEmpty(), "E2E_IMAGE names the manager's image, whose exec agent the init container installs")
		ctx := context.Background()
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		Expect(err).NotTo(HaveOccurred())
		cs, err := kubernetes.NewForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())

		var tk evalv1.Task
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: termNamespace, Name: termTask}, &tk)).To(Succeed(),
			"terminalSpecs leaves the Task %s/%s", termNamespace, termTask)
		image, err := taskEnvironmentImage(tk.Spec.Description.Raw)
		Expect(err).NotTo(HaveOccurred())
		res := termBenchResult{image: image, trials: sizes.trials, maxParallel: termMaxParallel}

		stop := make(chan struct{})
		defer close(stop)
		var rw readyWatch
		Expect(rw.start(cs, stop)).To(Succeed())

		// The exec agent's token, as the manager's attempt Secret holds it.
		raw := make([]byte, 32)
		_, err = rand.Read(raw)
		Expect(err).NotTo(HaveOccurred())
		token := hex.EncodeToString(raw)
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: termSecret, Namespace: termNamespace, Labels: map[string]string{termBenchLabel: termBenchValue}},
			Data:       map[string][]byte{termTokenKey: []byte(token)},
		}
		Expect(k8s.Create(ctx, secret)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, secret))).To(Succeed())
		})
		// Whatever a failure leaves: the bench pods, by label.
		DeferCleanup(func(ctx SpecContext) {
			Expect(k8s.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(termNamespace),
				client.MatchingLabels{termBenchLabel: termBenchValue})).To(Succeed())
			Eventually(func() int {
				var left corev1.PodList
				_ = k8s.List(ctx, &left, client.InNamespace(termNamespace), client.MatchingLabels{termBenchLabel: termBenchValue})
				return len(left.Items)
			}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(BeZero())
		})

		// 1. Exec round trip: one environment pod, `true` through the exec
		// agent and `bash -c true` through the API server, in rounds.
		pod := termEnvPod("tbench-exec", managerImage, image)
		ready := rw.createReady(ctx, pod)
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
		Expect(pod.Status.PodIP).NotTo(BeEmpty())
		GinkgoWriter.Printf("environment pod %s Ready in %s (first: the image may have been pulled), IP %s\n",
			pod.Name, ready.Round(time.Millisecond), pod.Status.PodIP)

		agent, err := agentclient.Dial(fmt.Sprintf("%s:%d", pod.Status.PodIP, termAgentPort), agentclient.Options{Token: token})
		Expect(err).NotTo(HaveOccurred())
		defer func() { _ = agent.Close() }() // closed below; again on a failure
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		Expect(agent.WaitReady(wctx)).To(Succeed())
		cancel()
		agentExec := func() time.Duration {
			GinkgoHelper()
			start := time.Now()
			resp, err := agent.Exec(ctx, &pb.ExecRequest{Command: "true", TimeoutMs: 10000})
			d := time.Since(start)
			Expect(err).NotTo(HaveOccurred())
			Expect(resp.GetExitCode()).To(BeZero(), "exec agent: `true` exited %d %s: %s", resp.GetExitCode(), resp.GetSignal(), resp.GetStderr())
			return d
		}
		apiExec, ws, err := apiExecutors(cfg, cs, pod.Name, "environment", []string{"bash", "-c", "true"})
		Expect(err).NotTo(HaveOccurred())
		streams := remotecommand.StreamOptions{Stdout: io.Discard, Stderr: io.Discard}
		res.execProtocol = "websocket"
		if err := ws.StreamWithContext(ctx, streams); err != nil {
			res.execProtocol = "spdy"
			GinkgoWriter.Printf("API server exec over WebSocket failed (%v): SPDY serves it\n", err)
		}
		viaAPI := func() time.Duration {
			GinkgoHelper()
			start := time.Now()
			err := apiExec.StreamWithContext(ctx, streams)
			d := time.Since(start)
			Expect(err).NotTo(HaveOccurred(), "API server exec of bash -c true")
			return d
		}
		for range termWarmup {
			agentExec()
			viaAPI()
		}
		for i := range sizes.exec {
			// Each round runs both, the order alternating, so neither path
			// always meets the other's aftermath.
			if i%2 == 0 {
				res.agentExec = append(res.agentExec, agentExec())
				res.apiExec = append(res.apiExec, viaAPI())
			} else {
				res.apiExec = append(res.apiExec, viaAPI())
				res.agentExec = append(res.agentExec, agentExec())
			}
		}
		Expect(agent.Close()).To(Succeed())
		deletePodGone(ctx, pod)

		// 2. Create-to-Ready, images cached: environment pods against pause
		// pods, alternating, each gone before the next is created.
		for i := range sizes.pods {
			env := termEnvPod(fmt.Sprintf("tbench-env-%02d", i), managerImage, image)
			res.envReady = append(res.envReady, rw.createReady(ctx, env))
			deletePodGone(ctx, env)
			pause := termPausePod(fmt.Sprintf("tbench-pause-%02d", i))
			res.pauseReady = append(res.pauseReady, rw.createReady(ctx, pause))
			deletePodGone(ctx, pause)
		}

		// 3. A Campaign of the terminal task with the oracle: three pods an
		// attempt (DB service, runner, environment).
		c := oracleCampaign(termNamespace, termCampaign, int32(sizes.trials), int32(termMaxParallel), nil, termTask)
		DeferCleanup(func(ctx SpecContext) {
			var trials evalv1.TrialList
			_ = k8s.List(ctx, &trials, client.InNamespace(termNamespace), client.MatchingLabels{evalv1.LabelCampaign: c.Name})
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, c, client.PropagationPolicy(metav1.DeletePropagationBackground)))).To(Succeed())
			Expect(k8s.DeleteAllOf(ctx, &evalv1.Trial{}, client.InNamespace(termNamespace),
				client.MatchingLabels{evalv1.LabelCampaign: c.Name})).To(Succeed())
			Eventually(func() int {
				var left evalv1.TrialList
				_ = k8s.List(ctx, &left, client.InNamespace(termNamespace), client.MatchingLabels{evalv1.LabelCampaign: c.Name})
				return len(left.Items)
			}).WithTimeout(3*time.Minute).WithPolling(time.Second).Should(BeZero(), "the Campaign's Trials are deleted")
			for _, t := range trials.Items {
				Eventually(func() int {
					var left corev1.PodList
					_ = k8s.List(ctx, &left, client.InNamespace(termNamespace),
						client.MatchingLabels{evalv1.LabelTrial: evalv1.LabelValue(t.Name)})
					return len(left.Items)
				}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(BeZero(), "the pods of Trial %s are deleted", t.Name)
			}
		})
		start := time.Now()
		Expect(k8s.Create(ctx, c)).To(Succeed())
		Eventually(func() (string, error) {
			var got evalv1.Campaign
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(c), &got); err != nil {
				return "", err
			}
			n := got.Status.Counts
			s := fmt.Sprintf("passed=%d failed=%d infra=%d invalid=%d", n.Passed, n.Failed, n.InfraFailed, n.Invalid)
			if n.Failed+n.InfraFailed+n.Invalid > 0 {
				return s, StopTrying("a Trial of the terminal Campaign did not pass: " + s)
			}
			return s, nil
		}).WithTimeout(time.Duration(sizes.trials)*40*time.Second + 5*time.Minute).WithPolling(500 * time.Millisecond).
			Should(Equal(fmt.Sprintf("passed=%d failed=0 infra=0 invalid=0", sizes.trials)))
		res.campaignWall = time.Since(start)
		var trials evalv1.TrialList
		Expect(k8s.List(ctx, &trials, client.InNamespace(termNamespace), client.MatchingLabels{evalv1.LabelCampaign: c.Name})).To(Succeed())
		Expect(trials.Items).To(HaveLen(sizes.trials))
		for _, t := range trials.Items {
			Expect(t.Status.Phase).To(Equal(evalv1.PhasePassed), "Trial %s: %+v", t.Name, t.Status.Attempts)
		}
		res.trialRun, err = trialRunTimes(trials.Items)
		Expect(err).NotTo(HaveOccurred())

		table := res.table()
		GinkgoWriter.Print(table)
		Expect(appendBenchOut(table)).To(Succeed())
		Expect(res.agentExec).To(HaveLen(sizes.exec))
		Expect(res.apiExec).To(HaveLen(sizes.exec))
		Expect(res.envReady).To(HaveLen(sizes.pods))
		Expect(res.pauseReady).To(HaveLen(sizes.pods))
	})
}
