package podsim

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func processGone(pid int) func() error {
	return func() error { return syscall.Kill(pid, 0) }
}

var _ = Describe("process mode", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("runs the binary on a unique loopback address and turns Ready only when the HTTP probe passes", func() {
		createPod(ns, "web", simImage, []string{"--listen=$(POD_IP):8080", "--ready-after=1h"},
			withProbe(corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromInt(8080)}}, 2))
		pod := runningPod(ns, "web")
		ip := pod.Status.PodIP
		Expect(netip.MustParseAddr(ip).IsLoopback()).To(BeTrue())
		Expect(ip).NotTo(Equal("127.0.0.1"))
		Expect(pod.Status.PodIPs).To(Equal([]corev1.PodIP{{IP: ip}}))
		Expect(pod.Status.HostIP).To(Equal("127.0.0.1"))
		Expect(pod.Status.StartTime).NotTo(BeNil())
		Expect(pod.Status.ContainerStatuses).To(HaveLen(1))
		cst := pod.Status.ContainerStatuses[0]
		Expect(cst.State.Running).NotTo(BeNil())
		Expect(*cst.Started).To(BeTrue())
		Expect(condition(pod, corev1.PodScheduled)).To(Equal(corev1.ConditionTrue))
		Expect(condition(pod, corev1.PodInitialized)).To(Equal(corev1.ConditionTrue))
		addrOf, ok := sim.PodAddr(ns, "web")
		Expect(ok).To(BeTrue())
		Expect(addrOf).To(Equal(ip))

		addr := net.JoinHostPort(ip, "8080")
		Expect(healthStatus(addr)).To(Equal(503))
		Consistently(getPod(ns, "web"), "600ms", "100ms").Should(BeReady(false))

		post(addr, "/ready")
		Eventually(getPod(ns, "web")).Should(And(BeReady(true), WithTransform(
			func(p *corev1.Pod) corev1.ConditionStatus { return condition(p, corev1.ContainersReady) }, Equal(corev1.ConditionTrue))))
		Expect(getPod(ns, "web")()).To(HaveField("Status.ContainerStatuses", ContainElement(HaveField("Ready", true))))

		post(addr, "/unready")
		Eventually(getPod(ns, "web")).Should(BeReady(false))
		Expect(getPod(ns, "web")()).To(HavePhase(corev1.PodRunning))
	})

	It("executes a gRPC health probe for the configured service", func() {
		createPod(ns, "grpc", simImage, []string{"--listen=$(POD_IP):8080", "--grpc-listen=$(POD_IP):9090", "--ready-after=1h"},
			withProbe(corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9090, Service: new("sim.Runner")}}, 1))
		pod := runningPod(ns, "grpc")
		Consistently(getPod(ns, "grpc"), "600ms", "100ms").Should(BeReady(false))
		post(net.JoinHostPort(pod.Status.PodIP, "8080"), "/ready")
		Eventually(getPod(ns, "grpc")).Should(BeReady(true))
	})

	It("executes a TCP probe", func() {
		createPod(ns, "tcp", simImage, []string{"--listen=$(POD_IP):8080"},
			withProbe(corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt(8080)}}, 1))
		Eventually(getPod(ns, "tcp")).Should(And(HavePhase(corev1.PodRunning), BeReady(true)))
	})

	DescribeTable("reports the exit code when the process ends",
		func(code string, phase corev1.PodPhase, exitCode int32, reason string) {
			createPod(ns, "exit", simImage, []string{"--exit-code=" + code})
			Eventually(getPod(ns, "exit")).Should(HavePhase(phase))
			p, err := getPod(ns, "exit")()
			Expect(err).NotTo(HaveOccurred())
			t := terminated(p)
			Expect(t).NotTo(BeNil())
			Expect(t.ExitCode).To(Equal(exitCode))
			Expect(t.Reason).To(Equal(reason))
			Expect(t.FinishedAt.IsZero()).To(BeFalse())
			Expect(p).To(BeReady(false))
			Expect(p.Status.ContainerStatuses[0].Ready).To(BeFalse())
			_, ok := sim.PodAddr(ns, "exit")
			Expect(ok).To(BeFalse(), "address released after exit")
		},
		Entry("exit 3 is Failed", "3", corev1.PodFailed, int32(3), "Error"),
		Entry("exit 0 is Succeeded", "0", corev1.PodSucceeded, int32(0), "Completed"),
	)

	It("Kill injects pod loss: SIGKILL, Failed with exit code 137", func() {
		createPod(ns, "victim", simImage, []string{"--listen=$(POD_IP):8080"})
		pod := runningPod(ns, "victim")
		info := fetchInfo(net.JoinHostPort(pod.Status.PodIP, "8080"))
		Expect(sim.Kill(ns, "victim")).To(Succeed())
		Expect(processGone(info.PID)()).To(MatchError(syscall.ESRCH), "Kill returns after the process is dead")
		Eventually(getPod(ns, "victim")).Should(And(HavePhase(corev1.PodFailed),
			WithTransform(terminated, HaveField("ExitCode", int32(137)))))
		Expect(sim.Kill(ns, "victim")).To(MatchError(errNotRunning))
		Expect(sim.Kill(ns, "nobody")).To(MatchError(errUnknownPod))
	})

	DescribeTable("deleting the pod kills the process",
		func(args []string) {
			createPod(ns, "doomed", simImage, append([]string{"--listen=$(POD_IP):8080"}, args...))
			pod := runningPod(ns, "doomed")
			info := fetchInfo(net.JoinHostPort(pod.Status.PodIP, "8080"))
			Expect(sim.Running()).To(Equal(1))
			Expect(cs.CoreV1().Pods(ns).Delete(context.Background(), "doomed", metav1.DeleteOptions{})).To(Succeed())
			Eventually(processGone(info.PID)).Should(MatchError(syscall.ESRCH))
			Eventually(sim.Running).Should(BeZero())
			Eventually(func() bool { _, ok := sim.PodAddr(ns, "doomed"); return ok }).Should(BeFalse())
		},
		Entry("SIGTERM is enough", nil),
		Entry("SIGKILL after the grace period when SIGTERM is ignored", []string{"--ignore-sigterm"}),
	)

	It("finishes graceful deletion of a bound pod by force-deleting it after the kill", func() {
		createPod(ns, "bound", simImage, []string{"--listen=$(POD_IP):8080"}, func(p *corev1.Pod) {
			p.Spec.NodeName = nodeName
			p.Spec.TerminationGracePeriodSeconds = new(int64(600))
		})
		pod := runningPod(ns, "bound")
		info := fetchInfo(net.JoinHostPort(pod.Status.PodIP, "8080"))
		Expect(cs.CoreV1().Pods(ns).Delete(context.Background(), "bound", metav1.DeleteOptions{})).To(Succeed())
		// Without kubelet's part the pod would linger for its 600s grace.
		Eventually(func() bool { _, err := getPod(ns, "bound")(); return apierrors.IsNotFound(err) }).Should(BeTrue())
		Expect(processGone(info.PID)()).To(MatchError(syscall.ESRCH))
	})

	It("expands $(VAR) in args and gives the process the pod's environment only", func() {
		_, err := cs.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "llm"}, Data: map[string][]byte{"key": []byte("sk-sentinel")},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = cs.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Data: map[string]string{"mode": "fast", "level": "3"},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		createPod(ns, "envy", simImage, []string{"--listen=$(POD_IP):8080", "$(POD_NAME)-$(UNDEFINED)", "$$(POD_NAME)"},
			withEnv(
				corev1.EnvVar{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				corev1.EnvVar{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
				corev1.EnvVar{Name: "ADDR", Value: "$(POD_IP):8080"},
				corev1.EnvVar{Name: "API_KEY", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "llm"}, Key: "key"}}},
				corev1.EnvVar{Name: "MODE", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "mode"}}},
				corev1.EnvVar{Name: "OPTIONAL", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Key: "k", Optional: new(true)}}},
			),
			func(p *corev1.Pod) {
				p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{Prefix: "CFG_",
					ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}
			})
		pod := runningPod(ns, "envy")
		ip := pod.Status.PodIP
		info := fetchInfo(net.JoinHostPort(ip, "8080"))
		Expect(info.Args).To(Equal([]string{"--listen=" + ip + ":8080", "envy-$(UNDEFINED)", "$(POD_NAME)"}))
		env := envMap(info.Env)
		Expect(env).To(HaveKeyWithValue("POD_IP", ip))
		Expect(env).To(HaveKeyWithValue("POD_NAME", "envy"))
		Expect(env).To(HaveKeyWithValue("POD_NAMESPACE", ns))
		Expect(env).To(HaveKeyWithValue("ADDR", ip+":8080"))
		Expect(env).To(HaveKeyWithValue("API_KEY", "sk-sentinel"))
		Expect(env).To(HaveKeyWithValue("MODE", "fast"))
		Expect(env).To(HaveKeyWithValue("CFG_mode", "fast"))
		Expect(env).To(HaveKeyWithValue("CFG_level", "3"))
		Expect(env).To(HaveKeyWithValue("HOSTNAME", "envy"))
		Expect(env).To(HaveKeyWithValue("HOME", info.Cwd))
		Expect(env).To(HaveKeyWithValue("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"))
		Expect(env).NotTo(HaveKey("OPTIONAL"))
		Expect(env).NotTo(HaveKey("PODSIM_TEST_LEAK"))
	})

	It("keeps a pod Pending with CreateContainerConfigError until its Secret exists", func() {
		createPod(ns, "waiting", simImage, []string{"--listen=$(POD_IP):8080"}, withEnv(corev1.EnvVar{Name: "K",
			ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "late"}, Key: "k"}}}))
		Eventually(func(g Gomega) {
			p, err := getPod(ns, "waiting")()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p).To(HavePhase(corev1.PodPending))
			g.Expect(p.Status.ContainerStatuses).To(HaveLen(1))
			w := p.Status.ContainerStatuses[0].State.Waiting
			g.Expect(w).NotTo(BeNil())
			g.Expect(w.Reason).To(Equal("CreateContainerConfigError"))
			g.Expect(w.Message).To(Equal(`container "main" env[1] K: secret "late" not found`))
		}).Should(Succeed())
		Expect(sim.Running()).To(BeZero())
		_, err := cs.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "late"}, Data: map[string][]byte{"k": []byte("v")},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		runningPod(ns, "waiting")
	})

	It("leaves a pod with an unmapped image Pending with ErrImagePull", func() {
		createPod(ns, "noimg", unmappedImage, []string{"--listen=$(POD_IP):8080"})
		Eventually(func(g Gomega) {
			p, err := getPod(ns, "noimg")()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p).To(HavePhase(corev1.PodPending))
			g.Expect(p.Status.ContainerStatuses).To(HaveLen(1))
			w := p.Status.ContainerStatuses[0].State.Waiting
			g.Expect(w).NotTo(BeNil())
			g.Expect(w.Reason).To(Equal("ErrImagePull"))
			g.Expect(w.Message).To(ContainSubstring(`no binary mapped for image "podsim-test/unmapped:1"`))
		}).Should(Succeed())
	})

	It("replaces the process when a pod is recreated under the same name", func() {
		createPod(ns, "phoenix", simImage, []string{"--listen=$(POD_IP):8080"})
		old := runningPod(ns, "phoenix")
		oldInfo := fetchInfo(net.JoinHostPort(old.Status.PodIP, "8080"))
		Expect(cs.CoreV1().Pods(ns).Delete(context.Background(), "phoenix", metav1.DeleteOptions{})).To(Succeed())
		Eventually(func() bool { _, err := getPod(ns, "phoenix")(); return apierrors.IsNotFound(err) }).Should(BeTrue())
		created := createPod(ns, "phoenix", simImage, []string{"--listen=$(POD_IP):8080"})
		Expect(created.UID).NotTo(Equal(old.UID))
		pod := runningPod(ns, "phoenix")
		info := fetchInfo(net.JoinHostPort(pod.Status.PodIP, "8080"))
		Expect(info.PID).NotTo(Equal(oldInfo.PID))
		Eventually(processGone(oldInfo.PID)).Should(MatchError(syscall.ESRCH))
	})

	It("marks a pod Running elsewhere (simulator restart) as Failed with ContainerStatusUnknown", func() {
		// Created without our label so the simulator ignores it until the
		// status claims a running container.
		p, err := cs.CoreV1().Pods(ns).Create(context.Background(), &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "orphan"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: simImage}}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		p.Status.Phase = corev1.PodRunning
		p.Status.PodIP = "127.0.200.1"
		p.Status.PodIPs = []corev1.PodIP{{IP: "127.0.200.1"}}
		_, err = cs.CoreV1().Pods(ns).UpdateStatus(context.Background(), p, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = cs.CoreV1().Pods(ns).Patch(context.Background(), "orphan", types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"app.kubernetes.io/managed-by":"tolokaforge"}}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(getPod(ns, "orphan")).Should(And(HavePhase(corev1.PodFailed), WithTransform(terminated, And(
			HaveField("ExitCode", int32(137)), HaveField("Reason", "ContainerStatusUnknown")))))
		Expect(sim.Running()).To(BeZero())
	})
})

