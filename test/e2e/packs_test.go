package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tolokaforge.io/operator/api/packfiles"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// foodDelivery is food_delivery_2's golden task: 23 tools served by a Python
// MCP server whose files travel in the pack's files bundle (a ConfigMap).
var foodDelivery = filepath.Join("api", "task", "pack", "testdata", "tolokaforge", "projects", "food_delivery_2", "tasks", "order_six_items_golden")

func getTrial(name string) *evalv1.Trial {
	GinkgoHelper()
	var t evalv1.Trial
	Expect(k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &t)).To(Succeed())
	return &t
}

func condition(t *evalv1.Trial, typ string) *metav1.Condition {
	for i := range t.Status.Conditions {
		if t.Status.Conditions[i].Type == typ {
			return &t.Status.Conditions[i]
		}
	}
	return nil
}

// pythonPackSpecs: a pack imported as the README tells a user (`tolokaforge
// pack import DIR | kubectl apply --server-side -f -`: a client-side apply
// refuses the Task, whose last-applied annotation would pass 256 KiB), run on
// the Python runner image the manager was given at install.
func pythonPackSpecs() {
	It("runs a Python pack from `pack import` on the Python runner image: the golden task Passes; an altered files digest ends Invalid naming it", func() {
		bin := os.Getenv("E2E_TOLOKAFORGE")
		Expect(bin).NotTo(BeEmpty(), "E2E_TOLOKAFORGE names the tolokaforge binary (make build)")
		cmd := exec.Command(bin, "pack", "import", filepath.Join(root, foodDelivery), "--namespace", ns)
		stream, err := cmd.Output()
		Expect(err).NotTo(HaveOccurred(), "pack import: %v", err)
		applied := mustKubectl(string(stream), "apply", "--server-side", "-f", "-", "-o", "name")
		var taskName, cmName string
		for _, l := range strings.Fields(applied) {
			switch {
			case strings.HasPrefix(l, "task.eval.tolokaforge.io/"):
				taskName = strings.TrimPrefix(l, "task.eval.tolokaforge.io/")
			case strings.HasPrefix(l, "configmap/") && !strings.HasSuffix(l, "-initial-state"):
				// The tables, each dict record with the synthetic key column, pass
				// the inline limit and travel in an initial-state ConfigMap too.
				cmName = strings.TrimPrefix(l, "configmap/")
			}
		}
		Expect(taskName).NotTo(BeEmpty(), "applied: %s", applied)
		Expect(cmName).To(MatchRegexp(`^` + taskName + `-files-[0-9a-f]+$`))
		var tk evalv1.Task
		Expect(k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: taskName}, &tk)).To(Succeed())
		Expect(tk.Spec.Files).NotTo(BeNil())
		Expect(tk.Spec.Files.ConfigMap).To(Equal(cmName))

		// The same files under a digest that is not theirs.
		tampered := &evalv1.Task{ObjectMeta: metav1.ObjectMeta{Name: taskName + "-tampered", Namespace: ns}, Spec: *tk.Spec.DeepCopy()}
		tampered.Spec.Files.Digest = packfiles.Digest([]byte("not the bundle"))
		Expect(tampered.Spec.Files.Digest).NotTo(Equal(tk.Spec.Files.Digest))
		Expect(k8s.Create(context.Background(), tampered)).To(Succeed())

		for name, task := range map[string]string{"fd-golden": taskName, "fd-tampered": tampered.Name} {
			tr := &evalv1.Trial{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Spec: evalv1.TrialSpec{
					TaskRef:       &evalv1.TaskReference{Name: task},
					Agent:         evalv1.ModelSpec{Provider: evalv1.ProviderOracle},
					UserSimulator: &evalv1.UserSimulatorSpec{Mode: evalv1.UserSimulatorScripted},
					RetryPolicy:   evalv1.RetryPolicy{MaxAttempts: 1},
					// Its runner pod is kept, to show which image ran it.
					KeepPodsAfterFinished: true,
				},
			}
			Expect(k8s.Create(context.Background(), tr)).To(Succeed())
		}

		Eventually(trialPhase("fd-golden")).WithTimeout(4*time.Minute).WithPolling(time.Second).
			Should(Equal(evalv1.PhasePassed), func() string { return describe(getTrial("fd-golden")) })
		t := getTrial("fd-golden")
		Expect(t.Status.Grade).NotTo(BeNil())
		Expect(t.Status.Grade.Score).To(Equal(1.0), describe(t))
		Expect(t.Status.Attempts).To(HaveLen(1))
		var runner corev1.Pod
		Expect(k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: t.Status.Attempts[0].RunnerPod}, &runner)).To(Succeed())
		Expect(runner.Spec.Containers[0].Image).To(Equal(os.Getenv("E2E_PYTHON_IMAGE")))
		// Kept pods hold their CPU requests (350m a Trial, on a node of
		// 2 cores): gone, the Campaign and the benchmark get them back.
		mustKubectl("", "-n", ns, "delete", "trial", "fd-golden", "--wait=true", "--timeout=2m")
		Eventually(func() int {
			var left corev1.PodList
			_ = k8s.List(context.Background(), &left, client.InNamespace(ns), client.MatchingLabels{evalv1.LabelTrial: "fd-golden"})
			return len(left.Items)
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(BeZero())

		Eventually(trialPhase("fd-tampered")).WithTimeout(time.Minute).WithPolling(time.Second).Should(Equal(evalv1.PhaseInvalid))
		t = getTrial("fd-tampered")
		Expect(t.Status.Attempts).To(BeEmpty(), "no attempt, no pod")
		failed := condition(t, evalv1.TrialFailed)
		Expect(failed).NotTo(BeNil(), describe(t))
		Expect(failed.Reason).To(Equal(evalv1.ReasonPackFilesInvalid))
		Expect(failed.Message).To(Equal(`task ` + tampered.Name + `: spec.files: configMap ` + ns + `/` + cmName +
			` key "files.tar": digest ` + tk.Spec.Files.Digest + ` does not match the Task's ` + tampered.Spec.Files.Digest))
		var pods corev1.PodList
		Expect(k8s.List(context.Background(), &pods, client.InNamespace(ns), client.MatchingLabels{evalv1.LabelTrial: "fd-tampered"})).To(Succeed())
		Expect(pods.Items).To(BeEmpty())
	})
}

