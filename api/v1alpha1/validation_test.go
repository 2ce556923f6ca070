package v1alpha1_test

import (
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

const shopDescription = `{"task_id":"shop_orders_02","name":"Shop","category":"tool_use",
 "description":"Place and pay for an order","adapter_type":"native","system_prompt":"You are a shop agent.",
 "initial_state":{"tables":{"customers":[{"id":"C-101","balance":300.0}]}}}`

func newTask(name, description string) *evalv1.Task {
	return &evalv1.Task{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       evalv1.TaskSpec{Description: apiextensionsv1.JSON{Raw: []byte(description)}},
	}
}

func withFiles(name, digest string) *evalv1.Task {
	t := newTask(name, shopDescription)
	t.Spec.Files = &evalv1.PackFiles{Digest: digest, Size: 10, ConfigMap: name + "-files"}
	return t
}

func oracleTrial(name string) *evalv1.Trial {
	return &evalv1.Trial{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: evalv1.TrialSpec{
			TaskRef: &evalv1.TaskReference{Name: "shop"},
			Agent:   evalv1.ModelSpec{Provider: evalv1.ProviderOracle},
		},
	}
}

var _ = Describe("Task and Trial validation", func() {
	It("stores a Task with its description verbatim, unknown keys included", func() {
		// Unknown keys must survive to the runner's strict decoder, which names
		// them by JSON path; the API server must not prune them silently.
		desc := `{"task_id":"t1","adapter_type":"native","system_prompt":"p","grading":{"state_checks":{"hsah_enabled":true}}}`
		Expect(k8sClient.Create(ctx, newTask("verbatim", desc))).To(Succeed())
		var got evalv1.Task
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: "default", Name: "verbatim"}, &got)).To(Succeed())
		Expect(string(got.Spec.Description.Raw)).To(ContainSubstring(`"hsah_enabled":true`))
	})

	It("creates a Task and an oracle Trial, defaulting the user simulator mode", func() {
		Expect(k8sClient.Create(ctx, newTask("shop", shopDescription))).To(Succeed())
		trial := oracleTrial("oracle-0")
		trial.Spec.UserSimulator = &evalv1.UserSimulatorSpec{}
		Expect(k8sClient.Create(ctx, trial)).To(Succeed())
		var got evalv1.Trial
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(trial), &got)).To(Succeed())
		Expect(got.Spec.UserSimulator.Mode).To(Equal(evalv1.UserSimulatorScripted))
		Expect(got.Spec.Agent.Provider).To(Equal(evalv1.ProviderOracle))
	})

	DescribeTable("refuses invalid objects with the server's message",
		func(obj client.Object, want string) {
			err := k8sClient.Create(ctx, obj)
			Expect(err).To(HaveOccurred())
			Expect(err.Error()).To(ContainSubstring(want))
		},
		Entry("a Trial with both taskRef and an inline task", func() *evalv1.Trial {
			t := oracleTrial("both")
			t.Spec.Task = &apiextensionsv1.JSON{Raw: []byte(shopDescription)}
			return t
		}(), "exactly one of taskRef and task must be set"),
		Entry("a Trial with neither taskRef nor task", func() *evalv1.Trial {
			t := oracleTrial("neither")
			t.Spec.TaskRef = nil
			return t
		}(), "exactly one of taskRef and task must be set"),
		Entry("an unknown provider", func() *evalv1.Trial {
			t := oracleTrial("bad-provider")
			t.Spec.Agent.Provider = "anthropic-direct"
			return t
		}(), `spec.agent.provider: Unsupported value: "anthropic-direct"`),
		Entry("an openai agent without a model", func() *evalv1.Trial {
			t := oracleTrial("no-model")
			t.Spec.Agent.Provider = evalv1.ProviderOpenAI
			return t
		}(), "model is required unless provider is oracle"),
		Entry("a temperature out of range", func() *evalv1.Trial {
			t := oracleTrial("hot")
			t.Spec.Agent = evalv1.ModelSpec{Provider: evalv1.ProviderOpenAI, Model: "gpt", Temperature: ptr.To(3.5)}
			return t
		}(), "spec.agent.temperature: Invalid value: 3.5: spec.agent.temperature in body should be less than or equal to 2"),
		Entry("zero max turns", func() *evalv1.Trial {
			t := oracleTrial("zero-turns")
			t.Spec.MaxTurns = ptr.To[int32](0)
			return t
		}(), "spec.maxTurns in body should be greater than or equal to 1"),
		Entry("an llm user simulator without a model", func() *evalv1.Trial {
			t := oracleTrial("llm-user")
			t.Spec.UserSimulator = &evalv1.UserSimulatorSpec{Mode: evalv1.UserSimulatorLLM}
			return t
		}(), "model is required when mode is llm"),
		Entry("a Campaign with both selector and names", &evalv1.Campaign{
			ObjectMeta: metav1.ObjectMeta{Name: "both", Namespace: "default"},
			Spec: evalv1.CampaignSpec{
				Tasks:         evalv1.CampaignTasks{Names: []string{"shop"}, Selector: &metav1.LabelSelector{}},
				TrialsPerTask: 2,
				Agents:        []evalv1.NamedAgent{{Name: "oracle", Model: evalv1.ModelSpec{Provider: evalv1.ProviderOracle}}},
			},
		}, "exactly one of selector and names must be set"),
		Entry("a Task whose files digest is upper-case hex", withFiles("upper", "sha256:"+strings.Repeat("AB", 32)),
			"spec.files.digest: Invalid value: \"sha256:"+strings.Repeat("AB", 32)+"\": digest must be sha256: followed by 64 lowercase hex digits"),
		Entry("a Task whose files digest is another algorithm", withFiles("md5", "md5:"+strings.Repeat("a", 32)),
			"digest must be sha256: followed by 64 lowercase hex digits"),
		Entry("a Task whose files digest is one digit short", withFiles("short", "sha256:"+strings.Repeat("a", 63)),
			"digest must be sha256: followed by 64 lowercase hex digits"),
	)

	It("stores a Task whose files digest has the sha256 form", func() {
		Expect(k8sClient.Create(ctx, withFiles("files-ok", "sha256:"+strings.Repeat("0a", 32)))).To(Succeed())
	})

	It("refuses any change to a Trial's spec", func() {
		trial := oracleTrial("immutable")
		Expect(k8sClient.Create(ctx, trial)).To(Succeed())
		trial.Spec.TrialIndex = 7
		err := k8sClient.Update(ctx, trial)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("spec is immutable"))
	})

	It("lets spec.suspend change and nothing else beside it", func() {
		trial := oracleTrial("suspendable")
		Expect(k8sClient.Create(ctx, trial)).To(Succeed())
		trial.Spec.Suspend = ptr.To(true)
		Expect(k8sClient.Update(ctx, trial)).To(Succeed())
		trial.Spec.Suspend = ptr.To(false)
		Expect(k8sClient.Update(ctx, trial)).To(Succeed())
		trial.Spec.Suspend = nil
		Expect(k8sClient.Update(ctx, trial)).To(Succeed())

		for name, edit := range map[string]func(*evalv1.Trial){
			"add maxTurns":  func(t *evalv1.Trial) { t.Spec.MaxTurns = ptr.To[int32](3) },
			"drop taskRef":  func(t *evalv1.Trial) { t.Spec.TaskRef = nil; t.Spec.Task = &apiextensionsv1.JSON{Raw: []byte(`{}`)} },
			"change agent":  func(t *evalv1.Trial) { t.Spec.Agent.Model = "other" },
			"keep pods too": func(t *evalv1.Trial) { t.Spec.KeepPodsAfterFinished = true; t.Spec.Suspend = ptr.To(true) },
			"set managedBy": func(t *evalv1.Trial) { t.Spec.ManagedBy = ptr.To(evalv1.ManagedByMultiKueue) },
			"enable slots":  func(t *evalv1.Trial) { t.Spec.Slots = &evalv1.SlotPolicy{Mode: evalv1.SlotsEnabled} },
		} {
			cur := &evalv1.Trial{}
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(trial), cur)).To(Succeed())
			edit(cur)
			err := k8sClient.Update(ctx, cur)
			Expect(err).To(HaveOccurred(), name)
			Expect(err.Error()).To(ContainSubstring("spec is immutable (only spec.suspend may change)"), name)
		}
	})

	It("defaults spec.slots: Enabled, 50 reuses, 30 idle seconds; refuses an unknown mode and zero reuses", func() {
		trial := oracleTrial("slotted")
		trial.Spec.Slots = &evalv1.SlotPolicy{}
		Expect(k8sClient.Create(ctx, trial)).To(Succeed())
		got := &evalv1.Trial{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(trial), got)).To(Succeed())
		Expect(*got.Spec.Slots).To(Equal(evalv1.SlotPolicy{Mode: evalv1.SlotsEnabled, MaxReuses: 50, IdleSeconds: ptr.To[int32](30)}))
		Expect(got.Spec.Slots.Enabled()).To(BeTrue())

		bad := oracleTrial("slotted-bad-mode")
		bad.Spec.Slots = &evalv1.SlotPolicy{Mode: "Sometimes"}
		err := k8sClient.Create(ctx, bad)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("spec.slots.mode"))
		bad = oracleTrial("slotted-no-reuse")
		bad.Spec.Slots = &evalv1.SlotPolicy{Mode: evalv1.SlotsEnabled, MaxReuses: -1}
		err = k8sClient.Create(ctx, bad)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("spec.slots.maxReuses"))
	})

	It("leaves a refused Trial absent", func() {
		t := oracleTrial("refused")
		t.Spec.TaskRef = nil
		Expect(k8sClient.Create(ctx, t)).NotTo(Succeed())
		err := k8sClient.Get(ctx, client.ObjectKeyFromObject(t), &evalv1.Trial{})
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(Equal(fmt.Sprintf("trials.eval.tolokaforge.io %q not found", "refused")))
	})
})
