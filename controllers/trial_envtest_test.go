package controllers_test

import (
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"tolokaforge.io/operator/api/authn"
	"tolokaforge.io/operator/api/runnerpb"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers"
	"tolokaforge.io/operator/controllers/gateway"
	runnerclient "tolokaforge.io/operator/runner/client"
	"tolokaforge.io/operator/runner/proc"
)

var _ = Describe("Trial", func() {
	var ns string
	BeforeEach(func() {
		ns = newNamespace()
		Expect(h.Client.Create(ctx, shopTask(ns, "shop", nil))).To(Succeed())
	})

	It("runs an oracle trial on the shop task to Passed and deletes its pods", func() {
		key := types.NamespacedName{Namespace: ns, Name: "oracle"}
		passed0 := metricValue("tolokaforge_trials_completed_total", "reason", "Passed")
		attempts0 := metricValue("tolokaforge_attempts_total", "outcome", "Passed")
		started0 := metricValue("tolokaforge_trials_started_total", "", "")
		regs0 := metricValue("tolokaforge_registration_duration_seconds", "", "")
		grades0 := metricValue("tolokaforge_grading_duration_seconds", "", "")
		Expect(h.Client.Create(ctx, oracleTrial(ns, key.Name, "shop"))).To(Succeed())

		t := completed(key)
		c := findCond(t.Status.Conditions, evalv1.TrialCompleted)
		Expect(c.Reason).To(Equal("Passed"), describeTrial(t))
		Expect(t.Status.Phase).To(Equal(evalv1.PhasePassed))
		g := t.Status.Grade
		Expect(g).NotTo(BeNil())
		Expect(g.BinaryPass).To(BeTrue())
		// The golden path reproduces the end state exactly: hash and all seven
		// JSONPath checks. The host grades an oracle on state checks only
		// (transcript rules judge a conversation the oracle does not hold),
		// so the transcript component is absent, not 0.
		Expect(g.Score).To(Equal(1.0), describeTrial(t))
		Expect(g.Components.StateChecks).To(HaveValue(Equal(1.0)))
		Expect(g.Components.TranscriptRules).To(BeNil())
		Expect(g.Reasons).To(Equal("State: hash match | JSONPath: all 7 checks passed"))
		Expect(g.DiffSummary).To(BeEmpty())
		// Components the task does not configure are absent, not 0.
		Expect(g.Components.LLMJudge).To(BeNil())
		Expect(g.Components.CustomChecks).To(BeNil())
		Expect(g.Components.TraceChecks).To(BeNil())
		Expect(t.Status.Grade.Attempt).To(Equal(int32(1)))
		Expect(t.Status.TaskID).To(Equal("shop_orders_02"))
		Expect(t.Status.Agent).To(Equal("oracle"))
		Expect(t.Status.AttemptCount).To(Equal(int32(1)))
		Expect(t.Status.Attempts).To(HaveLen(1))
		Expect(t.Status.Attempts[0].Outcome).To(Equal(evalv1.OutcomePassed))
		Expect(t.Status.Attempts[0].EndTime).NotTo(BeNil())
		Expect(t.Status.TerminationReason).NotTo(BeEmpty())
		Expect(t.Status.CompletionTime).NotTo(BeNil())
		Expect(t.Status.ObservedGeneration).To(Equal(t.Generation))
		// The runner said how it confined the pack's code: this kernel's Landlock.
		conf := findCond(t.Status.Conditions, evalv1.TrialConfined)
		Expect(conf).NotTo(BeNil(), describeTrial(t))
		if abi, err := proc.LandlockABI(); err == nil && abi > 0 {
			Expect(conf.Status).To(Equal(metav1.ConditionTrue))
			Expect(conf.Reason).To(Equal(evalv1.ReasonLandlock))
			Expect(conf.Message).To(ContainSubstring(fmt.Sprintf("Landlock ABI %d", abi)))
		} else {
			Expect(conf.Status).To(Equal(metav1.ConditionFalse))
			Expect(conf.Reason).To(Equal(evalv1.ReasonLandlockUnavailable))
		}
		expectNoPods(key)

		Expect(t.Status.ArtifactsPath).To(HavePrefix(filepath.Join(h.Work, "artifacts", ns, key.Name, "attempt-1")))
		// --artifacts-dir is a file:// store: the Trial links its folder.
		Expect(t.Status.ArtifactsURL).To(Equal("file://" + filepath.ToSlash(filepath.Join(h.Work, "artifacts", ns, key.Name)) + "/"))
		for _, f := range []string{"trajectory.yaml", "grade.yaml", "metrics.yaml"} {
			Expect(filepath.Join(t.Status.ArtifactsPath, f)).To(BeAnExistingFile())
		}

		// The TrialSpec the runner saw: trial_id <task_id>:<trialIndex>.
		regs := rpcs.Of(key, "RegisterTrial")
		Expect(regs).To(HaveLen(1))
		Expect(regs[0].TrialID).To(Equal("shop_orders_02:0"))
		Expect(regs[0].OK).To(BeTrue())
		Expect(rpcs.Of(key, "GradeTrial")).To(HaveLen(1))

		Expect(metricValue("tolokaforge_trials_completed_total", "reason", "Passed") - passed0).To(Equal(1.0))
		Expect(metricValue("tolokaforge_attempts_total", "outcome", "Passed") - attempts0).To(Equal(1.0))
		Expect(metricValue("tolokaforge_trials_started_total", "", "") - started0).To(Equal(1.0))
		Expect(metricValue("tolokaforge_registration_duration_seconds", "", "") - regs0).To(Equal(1.0))
		Expect(metricValue("tolokaforge_grading_duration_seconds", "", "") - grades0).To(Equal(1.0))
		Expect(metricValue("tolokaforge_driver_pool_capacity", "", "")).To(Equal(10.0))
	})

	It("runs an inline task", func() {
		raw := shopTask(ns, "x", nil).Spec.Description
		key := types.NamespacedName{Namespace: ns, Name: "inline"}
		tr := oracleTrial(ns, key.Name, "")
		tr.Spec.TaskRef, tr.Spec.Task = nil, &raw
		tr.Spec.TrialIndex = 3
		// An inline task has no Task to carry the opening message; the
		// Trial's scripted user says it.
		tr.Spec.UserSimulator = &evalv1.UserSimulatorSpec{Mode: evalv1.UserSimulatorScripted,
			Lines: []string{"Hi! I'm C-101: 1 Wireless Headphones and 2 USB-C Hubs, please."}}
		Expect(h.Client.Create(ctx, tr)).To(Succeed())
		t := completed(key)
		Expect(t.Status.Phase).To(Equal(evalv1.PhasePassed), describeTrial(t))
		Expect(t.Status.TaskID).To(Equal("shop_orders_02"))
		Expect(rpcs.Of(key, "RegisterTrial")[0].TrialID).To(Equal("shop_orders_02:3"))
	})

	It("refuses a registration below the runner's minimum protocol as ProtocolSkew before any tool call", func() {
		skewNS := newNamespace()
		h.RunnerArgs.Store(skewNS, []string{"--min-engine-protocol=3"})
		Expect(h.Client.Create(ctx, shopTask(skewNS, "shop", nil))).To(Succeed())
		key := types.NamespacedName{Namespace: skewNS, Name: "skew"}
		Expect(h.Client.Create(ctx, oracleTrial(skewNS, key.Name, "shop"))).To(Succeed())

		t := completed(key)
		c := findCond(t.Status.Conditions, evalv1.TrialCompleted)
		Expect(c.Reason).To(Equal("ProtocolSkew"), describeTrial(t))
		Expect(c.Message).To(ContainSubstring("3"))
		Expect(t.Status.Phase).To(Equal(evalv1.PhaseProtocolSkew))
		Expect(t.Status.Attempts).To(HaveLen(1), "skew is final, never retried")
		Expect(t.Status.Attempts[0].Outcome).To(Equal(evalv1.OutcomeProtocolSkew))
		Expect(t.Status.Grade).To(BeNil())
		Expect(t.Status.Turns).To(BeZero())
		Expect(rpcs.Of(key, "ExecuteTool")).To(BeEmpty())
		reg := findCond(t.Status.Conditions, evalv1.TrialRegistered)
		Expect(reg.Status).To(Equal(metav1.ConditionFalse))
		Expect(reg.Reason).To(Equal("ProtocolSkew"))
		expectNoPods(key)
	})

	It("fails a task whose golden path is wrong for its setup, with the state diff summary in reasons", func() {
		// The task's setup already places order O-001 (initialization action),
		// but its golden path pays "O-001" as if it were the new order. The
		// oracle, following the golden path in the real world, pays the wrong
		// order; the golden replay (from the initial state) does not see the
		// setup, so the two end states differ.
		Expect(h.Client.Create(ctx, shopTask(ns, "shop-wrong", wrongGoldenPath))).To(Succeed())
		key := types.NamespacedName{Namespace: ns, Name: "wrong"}
		Expect(h.Client.Create(ctx, oracleTrial(ns, key.Name, "shop-wrong"))).To(Succeed())

		t := completed(key)
		c := findCond(t.Status.Conditions, evalv1.TrialCompleted)
		Expect(c.Reason).To(Equal("Failed"), describeTrial(t))
		Expect(t.Status.Phase).To(Equal(evalv1.PhaseFailed))
		g := t.Status.Grade
		Expect(g).NotTo(BeNil())
		Expect(g.BinaryPass).To(BeFalse())
		Expect(g.DiffSummary).To(ContainSubstring("orders: 1 added"))
		Expect(g.Reasons).To(ContainSubstring("State: " + g.DiffSummary))
		Expect(g.Score).To(BeNumerically("<", 0.75))
		Expect(t.Status.Attempts).To(HaveLen(1), "an agent's failure is final")
		Expect(t.Status.Attempts[0].Outcome).To(Equal(evalv1.OutcomeFailed))
		Expect(c.Message).To(ContainSubstring(g.DiffSummary))
		expectNoPods(key)
	})

	It("ends a trial whose task has an unknown key as Invalid with nothing left running", func() {
		raw := shopTask(ns, "x", func(m map[string]any) { m["bogus"] = true }).Spec.Description
		key := types.NamespacedName{Namespace: ns, Name: "inline-invalid"}
		tr := oracleTrial(ns, key.Name, "")
		tr.Spec.TaskRef, tr.Spec.Task = nil, &raw
		Expect(h.Client.Create(ctx, tr)).To(Succeed())

		t := completed(key)
		c := findCond(t.Status.Conditions, evalv1.TrialCompleted)
		Expect(c.Reason).To(Equal("Invalid"))
		Expect(c.Message).To(Equal("spec.task.bogus: unknown key"))
		Expect(t.Status.Attempts).To(BeEmpty(), "no attempt, no pods, no tokens")
		Expect(podsOf(key)).To(BeEmpty())
		Expect(rpcs.Of(key, "")).To(BeEmpty())

		// The same through a Task: the Task says why, the Trial ends Invalid.
		Expect(h.Client.Create(ctx, shopTask(ns, "nested-bad", func(m map[string]any) {
			m["agent_tools"].([]any)[1].(map[string]any)["colour"] = "red"
		}))).To(Succeed())
		refKey := types.NamespacedName{Namespace: ns, Name: "ref-invalid"}
		Expect(h.Client.Create(ctx, oracleTrial(ns, refKey.Name, "nested-bad"))).To(Succeed())
		t = completed(refKey)
		c = findCond(t.Status.Conditions, evalv1.TrialCompleted)
		Expect(c.Reason).To(Equal("Invalid"))
		Expect(c.Message).To(Equal("task nested-bad: spec.description.agent_tools[1].colour: unknown key"))
		Expect(podsOf(refKey)).To(BeEmpty())
	})

	It("ends a trial as Invalid with the runner's message when registration refuses the task", func() {
		// Valid for the decoder and the Task, known only to the runner: a
		// builtin it does not have.
		Expect(h.Client.Create(ctx, shopTask(ns, "nobuiltin", func(m map[string]any) {
			m["agent_tools"].([]any)[0].(map[string]any)["source"] = map[string]any{
				"toolset": "builtin", "module_path": "", "class_name": "no_such_builtin"}
		}))).To(Succeed())
		key := types.NamespacedName{Namespace: ns, Name: "refused"}
		Expect(h.Client.Create(ctx, oracleTrial(ns, key.Name, "nobuiltin"))).To(Succeed())

		t := completed(key)
		c := findCond(t.Status.Conditions, evalv1.TrialCompleted)
		Expect(c.Reason).To(Equal("Invalid"), describeTrial(t))
		Expect(c.Message).To(ContainSubstring(`no builtin tool named "no_such_builtin"`))
		Expect(t.Status.Attempts).To(HaveLen(1))
		Expect(t.Status.Attempts[0].Outcome).To(Equal(evalv1.OutcomeInvalid))
		Expect(rpcs.Of(key, "ExecuteTool")).To(BeEmpty())
		expectNoPods(key)
	})

	It("refuses a tool family the Go runner cannot load before any pod: the Task is not Valid", func() {
		Expect(h.Client.Create(ctx, shopTask(ns, "tau", func(m map[string]any) {
			src := m["agent_tools"].([]any)[0].(map[string]any)["source"].(map[string]any)
			src["invocation_style"] = "docker_compose_exec"
		}))).To(Succeed())
		key := types.NamespacedName{Namespace: ns, Name: "tau-refused"}
		Expect(h.Client.Create(ctx, oracleTrial(ns, key.Name, "tau"))).To(Succeed())

		t := completed(key)
		c := findCond(t.Status.Conditions, evalv1.TrialCompleted)
		Expect(c.Reason).To(Equal("Invalid"), describeTrial(t))
		Expect(c.Message).To(ContainSubstring(`source.invocation_style "docker_compose_exec" runs the tool as a command in a docker compose service's container`))
		Expect(t.Status.Attempts).To(BeEmpty())
		Expect(podsOf(key)).To(BeEmpty())
	})

	It("retries a runner killed mid-trial: attempt 1 InfraFailed, attempt 2 Passed, exactly one grade", func() {
		key := types.NamespacedName{Namespace: ns, Name: "killed"}
		gt := gates.Hold(key, 1)
		Expect(h.Client.Create(ctx, oracleTrial(ns, key.Name, "shop"))).To(Succeed())
		waitGate(gt)
		Eventually(func() string { return string(getTrial(key).Status.Phase) }, waitLong, pollEvery).Should(Equal("Running"))
		Expect(h.Sim.Kill(ns, controllers.PodName(key.Name, 1, evalv1.RoleRunner))).To(Succeed())

		t := completed(key)
		Expect(findCond(t.Status.Conditions, evalv1.TrialCompleted).Reason).To(Equal("Passed"), describeTrial(t))
		Expect(t.Status.Attempts).To(HaveLen(2), describeTrial(t))
		a1, a2 := t.Status.Attempts[0], t.Status.Attempts[1]
		Expect(a1.Outcome).To(Equal(evalv1.OutcomeInfraFailed))
		Expect(a1.Reason).To(Equal(evalv1.ReasonPodFailed))
		Expect(a1.Message).To(ContainSubstring("exited with code 137"))
		Expect(a1.ID).NotTo(Equal(a2.ID))
		Expect(a2.Outcome).To(Equal(evalv1.OutcomePassed))
		Expect(a2.StartTime.Time).NotTo(BeTemporally("<", a1.EndTime.Time))
		Expect(t.Status.Grade.Attempt).To(Equal(int32(2)))
		grades := rpcs.Of(key, "GradeTrial")
		Expect(grades).To(HaveLen(1), "only the attempt that earned it grades")
		Expect(grades[0].Attempt).To(Equal(int32(2)))
		expectNoPods(key)
	})

	It("retries an attempt whose runner lost the trial (TRIAL_NOT_FOUND): attempt 1 InfraFailed TrialLost, attempt 2 Passed", func() {
		key := types.NamespacedName{Namespace: ns, Name: "lost"}
		gt := gates.Hold(key, 1)
		Expect(h.Client.Create(ctx, oracleTrial(ns, key.Name, "shop"))).To(Succeed())
		waitGate(gt)
		// The runner forgets the registration under the driver's feet.
		ip, ok := h.Sim.PodAddr(ns, controllers.PodName(key.Name, 1, evalv1.RoleRunner))
		Expect(ok).To(BeTrue())
		var cred corev1.Secret
		Expect(h.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: controllers.AuthSecretName(getTrial(key), 1)}, &cred)).To(Succeed())
		rc, err := runnerclient.Dial(ctx, net.JoinHostPort(ip, strconv.Itoa(controllers.RunnerPort)),
			runnerclient.WithToken(string(cred.Data[authn.SecretKey])))
		Expect(err).NotTo(HaveOccurred())
		defer rc.Close()
		resp, err := rc.CleanupTrial(ctx, &runnerpb.CleanupTrialRequest{TrialId: "shop_orders_02:0"})
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.GetSuccess()).To(BeTrue())
		close(gt.Release)

		t := completed(key)
		Expect(findCond(t.Status.Conditions, evalv1.TrialCompleted).Reason).To(Equal("Passed"), describeTrial(t))
		Expect(t.Status.Attempts).To(HaveLen(2))
		Expect(t.Status.Attempts[0].Outcome).To(Equal(evalv1.OutcomeInfraFailed))
		Expect(t.Status.Attempts[0].Reason).To(Equal(evalv1.ReasonTrialLost))
		Expect(t.Status.Attempts[1].Outcome).To(Equal(evalv1.OutcomePassed))
		Expect(t.Status.Grade.Attempt).To(Equal(int32(2)))
		Expect(rpcs.Of(key, "GradeTrial")).To(HaveLen(1))
	})

	It("hands the agent its API key from the Secret and writes it nowhere", func() {
		const secret = "sk-test-do-not-leak-7f3a"
		Expect(h.Client.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "llm",
				Annotations: map[string]string{evalv1.AnnotationAllowedBaseURLs: "https://api.openai.com/v1/"}},
			Data: map[string][]byte{"agent": []byte(secret)},
		})).To(Succeed())
		key := types.NamespacedName{Namespace: ns, Name: "keyed"}
		tr := oracleTrial(ns, key.Name, "shop")
		tr.Spec.Agent.APIKeySecretRef = &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "llm"}, Key: "agent"}
		// Kept, so the pods can be read after the trial: an oracle trial may
		// create and remove them between two polls.
		tr.Spec.KeepPodsAfterFinished = true
		Expect(h.Client.Create(ctx, tr)).To(Succeed())
		t := completed(key)
		pods := podsOf(key)
		Expect(pods).To(HaveLen(2))
		Expect(t.Status.Phase).To(Equal(evalv1.PhasePassed), describeTrial(t))
		got, ok := gates.AgentKey(key)
		Expect(ok).To(BeTrue())
		Expect(got).To(Equal(secret))

		var evs eventsv1.EventList
		Expect(h.Client.List(ctx, &evs, client.InNamespace(ns))).To(Succeed())
		for _, where := range []any{t, pods, evs.Items} {
			b, err := json.Marshal(where)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(b)).NotTo(ContainSubstring(secret))
		}
		for _, p := range pods {
			for _, e := range p.Spec.Containers[0].Env {
				Expect(e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil).To(BeTrue(), "pod %s env %s", p.Name, e.Name)
			}
		}
	})

	It("gives the runner pod the trial's gateway token, never the judge's provider key, and revokes it at the end", func() {
		const judgeKey = "sk-judge-do-not-mount-5c1d"
		Expect(h.Client.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "judge-provider-secret",
				Annotations: map[string]string{evalv1.AnnotationAllowedBaseURLs: "https://judge.example/v1"}},
			Data: map[string][]byte{"k": []byte(judgeKey)},
		})).To(Succeed())
		key := types.NamespacedName{Namespace: ns, Name: "judged"}
		gt := gates.Hold(key, 1)
		tr := oracleTrial(ns, key.Name, "shop")
		tr.Spec.Judge = &evalv1.ModelSpec{Provider: evalv1.ProviderOpenAI, Model: "judge-1", BaseURL: "https://judge.example/v1",
			APIKeySecretRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "judge-provider-secret"}, Key: "k"}}
		Expect(h.Client.Create(ctx, tr)).To(Succeed())
		waitGate(gt)

		tok := &corev1.Secret{}
		Expect(h.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: gateway.SecretName(key.Name)}, tok)).To(Succeed())
		Expect(string(tok.Data[gateway.TokenKey])).To(HavePrefix(ns + "/" + key.Name + "/"))
		Expect(metav1.IsControlledBy(tok, getTrial(key))).To(BeTrue())
		runner := &corev1.Pod{}
		Expect(h.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: controllers.PodName(key.Name, 1, evalv1.RoleRunner)}, runner)).To(Succeed())
		var secretVolumes []string
		for _, v := range runner.Spec.Volumes {
			if v.Secret != nil {
				secretVolumes = append(secretVolumes, v.Secret.SecretName)
			}
		}
		// The attempt's credential and the gateway token; no provider Secret.
		Expect(secretVolumes).To(ConsistOf(controllers.AuthSecretName(getTrial(key), 1), gateway.SecretName(key.Name)))
		b, err := json.Marshal(runner)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(b)).NotTo(ContainSubstring("judge-provider-secret"))
		Expect(string(b)).NotTo(ContainSubstring(judgeKey))
		close(gt.Release)

		t := completed(key)
		Expect(t.Status.Phase).To(Equal(evalv1.PhasePassed), describeTrial(t))
		Eventually(func() bool {
			return apierrors.IsNotFound(h.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: gateway.SecretName(key.Name)}, &corev1.Secret{}))
		}, waitLong, pollEvery).Should(BeTrue(), "the token Secret outlived its Trial")
	})

	DescribeTable("refuses a provider Secret that is not opted in for the model's base URL, before any pod",
		func(name string, annotations map[string]string, wantMsg string) {
			Expect(h.Client.Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
				Data:       map[string][]byte{"agent": []byte("sk-refused-0123456789")},
			})).To(Succeed())
			key := types.NamespacedName{Namespace: ns, Name: name}
			tr := oracleTrial(ns, key.Name, "shop")
			tr.Spec.Agent.BaseURL = "https://llm.example/v1"
			tr.Spec.Agent.APIKeySecretRef = &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: "agent"}
			Expect(h.Client.Create(ctx, tr)).To(Succeed())
			t := completed(key)
			Expect(t.Status.Phase).To(Equal(evalv1.PhaseInvalid), describeTrial(t))
			failed := findCond(t.Status.Conditions, evalv1.TrialFailed)
			Expect(failed).NotTo(BeNil())
			Expect(failed.Reason).To(Equal(evalv1.ReasonSecretNotAllowed))
			Expect(failed.Message).To(Equal(fmt.Sprintf(wantMsg, ns)))
			Expect(t.Status.Attempts).To(BeEmpty())
			Consistently(func() []corev1.Pod { return podsOf(key) }, 300*time.Millisecond, pollEvery).Should(BeEmpty())
			var np networkingv1.NetworkPolicy
			Expect(apierrors.IsNotFound(h.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: controllers.NetworkPolicyName(key.Name)}, &np))).To(BeTrue())
		},
		Entry("no annotation", "key-bare", nil,
			"spec.agent.apiKeySecretRef: secret %s/key-bare may not be sent to https://llm.example/v1: it has no annotation eval.tolokaforge.io/allowed-base-urls listing the base URLs it may be sent to"),
		Entry("base URL not listed", "key-elsewhere", map[string]string{evalv1.AnnotationAllowedBaseURLs: "https://api.openai.com/v1\nhttps://llm.example/v2"},
			`spec.agent.apiKeySecretRef: secret %s/key-elsewhere may not be sent to https://llm.example/v1: its annotation eval.tolokaforge.io/allowed-base-urls lists only ["https://api.openai.com/v1" "https://llm.example/v2"]`),
	)

	It("retries an attempt orphaned by a manager restart: attempt 1 InfraFailed, attempt 2 Passed, exactly one grade", func() {
		key := types.NamespacedName{Namespace: ns, Name: "restarted"}
		gt := gates.Hold(key, 1)
		Expect(h.Client.Create(ctx, oracleTrial(ns, key.Name, "shop"))).To(Succeed())
		waitGate(gt)
		Eventually(func() string { return string(getTrial(key).Status.Phase) }, waitLong, pollEvery).Should(Equal("Running"))

		Expect(mgr.Stop()).To(Succeed())
		Expect(getTrial(key).Status.Attempts[0].Outcome).To(Equal(evalv1.OutcomeRunning),
			"a stopping manager records nothing about the attempt it abandons")
		mgr = startManager(10)

		t := completed(key)
		Expect(findCond(t.Status.Conditions, evalv1.TrialCompleted).Reason).To(Equal("Passed"), describeTrial(t))
		Expect(t.Status.Attempts).To(HaveLen(2))
		Expect(t.Status.Attempts[0].Outcome).To(Equal(evalv1.OutcomeInfraFailed))
		Expect(t.Status.Attempts[0].Reason).To(Equal(evalv1.ReasonManagerRestarted))
		Expect(t.Status.Attempts[1].Outcome).To(Equal(evalv1.OutcomePassed))
		Expect(t.Status.Grade.Attempt).To(Equal(int32(2)))
		grades := rpcs.Of(key, "GradeTrial")
		Expect(grades).To(HaveLen(1))
		Expect(grades[0].Attempt).To(Equal(int32(2)))
		expectNoPods(key)
	})

	It("cancels the driver, cleans up the runner registration and deletes pods when a Trial is deleted mid-run", func() {
		key := types.NamespacedName{Namespace: ns, Name: "deleted"}
		gt := gates.Hold(key, 1)
		tr := oracleTrial(ns, key.Name, "shop")
		Expect(h.Client.Create(ctx, tr)).To(Succeed())
		waitGate(gt)
		Expect(rpcs.Of(key, "RegisterTrial")).To(ContainElement(HaveField("OK", true)))
		Expect(podsOf(key)).To(HaveLen(2))

		Expect(h.Client.Delete(ctx, tr)).To(Succeed())
		expectNoPods(key)
		Eventually(func() bool {
			err := h.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: controllers.NetworkPolicyName(key.Name)}, &networkingv1.NetworkPolicy{})
			return apierrors.IsNotFound(err)
		}, waitLong, pollEvery).Should(BeTrue())
		cleanups := rpcs.Of(key, "CleanupTrial")
		Expect(cleanups).To(HaveLen(1))
		Expect(cleanups[0].OK).To(BeTrue(), "the runner was alive and forgot the registration")
		Expect(cleanups[0].TrialID).To(Equal("shop_orders_02:0"))
		Expect(rpcs.Of(key, "ExecuteTool")).To(BeEmpty())
		Expect(rpcs.Of(key, "GradeTrial")).To(BeEmpty())
		Eventually(func() bool { _, ok := mgr.Pool.View(key); return ok }, waitLong, pollEvery).Should(BeFalse())
	})

	It("keeps a finished attempt's pods with keepPodsAfterFinished, and deletes the Trial (pods too) ttlSecondsAfterFinished after it finished", func() {
		skewNS := newNamespace()
		h.RunnerArgs.Store(skewNS, []string{"--min-engine-protocol=3"})
		Expect(h.Client.Create(ctx, shopTask(skewNS, "shop", nil))).To(Succeed())
		key := types.NamespacedName{Namespace: skewNS, Name: "kept"}
		tr := oracleTrial(skewNS, key.Name, "shop")
		tr.Spec.TTLSecondsAfterFinished = ptr.To[int32](4)
		tr.Spec.KeepPodsAfterFinished = true
		Expect(h.Client.Create(ctx, tr)).To(Succeed())

		t := completed(key)
		Expect(t.Status.Phase).To(Equal(evalv1.PhaseProtocolSkew))
		Consistently(func(g Gomega) {
			pods := podsOf(key)
			g.Expect(pods).To(HaveLen(2), "kept for debugging")
			for _, p := range pods {
				g.Expect(p.DeletionTimestamp).To(BeNil())
			}
		}, time.Second, pollEvery).Should(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(h.Client.Get(ctx, key, &evalv1.Trial{}))
		}, waitLong, pollEvery).Should(BeTrue(), "deleted after ttlSecondsAfterFinished")
		expectNoPods(key)
	})

	It("fails a Trial whose API-key Secret is missing before any pod, with an event naming it", func() {
		key := types.NamespacedName{Namespace: ns, Name: "nokey"}
		tr := oracleTrial(ns, key.Name, "shop")
		tr.Spec.Agent.APIKeySecretRef = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Key: "k"}
		Expect(h.Client.Create(ctx, tr)).To(Succeed())

		t := completed(key)
		msg := "Secret " + ns + "/absent not found (spec.agent.apiKeySecretRef)"
		Expect(t.Status.Phase).To(Equal(evalv1.PhaseInvalid), describeTrial(t))
		Expect(t.Status.Attempts).To(BeEmpty(), "no attempt of the budget used")
		rr := findCond(t.Status.Conditions, evalv1.TrialReferencesResolved)
		Expect(rr).NotTo(BeNil())
		Expect(rr.Status).To(Equal(metav1.ConditionFalse))
		Expect(rr.Reason).To(Equal(evalv1.ReasonSecretNotFound))
		Expect(rr.Message).To(Equal(msg))
		Expect(findCond(t.Status.Conditions, evalv1.TrialFailed).Reason).To(Equal(string(evalv1.PhaseInvalid)))
		Eventually(func() []string {
			var evs eventsv1.EventList
			Expect(h.Client.List(ctx, &evs, client.InNamespace(ns))).To(Succeed())
			var got []string
			for _, e := range evs.Items {
				if e.Regarding.Name == key.Name {
					got = append(got, e.Type+"/"+e.Reason+": "+e.Note)
				}
			}
			return got
		}, waitLong, pollEvery).Should(ConsistOf(
			"Warning/SecretNotFound: "+msg+"; no pods are created and the trial ends as Invalid",
			"Warning/Invalid: "+msg))
		Expect(podsOf(key)).To(BeEmpty())
		Expect(rpcs.Of(key, "RegisterTrial")).To(BeEmpty())
	})
})

// wrongGoldenPath gives the shop task a setup that places order O-001
// first, which its golden path (confirm_payment O-001) does not account for.
func wrongGoldenPath(m map[string]any) {
	m["initialization_actions"] = []any{map[string]any{
		"env_type":  "assistant",
		"tool_name": "place_order",
		"arguments": map[string]any{
			"customer_id": "C-101",
			"items":       []any{map[string]any{"product_id": "P-003", "quantity": 1, "unit_price": 27.0}},
		},
	}}
}

// metricValue reads a counter, gauge or histogram sample count from
// controller-runtime's registry, summed over series whose label matches.
func metricValue(name, label, value string) float64 {
	families, err := crmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	total := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			match := label == ""
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					match = true
				}
			}
			if !match {
				continue
			}
			switch {
			case m.Counter != nil:
				total += m.GetCounter().GetValue()
			case m.Gauge != nil:
				total += m.GetGauge().GetValue()
			case m.Histogram != nil:
				total += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return total
}
