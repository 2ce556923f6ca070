package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// ns is where the Trials run: granted to the manager, and enforcing the
// restricted Pod Security profile, so a runner or DB-service pod that asks
// for more than it needs is refused at admission.
const ns = "e2e"

func trialPhase(name string) func() evalv1.TrialPhase {
	return func() evalv1.TrialPhase {
		var t evalv1.Trial
		if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &t); err != nil {
			return evalv1.TrialPhase("get: " + err.Error())
		}
		return t.Status.Phase
	}
}

// grantNamespace creates namespace under Pod Security profile and grants it to
// the manager with config/namespace-grant, as docs/install.md tells a user.
func grantNamespace(namespace, profile string) {
	GinkgoHelper()
	mustKubectl("", "create", "namespace", namespace)
	mustKubectl("", "label", "namespace", namespace, "pod-security.kubernetes.io/enforce="+profile)
	dir := GinkgoT().TempDir()
	for _, f := range []string{"role.yaml", "role_binding.yaml", "kustomization.yaml"} {
		b, err := os.ReadFile(filepath.Join(root, "config", "namespace-grant", f))
		Expect(err).NotTo(HaveOccurred())
		s := string(b)
		if f == "kustomization.yaml" {
			s = strings.Replace(s, "namespace: tolokaforge-trials", "namespace: "+namespace, 1)
		}
		Expect(os.WriteFile(filepath.Join(dir, f), []byte(s), 0o644)).To(Succeed())
	}
	mustKubectl("", "apply", "-k", dir)
}

func sample(name string) string {
	GinkgoHelper()
	b, err := os.ReadFile(filepath.Join(root, "config", "samples", name))
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}

