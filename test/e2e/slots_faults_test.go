package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// slotTenants is a project of three tasks for slots: a hostile tenant, a
// clean one that inspects the slot, and a slow one (its README).
var slotTenants = filepath.Join("test", "e2e", "testdata", "slot-tenants")

// The Task names `pack import` gives slotTenants' tasks.
const (
	hostileTenant = "tenant-1-hostile"
	cleanTenant   = "tenant-2-clean"
	slowTenant    = "tenant-slow"
)

// slotFaultSpecs: issue 36's faults on the real node. A hostile tenant's
// Trials followed by clean ones on one slot, the clean ones graded exactly
// as alone; a slot pod deleted under a running Trial; the leader manager
// deleted while a Campaign runs on slots.
func slotFaultSpecs() {
	It("runs hostile-tool Trials and clean ones on one slot: nothing of the hostile tenant reaches the next, the clean ones are graded exactly as alone", func() {
		ctx := context.Background()
		importSlotTenants(ctx)

		// The clean task alone, on pods of its own: the grade to match.
		alone := &evalv1.Trial{
			ObjectMeta: metav1.ObjectMeta{Name: "clean-tenant-alone", Namespace: ns},
			Spec: evalv1.TrialSpec{
				TaskRef:       &evalv1.TaskReference{Name: cleanTenant},
				Agent:         evalv1.ModelSpec{Provider: evalv1.ProviderOracle},
				UserSimulator: &evalv1.UserSimulatorSpec{Mode: evalv1.UserSimulatorScripted},
				RetryPolicy:   evalv1.RetryPolicy{MaxAttempts: 1},
			},
		}
		Expect(k8s.Create(ctx, alone)).To(Succeed())
		Eventually(trialPhase(alone.Name)).WithTimeout(4*time.Minute).WithPolling(time.Second).
			Should(Equal(evalv1.PhasePassed), func() string { return describe(getTrial(alone.Name)) })
		want := comparableGrade(getTrial(alone.Name))
		GinkgoWriter.Printf("the clean tenant alone: %+v\n", want)

		// One slot (maxParallel 1): the Campaign creates index by index,
		// tasks in name order, so each clean Trial runs right after a
		// hostile one on the same slot pod.
		c := oracleCampaign(ns, "tenants", 3, 1, slotsIdleAfter(5), hostileTenant, cleanTenant)
		Expect(k8s.Create(ctx, c)).To(Succeed())
		waitForCampaign(ctx, c, 6, 4*time.Minute)

		trials := campaignTrials(ctx, c.Name)
		Expect(trials).To(HaveLen(6))
		slots := map[string]int{}
		for _, t := range trials {
			Expect(t.Status.Attempts).To(HaveLen(1), "%s: %s", t.Name, describe(&t))
			slots[t.Status.Attempts[0].Slot]++
			Expect(t.Status.Grade).NotTo(BeNil(), describe(&t))
			Expect(t.Status.Grade.Score).To(Equal(1.0), "%s: %s", t.Name, describe(&t))
			if t.Spec.TaskRef.Name == cleanTenant {
				Expect(comparableGrade(&t)).To(Equal(want), "%s after a hostile tenant: %s", t.Name, describe(&t))
			}
		}
		// Reused, not replaced: the hostile tenant's survivor and files were
		// cleaned up, and the baseline check found the slot as it was.
		Expect(slots).To(HaveLen(1), "the Trials ran on %v", slots)
		Expect(slotReplacements(ctx)).To(BeEmpty())
		GinkgoWriter.Printf("6 Trials, hostile and clean in turn, on one slot: %v\n", slots)
		waitNoSlots(ctx)
		mustKubectl("", "-n", ns, "delete", "campaign", c.Name, "--wait=true", "--timeout=2m")
		mustKubectl("", "-n", ns, "delete", "trial", alone.Name, "--wait=true", "--timeout=2m")
	})

	It("ends an attempt InfraFailed once when its slot pod is deleted mid-trial, and retries it on another slot", func() {
		ctx := context.Background()
		c := oracleCampaign(ns, "slot-lost", 1, 1, slotsIdleAfter(5), slowTenant)
		Expect(k8s.Create(ctx, c)).To(Succeed())
		// The slow tool sleeps 20 s: delete the slot once the trial is
		// registered on it, while the tool runs.
		var slot, trial string
		Eventually(func() error {
			ts := campaignTrials(ctx, c.Name)
			if len(ts) != 1 || len(ts[0].Status.Attempts) != 1 {
				return fmt.Errorf("no attempt yet")
			}
			t := ts[0]
			reg := condition(&t, evalv1.TrialRegistered)
			if reg == nil || reg.Status != metav1.ConditionTrue || t.Status.Attempts[0].Slot == "" {
				return fmt.Errorf("attempt 1 not registered on a slot yet: %s", describe(&t))
			}
			slot, trial = t.Status.Attempts[0].Slot, t.Name
			return nil
		}).WithTimeout(3 * time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
		mustKubectl("", "-n", ns, "delete", "pod", slot, "--wait=false")
		GinkgoWriter.Printf("deleted slot pod %s under %s\n", slot, trial)

		waitForCampaign(ctx, c, 1, 4*time.Minute)
		t := getTrial(trial)
		Expect(t.Status.Attempts).To(HaveLen(2), describe(t))
		first, second := t.Status.Attempts[0], t.Status.Attempts[1]
		Expect(first.Outcome).To(Equal(evalv1.OutcomeInfraFailed), describe(t))
		Expect(first.Reason).To(BeElementOf(evalv1.ReasonPodLost, evalv1.ReasonPodFailed), describe(t))
		Expect(first.Slot).To(Equal(slot))
		Expect(second.Outcome).To(Equal(evalv1.OutcomePassed), describe(t))
		Expect(second.Slot).NotTo(BeEmpty())
		Expect(second.Slot).NotTo(Equal(slot), "the retry ran on the deleted slot")
		GinkgoWriter.Printf("attempt 1: %s/%s on %s: %s; attempt 2 Passed on %s\n", first.Outcome, first.Reason, first.Slot, first.Message, second.Slot)
		waitNoSlots(ctx)
		mustKubectl("", "-n", ns, "delete", "campaign", c.Name, "--wait=true", "--timeout=2m")
	})

	It("completes a Campaign on slots whose leader manager is deleted mid-run: no Trial graded twice, no slot or slot Secret left", func() {
		ctx := context.Background()
		c := oracleCampaign(ns, "slot-failover", 16, 4, slotsIdleAfter(5), "shop-orders-02")
		Expect(k8s.Create(ctx, c)).To(Succeed())
		Eventually(func() int32 {
			var got evalv1.Campaign
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(c), &got)
			return got.Status.Counts.Running + got.Status.Counts.Passed
		}).WithTimeout(3 * time.Minute).WithPolling(200 * time.Millisecond).Should(BeNumerically(">=", 3))
		var lease coordinationv1.Lease
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: managerNamespace,
			Name: "tolokaforge-manager.eval.tolokaforge.io"}, &lease)).To(Succeed())
		Expect(lease.Spec.HolderIdentity).NotTo(BeNil())
		leader := strings.SplitN(*lease.Spec.HolderIdentity, "_", 2)[0]
		mustKubectl("", "-n", managerNamespace, "delete", "pod", leader, "--wait=false")
		GinkgoWriter.Printf("deleted the leader manager pod %s\n", leader)

		waitForCampaign(ctx, c, 16, 6*time.Minute)
		infra := 0
		for _, t := range campaignTrials(ctx, c.Name) {
			passed := 0
			for _, a := range t.Status.Attempts {
				switch a.Outcome {
				case evalv1.OutcomePassed:
					passed++
				case evalv1.OutcomeInfraFailed:
					infra++
				}
			}
			Expect(passed).To(Equal(1), "%s graded %d times: %s", t.Name, passed, describe(&t))
		}
		GinkgoWriter.Printf("attempts ended InfraFailed by the failover: %d\n", infra)
		// The new leader deletes the slots it cannot vouch for and the idle
		// ones; each slot's Secret goes with its pod.
		waitNoSlots(ctx)
		mustKubectl("", "-n", ns, "delete", "campaign", c.Name, "--wait=true", "--timeout=2m")
	})
}

