package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/examples/shop"
	"tolokaforge.io/operator/test/fakellm"
)

// fakeLLMURL is the fake provider's Service as every pod names it: the
// manager's agent and gateway resolve it through the cluster's DNS.
const fakeLLMURL = "http://fakellm." + ns + ".svc:8080/v1"

// fakeLLMKey is the provider key the fake LLM requires: only the manager has
// it (from the Secret), so a judge call that did not pass the gateway fails.
const fakeLLMKey = "sk-e2e-fake-provider-key"

// fakeLLMManifest runs test/fakellm (cmd/fakellm, imported as image) as a pod
// of the restricted namespace with a Service, replaying script.
func fakeLLMManifest(image string, script []byte) string {
	return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: fakellm-script
data:
  script.json: %q
---
apiVersion: v1
kind: Pod
metadata:
  name: fakellm
  labels: {app: fakellm}
spec:
  securityContext:
    runAsNonRoot: true
    runAsUser: 65532
    runAsGroup: 65532
    seccompProfile: {type: RuntimeDefault}
  containers:
  - name: fakellm
    image: %s
    imagePullPolicy: Never
    args: [--listen=:8080, --script=/script/script.json, --api-key-env=FAKELLM_API_KEY]
    env:
    - name: FAKELLM_API_KEY
      valueFrom: {secretKeyRef: {name: llm, key: api-key}}
    ports: [{containerPort: 8080}]
    readinessProbe:
      tcpSocket: {port: 8080}
      timeoutSeconds: 5
    securityContext:
      allowPrivilegeEscalation: false
      readOnlyRootFilesystem: true
      capabilities: {drop: [ALL]}
    volumeMounts: [{name: script, mountPath: /script}]
  volumes:
  - name: script
    configMap: {name: fakellm-script}
---
apiVersion: v1
kind: Service
metadata:
  name: fakellm
spec:
  selector: {app: fakellm}
  ports: [{port: 8080, targetPort: 8080}]
`, script, image)
}

// fullShopTask is examples/shop/task_full.json (the shop graded by every
// component, an llm_judge among them) as a Task beside the sample one, its
// tables from the sample's ConfigMap.
func fullShopTask() *evalv1.Task {
	GinkgoHelper()
	var tk evalv1.Task
	Expect(yaml.Unmarshal([]byte(sample("eval_v1alpha1_task_shop.yaml")), &tk)).To(Succeed())
	var desc map[string]json.RawMessage
	Expect(json.Unmarshal(shop.TaskFullJSON(), &desc)).To(Succeed())
	var initial map[string]json.RawMessage
	Expect(json.Unmarshal(desc["initial_state"], &initial)).To(Succeed())
	delete(initial, "tables") // in the ConfigMap, number literals kept
	b, err := json.Marshal(initial)
	Expect(err).NotTo(HaveOccurred())
	desc["initial_state"] = b
	raw, err := json.Marshal(desc)
	Expect(err).NotTo(HaveOccurred())
	return &evalv1.Task{
		ObjectMeta: metav1.ObjectMeta{Name: "shop-orders-02-full", Namespace: ns},
		Spec: evalv1.TaskSpec{
			InitialStateFrom:   tk.Spec.InitialStateFrom,
			InitialUserMessage: tk.Spec.InitialUserMessage,
			MaxTurns:           tk.Spec.MaxTurns,
			Description:        apiextensionsv1.JSON{Raw: raw},
		},
	}
}

// judgeSpecs: a judged Trial whose agent (in the manager) and judge (in the
// runner pod, through the gateway Service) reach the fake LLM pod by
// Service names the cluster's CoreDNS answers.
func judgeSpecs() {
	It("grades a Trial with its LLM judge: runner -> gateway Service -> fake LLM pod, all by DNS names", func() {
		ctx := context.Background()
		image := os.Getenv("E2E_FAKELLM_IMAGE")
		Expect(image).NotTo(BeEmpty(), "E2E_FAKELLM_IMAGE names the fake LLM image imported into the node")
		const justification = "judged by the fake LLM pod through the gateway"
		verdict := fmt.Sprintf(`{"criteria":[{"id":"polite","met":true,"score":1,"justification":%q},{"id":"accurate","met":true,"score":1,"justification":%q}]}`,
			justification, justification)
		script, err := json.Marshal(map[string]any{"models": map[string][]fakellm.Reply{
			"agent": {
				{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "list_products", Arguments: `{}`}, {ID: "c2", Name: "get_customer", Arguments: `{"customer_id":"C-101"}`}}},
				{ToolCalls: []fakellm.ToolCall{{ID: "c3", Name: "place_order", Arguments: `{"customer_id":"C-101","items":[{"product_id":"P-001","quantity":1,"unit_price":89.99},{"product_id":"P-002","quantity":2,"unit_price":34.5}]}`}}},
				{ToolCalls: []fakellm.ToolCall{{ID: "c4", Name: "confirm_payment", Arguments: `{"order_id":"O-001"}`}}},
				{Content: "Thank you! Order O-001 is placed and paid; your remaining balance is $141.01."},
			},
			"judge": {{Content: verdict, Usage: fakellm.Usage{PromptTokens: 900, CompletionTokens: 60}}},
		}})
		Expect(err).NotTo(HaveOccurred())

		// The provider key, opted in for the fake LLM's URL only.
		Expect(k8s.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "llm", Namespace: ns,
				Annotations: map[string]string{evalv1.AnnotationAllowedBaseURLs: fakeLLMURL}},
			Data: map[string][]byte{"api-key": []byte(fakeLLMKey)},
		})).To(Succeed())
		mustKubectl(fakeLLMManifest(image, script), "-n", ns, "apply", "-f", "-")
		mustKubectl("", "-n", ns, "wait", "--for=condition=Ready", "pod/fakellm", "--timeout=2m")
		Expect(k8s.Create(ctx, fullShopTask())).To(Succeed())

		key := &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "llm"}, Key: "api-key"}
		tr := &evalv1.Trial{
			ObjectMeta: metav1.ObjectMeta{Name: "shop-judged", Namespace: ns},
			Spec: evalv1.TrialSpec{
				TaskRef:       &evalv1.TaskReference{Name: "shop-orders-02-full"},
				Agent:         evalv1.ModelSpec{Provider: evalv1.ProviderOpenAI, Model: "agent", BaseURL: fakeLLMURL, APIKeySecretRef: key},
				UserSimulator: &evalv1.UserSimulatorSpec{Mode: evalv1.UserSimulatorScripted},
				Judge:         &evalv1.ModelSpec{Provider: evalv1.ProviderOpenAI, Model: "judge", BaseURL: fakeLLMURL, APIKeySecretRef: key},
				// The script answers one attempt.
				RetryPolicy: evalv1.RetryPolicy{MaxAttempts: 1},
			},
		}
		Expect(k8s.Create(ctx, tr)).To(Succeed())
		Eventually(trialPhase(tr.Name)).WithTimeout(4*time.Minute).WithPolling(time.Second).
			Should(Equal(evalv1.PhasePassed), func() string { return describe(getTrial(tr.Name)) })
		t := getTrial(tr.Name)
		Expect(t.Status.Grade).NotTo(BeNil())
		Expect(t.Status.Grade.Score).To(Equal(1.0), describe(t))
		Expect(t.Status.Grade.JudgeStatus).To(Equal(evalv1.JudgeCompleted), describe(t))
		Expect(t.Status.Grade.Reasons).To(ContainSubstring("Judge: score=1 (2/2 criteria met)"), describe(t))
		Expect(t.Status.Usage).NotTo(BeNil())
		Expect(t.Status.Usage.Judge.Calls).To(Equal(int64(1)))
		Expect(t.Status.Usage.Judge.PromptTokens).To(Equal(int64(900)))
		Expect(t.Status.Usage.Agent.Calls).To(Equal(int64(4)))
		GinkgoWriter.Printf("judged Trial: %s\n", strings.ReplaceAll(t.Status.Grade.Reasons, "\n", "; "))
	})
}