// tauRetail is the project's tau-bench retail-shaped task: users keyed by user id
// without a user-id field, get_info() tool classes behind a registry script, no
// tools.json, JSONPath by key (examples/taubench_retail).
var tauRetail = filepath.Join("examples", "taubench_retail", "tasks", "cancel_pending_order")

// tauRetailSpecs follows pythonPackSpecs' pattern: the task imported as a user
// imports it and run by the oracle on the Python runner image.
func tauRetailSpecs() {
	It("runs the tau-bench retail-shaped task from `pack import`: a keyless dict table and JSONPath by key, Passed at 1.0", func() {
		bin := os.Getenv("E2E_TOLOKAFORGE")
		Expect(bin).NotTo(BeEmpty(), "E2E_TOLOKAFORGE names the tolokaforge binary (make build)")
		cmd := exec.Command(bin, "pack", "import", filepath.Join(root, tauRetail), "--namespace", ns)
		stream, err := cmd.Output()
		Expect(err).NotTo(HaveOccurred(), "pack import: %v", err)
		applied := mustKubectl(string(stream), "apply", "--server-side", "-f", "-", "-o", "name")
		var taskName string
		for _, l := range strings.Fields(applied) {
			if strings.HasPrefix(l, "task.eval.tolokaforge.io/") {
				taskName = strings.TrimPrefix(l, "task.eval.tolokaforge.io/")
			}
		}
		Expect(taskName).NotTo(BeEmpty(), "applied: %s", applied)
		tr := &evalv1.Trial{
			ObjectMeta: metav1.ObjectMeta{Name: "tau-retail", Namespace: ns},
			Spec: evalv1.TrialSpec{
				TaskRef:       &evalv1.TaskReference{Name: taskName},
				Agent:         evalv1.ModelSpec{Provider: evalv1.ProviderOracle},
				UserSimulator: &evalv1.UserSimulatorSpec{Mode: evalv1.UserSimulatorScripted},
				RetryPolicy:   evalv1.RetryPolicy{MaxAttempts: 1},
			},
		}
		Expect(k8s.Create(context.Background(), tr)).To(Succeed())
		Eventually(trialPhase("tau-retail")).WithTimeout(4*time.Minute).WithPolling(time.Second).
			Should(Equal(evalv1.PhasePassed), func() string { return describe(getTrial("tau-retail")) })
		t := getTrial("tau-retail")
		Expect(t.Status.Grade).NotTo(BeNil())
		Expect(t.Status.Grade.Score).To(Equal(1.0), describe(t))
		mustKubectl("", "-n", ns, "delete", "trial", "tau-retail", "--wait=true", "--timeout=2m")
	})
}

// hostilePython is a pack whose tool tries the runner pod's secrets and
// leaves a process behind (test/e2e/testdata/hostile-python).
var hostilePython = filepath.Join("test", "e2e", "testdata", "hostile-python", "tasks", "probe_the_runner")