var _ = Describe("in-process mode", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("runs the function with the expanded args, pod info and a cancellable context", func() {
		createPod(ns, "inproc", inprocImage, []string{"serve", "--listen=$(POD_IP):7000"},
			withProbe(corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt(7000)}}, 1))
		pod := runningPod(ns, "inproc")
		ip := pod.Status.PodIP
		Consistently(getPod(ns, "inproc"), "500ms", "100ms").Should(BeReady(false))
		inproc.setReady("inproc", true)
		Eventually(getPod(ns, "inproc")).Should(BeReady(true))

		pi, ok := inproc.podInfo("inproc")
		Expect(ok).To(BeTrue())
		Expect(pi).To(And(HaveField("Namespace", ns), HaveField("Name", "inproc"), HaveField("IP", ip), HaveField("UID", string(pod.UID))))
		Expect(pi.Env).To(HaveKeyWithValue("POD_IP", ip))
		args, _ := inproc.args.Load("inproc")
		Expect(args).To(Equal([]string{"--listen=" + ip + ":7000"}))

		Expect(sim.Kill(ns, "inproc")).To(Succeed())
		Expect(errors.Is(inproc.causeOf("inproc"), errKilled)).To(BeTrue())
		Eventually(getPod(ns, "inproc")).Should(And(HavePhase(corev1.PodFailed), BeReady(false),
			WithTransform(terminated, HaveField("ExitCode", int32(137)))))
	})

	It("is Ready at once without a probe and gives concurrent pods distinct addresses", func() {
		createPod(ns, "a", inprocImage, []string{"serve", "--listen=$(POD_IP):7000", "--ready"})
		createPod(ns, "b", inprocImage, []string{"serve", "--listen=$(POD_IP):7000", "--ready"})
		Eventually(getPod(ns, "a")).Should(And(HavePhase(corev1.PodRunning), BeReady(true)))
		Eventually(getPod(ns, "b")).Should(And(HavePhase(corev1.PodRunning), BeReady(true)))
		a, _ := getPod(ns, "a")()
		b, _ := getPod(ns, "b")()
		Expect(a.Status.PodIP).NotTo(Equal(b.Status.PodIP))
		// Both bound the same port, each on its own address.
		Expect(healthStatus(net.JoinHostPort(a.Status.PodIP, "7000"))).To(Equal(200))
		Expect(healthStatus(net.JoinHostPort(b.Status.PodIP, "7000"))).To(Equal(200))
		Expect(sim.Running()).To(Equal(2))

		Expect(cs.CoreV1().Pods(ns).Delete(context.Background(), "a", metav1.DeleteOptions{})).To(Succeed())
		Eventually(func() error { _, err := healthStatus(net.JoinHostPort(a.Status.PodIP, "7000")); return err }).Should(HaveOccurred())
		Eventually(func() error { return inproc.causeOf("a") }).Should(MatchError(errTerminated))
		Eventually(sim.Running).Should(Equal(1))
	})

	It("costs one status write to start a pod without a probe, none while it idles, one when it ends", func() {
		before := sim.StatusWrites()
		createPod(ns, "quiet", inprocImage, []string{"serve", "--listen=$(POD_IP):7000", "--ready"})
		Eventually(getPod(ns, "quiet")).Should(And(HavePhase(corev1.PodRunning), BeReady(true)))
		// The counter moves when the update call returns, which can be just
		// after the API server already serves the new status.
		Eventually(func() int64 { return sim.StatusWrites() - before }).Should(Equal(int64(1)))
		Consistently(func() int64 { return sim.StatusWrites() - before }, "500ms", "50ms").Should(Equal(int64(1)))
		Expect(sim.Kill(ns, "quiet")).To(Succeed())
		Eventually(getPod(ns, "quiet")).Should(HavePhase(corev1.PodFailed))
		// As above: the API server may serve Failed before the update call
		// that wrote it has returned and counted.
		Eventually(func() int64 { return sim.StatusWrites() - before }).Should(Equal(int64(2)))
		Consistently(func() int64 { return sim.StatusWrites() - before }, "300ms", "50ms").Should(Equal(int64(2)))
	})

	It("reports an error's exit code and message", func() {
		createPod(ns, "failing", inprocImage, []string{"exit", "--code=5"}, func(p *corev1.Pod) {
			p.Spec.Containers[0].Command = []string{"/tolokaforge"}
		})
		Eventually(getPod(ns, "failing")).Should(And(HavePhase(corev1.PodFailed), WithTransform(terminated, And(
			HaveField("ExitCode", int32(5)), HaveField("Reason", "Error"), HaveField("Message", "exiting as asked: exit 5")))))
	})
})