// importSlotTenants applies slotTenants' Tasks as a user would.
func importSlotTenants(ctx context.Context) {
	GinkgoHelper()
	bin := os.Getenv("E2E_TOLOKAFORGE")
	Expect(bin).NotTo(BeEmpty(), "E2E_TOLOKAFORGE names the tolokaforge binary (make build)")
	stream, err := exec.Command(bin, "pack", "import", filepath.Join(root, slotTenants), "--namespace", ns).Output()
	Expect(err).NotTo(HaveOccurred(), "pack import: %v", err)
	applied := mustKubectl(string(stream), "apply", "--server-side", "-f", "-", "-o", "name")
	for _, name := range []string{hostileTenant, cleanTenant, slowTenant} {
		Expect(applied).To(ContainSubstring("task.eval.tolokaforge.io/"+name), "applied: %s", applied)
		Eventually(func() error {
			var tk evalv1.Task
			return k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &tk)
		}).WithTimeout(30 * time.Second).Should(Succeed())
	}
}

// comparableGrade is what "graded the same" compares: everything of the
// grade but the attempt that earned it.
func comparableGrade(t *evalv1.Trial) evalv1.GradeSummary {
	GinkgoHelper()
	Expect(t.Status.Grade).NotTo(BeNil(), describe(t))
	g := *t.Status.Grade
	g.Attempt = 0
	return g
}