var _ = Describe("the operator on real nodes", Ordered, ContinueOnFailure, func() {
	It("installs from dist/install.yaml as the README tells a kind user, and the manager rolls out", func() {
		b, err := os.ReadFile(filepath.Join(root, "dist", "install.yaml"))
		Expect(err).NotTo(HaveOccurred(), "make release writes dist/install.yaml")
		manifest := string(b)
		if img := os.Getenv("E2E_IMAGE"); img != "" {
			Expect(manifest).To(ContainSubstring("image: "+img), "install.yaml names the image imported into the node")
		}
		mustKubectl(manifest, "apply", "-f", "-")
		// The Python runner image, named as config/manager's comment tells a
		// user to: the TOLOKAFORGE_PYTHON_IMAGE variable of the manager.
		py := os.Getenv("E2E_PYTHON_IMAGE")
		Expect(py).NotTo(BeEmpty(), "E2E_PYTHON_IMAGE names the image of `make image-python` imported into the node")
		mustKubectl("", "-n", "tolokaforge-system", "set", "env", "deploy/tolokaforge-manager", "TOLOKAFORGE_PYTHON_IMAGE="+py)
		mustKubectl("", "-n", "tolokaforge-system", "rollout", "status", "deploy/tolokaforge-manager", "--timeout=3m")
	})

	It("grants a namespace that enforces the restricted Pod Security profile", func() {
		grantNamespace(ns, "restricted")
	})

	It("runs the samples on runner and DB-service pods: the oracle Passes, the wrong golden path Fails", func() {
		for _, f := range []string{"configmap_shop_orders_02_state.yaml", "eval_v1alpha1_task_shop.yaml",
			"eval_v1alpha1_task_shop_wrong_golden.yaml", "eval_v1alpha1_trial_oracle.yaml",
			"eval_v1alpha1_trial_oracle_wrong_golden.yaml"} {
			mustKubectl(sample(f), "-n", ns, "apply", "-f", "-")
		}
		Eventually(trialPhase("shop-oracle")).WithTimeout(4 * time.Minute).WithPolling(time.Second).Should(Equal(evalv1.PhasePassed))
		Eventually(trialPhase("shop-oracle-wrong-golden")).WithTimeout(4 * time.Minute).WithPolling(time.Second).Should(Equal(evalv1.PhaseFailed))
		var t evalv1.Trial
		Expect(k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "shop-oracle"}, &t)).To(Succeed())
		Expect(t.Status.Grade).NotTo(BeNil())
		Expect(t.Status.Grade.Score).To(Equal(1.0))
	})

	It("keeps the pods of a keepPodsAfterFinished Trial, running under runc, with logs kubectl can read", func() {
		trial := strings.NewReplacer("name: shop-oracle\n", "name: shop-oracle-kept\n",
			"ttlSecondsAfterFinished: 86400", "keepPodsAfterFinished: true").Replace(sample("eval_v1alpha1_trial_oracle.yaml"))
		Expect(trial).To(ContainSubstring("keepPodsAfterFinished: true"))
		mustKubectl(trial, "-n", ns, "apply", "-f", "-")
		Eventually(trialPhase("shop-oracle-kept")).WithTimeout(4 * time.Minute).WithPolling(time.Second).Should(Equal(evalv1.PhasePassed))

		var pods corev1.PodList
		Expect(k8s.List(context.Background(), &pods, client.InNamespace(ns),
			client.MatchingLabels{evalv1.LabelTrial: "shop-oracle-kept"})).To(Succeed())
		roles := map[string]bool{}
		for _, p := range pods.Items {
			roles[p.Labels[evalv1.LabelRole]] = true
			out := mustKubectl("", "-n", ns, "logs", p.Name)
			Expect(out).NotTo(BeEmpty(), "kubectl logs %s", p.Name)
			Expect(p.Status.ContainerStatuses).NotTo(BeEmpty())
			for _, cs := range p.Status.ContainerStatuses {
				Expect(cs.ContainerID).To(HavePrefix("containerd://"))
				if sock := os.Getenv("E2E_CONTAINERD"); sock != "" {
					id := strings.TrimPrefix(cs.ContainerID, "containerd://")
					info, err := exec.Command("ctr", "--address", sock, "-n", "k8s.io", "containers", "info", id).Output()
					Expect(err).NotTo(HaveOccurred(), "ctr containers info %s", id)
					Expect(string(info)).To(ContainSubstring(`"io.containerd.runc.v2"`), "%s runs under runc", p.Name)
				}
			}
		}
		Expect(roles).To(HaveKey(string(evalv1.RoleRunner)))
		Expect(roles).To(HaveKey(string(evalv1.RoleDBService)))
		// Its pods hold 350m of the node's 2 cores of CPU requests: the
		// Campaign and the benchmark would run fewer Trials at a time.
		mustKubectl("", "-n", ns, "delete", "trial", "shop-oracle-kept", "--wait=true", "--timeout=2m")
		Eventually(func() int {
			var left corev1.PodList
			_ = k8s.List(context.Background(), &left, client.InNamespace(ns), client.MatchingLabels{evalv1.LabelTrial: "shop-oracle-kept"})
			return len(left.Items)
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(BeZero())
	})

	networkPolicySpecs()

	// Attempt faults: attempt 1's pod is broken as soon as its container
	// runs (before the manager registers the trial, so the attempt cannot
	// have passed already); the attempt ends InfraFailed and the retry passes.
	for _, fault := range []struct {
		desc, trial string
		role        string
		breakPod    func(p corev1.Pod, containerID string) error
	}{
		{"the runtime kills its runner container", "shop-oracle-killed", evalv1.RoleRunner,
			func(p corev1.Pod, id string) error {
				sock := os.Getenv("E2E_CONTAINERD")
				if sock == "" {
					return fmt.Errorf("E2E_CONTAINERD is not set: the runner is killed through containerd")
				}
				if out, err := exec.Command("ctr", "--address", sock, "-n", "k8s.io", "tasks", "kill", "-s", "SIGKILL", id).CombinedOutput(); err != nil {
					return fmt.Errorf("ctr tasks kill %s: %w: %s", id, err, out)
				}
				return nil
			}},
		{"its DB-service pod is deleted", "shop-oracle-db-deleted", evalv1.RoleDBService,
			func(p corev1.Pod, _ string) error {
				return k8s.Delete(context.Background(), &p)
			}},
	} {
		It("ends an attempt InfraFailed when "+fault.desc+", and the retry passes", func() {
			trial := strings.NewReplacer("name: shop-oracle\n", "name: "+fault.trial+"\n").Replace(sample("eval_v1alpha1_trial_oracle.yaml"))
			mustKubectl(trial, "-n", ns, "apply", "-f", "-")
			var broken string
			Eventually(func() error {
				var pods corev1.PodList
				if err := k8s.List(context.Background(), &pods, client.InNamespace(ns),
					client.MatchingLabels{evalv1.LabelTrial: fault.trial, evalv1.LabelRole: fault.role}); err != nil {
					return err
				}
				for _, p := range pods.Items {
					for _, cs := range p.Status.ContainerStatuses {
						if cs.State.Running != nil && cs.ContainerID != "" {
							if err := fault.breakPod(p, strings.TrimPrefix(cs.ContainerID, "containerd://")); err != nil {
								return StopTrying(err.Error())
							}
							broken = p.Name
							return nil
						}
					}
				}
				return fmt.Errorf("no running %s container yet", fault.role)
			}).WithTimeout(2 * time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())
			Eventually(trialPhase(fault.trial)).WithTimeout(4 * time.Minute).WithPolling(time.Second).Should(Equal(evalv1.PhasePassed))
			var t evalv1.Trial
			Expect(k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: fault.trial}, &t)).To(Succeed())
			Expect(len(t.Status.Attempts)).To(BeNumerically(">=", 2), "attempts: %+v", t.Status.Attempts)
			first := t.Status.Attempts[0]
			Expect(first.Outcome).To(Equal(evalv1.AttemptOutcome("InfraFailed")), "attempt 1: %+v", first)
			if fault.role == evalv1.RoleRunner {
				Expect(first.RunnerPod).To(Equal(broken))
			} else {
				Expect(first.DBServicePod).To(Equal(broken))
			}
			GinkgoWriter.Printf("attempt 1 of %s: %s/%s: %s\n", t.Name, first.Outcome, first.Reason, first.Message)
		})
	}

	It("ends an attempt whose runner image cannot be pulled with a condition naming the pull error, not a hang", func() {
		trial := strings.NewReplacer("name: shop-oracle\n", "name: shop-oracle-no-image\n",
			"maxAttempts: 3", "maxAttempts: 1",
			"  agent:\n", "  runner:\n    image: tolokaforge.local/missing:0\n  timeouts:\n    podsReady: 30s\n  agent:\n",
		).Replace(sample("eval_v1alpha1_trial_oracle.yaml"))
		Expect(trial).To(ContainSubstring("tolokaforge.local/missing:0"))
		mustKubectl(trial, "-n", ns, "apply", "-f", "-")
		Eventually(trialPhase("shop-oracle-no-image")).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Equal(evalv1.PhaseInfraFailed))
		var t evalv1.Trial
		Expect(k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "shop-oracle-no-image"}, &t)).To(Succeed())
		Expect(t.Status.Attempts).To(HaveLen(1))
		a := t.Status.Attempts[0]
		Expect(a.Reason).To(Equal(evalv1.ReasonPodsNotReady))
		Expect(a.Message).To(MatchRegexp(`shop-oracle-no-image-a1-runner \(Pending: container runner (ErrImagePull|ImagePullBackOff)`))
		GinkgoWriter.Printf("attempt 1 of %s: %s/%s: %s\n", t.Name, a.Outcome, a.Reason, a.Message)
	})

	pythonPackSpecs()
	tauRetailSpecs()
	hostilePythonSpecs()
	judgeSpecs()
	terminalSpecs()
	terminalSlotSpecs()

	It("completes a Campaign of 20 Trials", func() {
		// Pods of its own per attempt: the failover of a Campaign on
		// warm slots is slotFaultSpecs'.
		c := oracleCampaign(ns, "twenty", 20, 8, &evalv1.SlotPolicy{Mode: evalv1.SlotsDisabled}, "shop-orders-02")
		Expect(k8s.Create(context.Background(), c)).To(Succeed())
		start := time.Now()
		// The leader manager pod is deleted while Trials run: the other
		// replica takes over, and every Trial still ends once.
		Eventually(func() int32 {
			var got evalv1.Campaign
			_ = k8s.Get(context.Background(), client.ObjectKeyFromObject(c), &got)
			return got.Status.Counts.Running + got.Status.Counts.Passed
		}).WithTimeout(3 * time.Minute).WithPolling(200 * time.Millisecond).Should(BeNumerically(">=", 3))
		var lease coordinationv1.Lease
		Expect(k8s.Get(context.Background(), types.NamespacedName{Namespace: "tolokaforge-system",
			Name: "tolokaforge-manager.eval.tolokaforge.io"}, &lease)).To(Succeed())
		Expect(lease.Spec.HolderIdentity).NotTo(BeNil())
		leader := strings.SplitN(*lease.Spec.HolderIdentity, "_", 2)[0]
		mustKubectl("", "-n", "tolokaforge-system", "delete", "pod", leader, "--wait=false")
		GinkgoWriter.Printf("deleted the leader manager pod %s\n", leader)
		Eventually(func() string {
			var got evalv1.Campaign
			if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(c), &got); err != nil {
				return err.Error()
			}
			return fmt.Sprintf("passed=%d failed=%d infra=%d invalid=%d", got.Status.Counts.Passed,
				got.Status.Counts.Failed, got.Status.Counts.InfraFailed, got.Status.Counts.Invalid)
		}).WithTimeout(6 * time.Minute).WithPolling(2 * time.Second).Should(Equal("passed=20 failed=0 infra=0 invalid=0"))
		GinkgoWriter.Printf("20-Trial Campaign completed in %s\n", time.Since(start).Round(time.Second))
		// Graded once each: one Passed attempt per Trial, whatever ended
		// InfraFailed when the leader went.
		var trials evalv1.TrialList
		Expect(k8s.List(context.Background(), &trials, client.InNamespace(ns))).To(Succeed())
		n, infra := 0, 0
		for _, t := range trials.Items {
			if t.Labels[evalv1.LabelCampaign] != "twenty" {
				continue
			}
			n++
			passed := 0
			for _, a := range t.Status.Attempts {
				switch a.Outcome {
				case "Passed":
					passed++
				case "InfraFailed":
					infra++
				}
			}
			Expect(passed).To(Equal(1), "%s attempts: %+v", t.Name, t.Status.Attempts)
		}
		Expect(n).To(Equal(20))
		GinkgoWriter.Printf("attempts ended InfraFailed by the failover: %d\n", infra)
	})

	slotSpecs()
	slotFaultSpecs()
	benchmarkSpecs()
	terminalBenchSpecs()
	// Turns tracing and runner metrics on for the rest: after the
	// benchmarks, which measure the defaults.
	observabilitySpecs()
	// Last: Kueue's pod webhooks and the manager's restart change the
	// cluster the specs above measure.
	kueueSpecs()
})