var _ = Describe("Run", func() {
	It("kills every container when its context ends", func() {
		ns := newNamespace()
		label := map[string]string{"podsim-test": "shutdown"}
		second, err := New(Config{Selector: "podsim-test=shutdown", Namespace: ns,
			Binaries: map[string]string{simImage: simserverBin}, KillGrace: killGrace,
			FirstIP: netip.MustParseAddr("127.1.0.2"), LastIP: netip.MustParseAddr("127.1.0.254")}, restCfg, GinkgoLogr)
		Expect(err).NotTo(HaveOccurred())
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- second.Run(ctx) }()
		DeferCleanup(cancel)

		_, err = cs.CoreV1().Pods(ns).Create(context.Background(), &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "short-lived", Labels: label},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: simImage,
				Args: []string{"--listen=$(POD_IP):8080"}, Env: []corev1.EnvVar{podIPEnv()}}}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		pod := runningPod(ns, "short-lived")
		Expect(pod.Status.PodIP).To(Equal("127.1.0.2"))
		info := fetchInfo(net.JoinHostPort(pod.Status.PodIP, "8080"))
		Expect(second.Running()).To(Equal(1))
		Expect(sim.Running()).To(BeZero(), "the main simulator ignores pods outside its selector")

		cancel()
		Eventually(done).WithTimeout(10 * time.Second).Should(Receive(BeNil()))
		Expect(processGone(info.PID)()).To(MatchError(syscall.ESRCH))
		Expect(second.Running()).To(BeZero())
		Expect(second.Run(context.Background())).To(MatchError(ContainSubstring("Run called twice")))
	})
})