// waitForCampaign waits until n Trials of c Passed and none ended otherwise.
func waitForCampaign(ctx context.Context, c *evalv1.Campaign, n int, timeout time.Duration) {
	GinkgoHelper()
	Eventually(func() string {
		var got evalv1.Campaign
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(c), &got); err != nil {
			return err.Error()
		}
		k := got.Status.Counts
		return fmt.Sprintf("passed=%d failed=%d infra=%d invalid=%d", k.Passed, k.Failed, k.InfraFailed, k.Invalid)
	}).WithTimeout(timeout).WithPolling(time.Second).Should(Equal(fmt.Sprintf("passed=%d failed=0 infra=0 invalid=0", n)),
		func() string { return campaignReport(ctx, c.Name) })
}

func campaignTrials(ctx context.Context, campaign string) []evalv1.Trial {
	GinkgoHelper()
	var trials evalv1.TrialList
	Expect(k8s.List(ctx, &trials, client.InNamespace(ns), client.MatchingLabels{evalv1.LabelCampaign: campaign})).To(Succeed())
	return trials.Items
}

// waitNoSlots waits until the namespace holds no slot pod and no slot
// Secret (idle slots go after the Campaigns' idleSeconds).
func waitNoSlots(ctx context.Context) {
	GinkgoHelper()
	Eventually(func() []string {
		var left []string
		var pods corev1.PodList
		_ = k8s.List(ctx, &pods, client.InNamespace(ns), client.HasLabels{evalv1.LabelSlotClass})
		for _, p := range pods.Items {
			left = append(left, "pod/"+p.Name)
		}
		var secrets corev1.SecretList
		_ = k8s.List(ctx, &secrets, client.InNamespace(ns), client.HasLabels{evalv1.LabelSlotClass})
		for _, s := range secrets.Items {
			left = append(left, "secret/"+s.Name)
		}
		return left
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(BeEmpty(), "slot objects left")
}

// terminalSlotSpecs: a terminal task on slots on the real node: the runner
// and DB service from a slot, a fresh environment pod per attempt, the slot
// reaching each attempt's environment through the policies kube-router
// enforces (the attempt's fence admits that slot alone).
func terminalSlotSpecs() {
	It("runs a terminal task's Campaign on warm slots: a fresh environment pod per attempt, its runner from one slot", func() {
		ctx := context.Background()
		c := oracleCampaign(termNamespace, "tslots", 3, 1, slotsIdleAfter(5), termTask)
		Expect(k8s.Create(ctx, c)).To(Succeed())
		list := func() []evalv1.Trial {
			var trials evalv1.TrialList
			Expect(k8s.List(ctx, &trials, client.InNamespace(termNamespace), client.MatchingLabels{evalv1.LabelCampaign: c.Name})).To(Succeed())
			return trials.Items
		}
		Eventually(func() string {
			var got evalv1.Campaign
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(c), &got); err != nil {
				return err.Error()
			}
			k := got.Status.Counts
			return fmt.Sprintf("passed=%d failed=%d infra=%d invalid=%d", k.Passed, k.Failed, k.InfraFailed, k.Invalid)
		}).WithTimeout(5*time.Minute).WithPolling(time.Second).Should(Equal("passed=3 failed=0 infra=0 invalid=0"), func() string {
			var sb strings.Builder
			for _, t := range list() {
				sb.WriteString(t.Name + ": " + describe(&t))
			}
			return sb.String()
		})
		slots, envs := map[string]int{}, map[string]bool{}
		for _, t := range list() {
			Expect(t.Status.Attempts).To(HaveLen(1), "%s: %s", t.Name, describe(&t))
			a := t.Status.Attempts[0]
			Expect(a.Slot).NotTo(BeEmpty(), "%s ran on no slot", t.Name)
			Expect(a.RunnerPod).To(BeEmpty(), "%s has a runner pod of its own", t.Name)
			Expect(a.EnvironmentPod).NotTo(BeEmpty(), "%s has no environment pod", t.Name)
			Expect(envs).NotTo(HaveKey(a.EnvironmentPod), "environment pod %s served two attempts", a.EnvironmentPod)
			envs[a.EnvironmentPod] = true
			slots[a.Slot]++
		}
		Expect(slots).To(HaveLen(1), "slots used: %v", slots)
		GinkgoWriter.Printf("3 terminal Trials on slot %v, environments %v\n", slots, envs)
		mustKubectl("", "-n", termNamespace, "delete", "campaign", c.Name, "--wait=true", "--timeout=2m")
		Eventually(func() int {
			var pods corev1.PodList
			_ = k8s.List(ctx, &pods, client.InNamespace(termNamespace), client.HasLabels{evalv1.LabelSlotClass})
			return len(pods.Items)
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(BeZero())
	})
}

// oracleCampaign is a Campaign of the oracle over tasks, k Trials a task, at
// most parallel at once, on slots as slots says (nil: the default, slots).
func oracleCampaign(namespace, name string, k, parallel int32, slots *evalv1.SlotPolicy, tasks ...string) *evalv1.Campaign {
	return &evalv1.Campaign{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: evalv1.CampaignSpec{
			Tasks:         evalv1.CampaignTasks{Names: tasks},
			TrialsPerTask: k,
			Agents:        []evalv1.NamedAgent{{Name: "oracle", Model: evalv1.ModelSpec{Provider: "oracle"}}},
			MaxParallel:   parallel,
			Slots:         slots,
		},
	}
}

// slotsIdleAfter is warm slots deleted after seconds idle, so a spec's slots
// are gone soon after its Campaign.
func slotsIdleAfter(seconds int32) *evalv1.SlotPolicy {
	return &evalv1.SlotPolicy{Mode: evalv1.SlotsEnabled, IdleSeconds: ptr.To(seconds)}
}