// hostilePythonSpecs: issue 40's confinement on the real node. The Trial has a
// judge, so its runner pod mounts the judge's gateway key (--secrets-dir) as
// well as its auth token; the tool reads the runner's command line to find
// both, tries them and /proc/1/environ, and leaves a setsid'd double-forked
// child with an empty environment. The task's JSONPath checks pass only when
// every read was refused, and the kept pod is left with the runner alone.
func hostilePythonSpecs() {
	It("confines a hostile Python tool on the node: its reads of the judge key, the auth token and the runner's environ are refused, and nothing of it outlives the trial", func() {
		ctx := context.Background()
		bin := os.Getenv("E2E_TOLOKAFORGE")
		Expect(bin).NotTo(BeEmpty(), "E2E_TOLOKAFORGE names the tolokaforge binary (make build)")
		stream, err := exec.Command(bin, "pack", "import", filepath.Join(root, hostilePython), "--namespace", ns).Output()
		Expect(err).NotTo(HaveOccurred(), "pack import: %v", err)
		applied := mustKubectl(string(stream), "apply", "--server-side", "-f", "-", "-o", "name")
		var taskName string
		for _, l := range strings.Fields(applied) {
			if strings.HasPrefix(l, "task.eval.tolokaforge.io/") {
				taskName = strings.TrimPrefix(l, "task.eval.tolokaforge.io/")
			}
		}
		Expect(taskName).NotTo(BeEmpty(), "applied: %s", applied)
		// A judge is configured (never called: the task has no llm_judge), so the
		// runner pod holds the judge's gateway key for the tool to go after.
		Expect(k8s.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "hostile-judge", Namespace: ns,
				Annotations: map[string]string{evalv1.AnnotationAllowedBaseURLs: "http://judge.invalid/v1"}},
			Data: map[string][]byte{"api-key": []byte("sk-hostile-judge-key")},
		})).To(Succeed())
		key := &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "hostile-judge"}, Key: "api-key"}
		tr := &evalv1.Trial{
			ObjectMeta: metav1.ObjectMeta{Name: "hostile-tool", Namespace: ns},
			Spec: evalv1.TrialSpec{
				TaskRef:               &evalv1.TaskReference{Name: taskName},
				Agent:                 evalv1.ModelSpec{Provider: evalv1.ProviderOracle},
				UserSimulator:         &evalv1.UserSimulatorSpec{Mode: evalv1.UserSimulatorScripted},
				Judge:                 &evalv1.ModelSpec{Provider: evalv1.ProviderOpenAI, Model: "judge", BaseURL: "http://judge.invalid/v1", APIKeySecretRef: key},
				RetryPolicy:           evalv1.RetryPolicy{MaxAttempts: 1},
				KeepPodsAfterFinished: true,
			},
		}
		Expect(k8s.Create(ctx, tr)).To(Succeed())
		Eventually(trialPhase(tr.Name)).WithTimeout(4*time.Minute).WithPolling(time.Second).
			Should(BeElementOf(evalv1.PhasePassed, evalv1.PhaseFailed, evalv1.PhaseGradingFailed, evalv1.PhaseInfraFailed, evalv1.PhaseInvalid),
				func() string { return describe(getTrial(tr.Name)) })
		t := getTrial(tr.Name)
		GinkgoWriter.Printf("hostile tool trial: %s", describe(t))
		// Passed at 1.0 = every JSONPath check held: the survivor was started and
		// every read came back "denied".
		Expect(t.Status.Phase).To(Equal(evalv1.PhasePassed), describe(t))
		Expect(t.Status.Grade.Score).To(Equal(1.0), describe(t))
		conf := condition(t, evalv1.TrialConfined)
		Expect(conf).NotTo(BeNil(), describe(t))
		Expect(conf.Reason).To(Equal(evalv1.ReasonLandlock), describe(t))

		// The kept runner pod: its runner is PID 1 and the only process besides
		// the one listing them (the tool's survivor and its Python host are gone).
		pod := tr.Name + "-a1-" + evalv1.RoleRunner
		var p corev1.Pod
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: pod}, &p)).To(Succeed())
		python := ""
		for _, a := range p.Spec.Containers[0].Args {
			if v, ok := strings.CutPrefix(a, "--python="); ok {
				python = v
			}
		}
		Expect(python).NotTo(BeEmpty(), "the runner pod of a Python pack names its interpreter: %v", p.Spec.Containers[0].Args)
		list := `import os
me = os.getpid()
for pid in sorted(int(p) for p in os.listdir("/proc") if p.isdigit()):
    if pid == me:
        continue
    try:
        cmd = open("/proc/%d/cmdline" % pid, "rb").read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError as e:
        cmd = "?" + str(e)
    print(pid, cmd)
`
		out := mustKubectl("", "-n", ns, "exec", pod, "-c", evalv1.RoleRunner, "--", python, "-c", list)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		Expect(lines).To(HaveLen(1), "processes left in %s:\n%s", pod, out)
		Expect(lines[0]).To(MatchRegexp(`^1 \S*tolokaforge runner `), "processes left in %s:\n%s", pod, out)
		mustKubectl("", "-n", ns, "delete", "trial", tr.Name, "--wait=true", "--timeout=2m")
	})
}

// describe is a Trial's phase, conditions and attempts, for a failure message.
func describe(t *evalv1.Trial) string {
	var sb strings.Builder
	sb.WriteString("phase " + string(t.Status.Phase) + "\n")
	for _, c := range t.Status.Conditions {
		sb.WriteString("  " + c.Type + "=" + string(c.Status) + " " + c.Reason + ": " + c.Message + "\n")
	}
	for _, a := range t.Status.Attempts {
		sb.WriteString("  attempt " + string(a.Outcome) + "/" + a.Reason + ": " + a.Message + "\n")
	}
	if g := t.Status.Grade; g != nil {
		sb.WriteString("  grade reasons: " + g.Reasons + "\n")
	}
	return sb.String()
}
