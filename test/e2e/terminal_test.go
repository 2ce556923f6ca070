package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/test/fakellm"
)

// termNS runs terminal tasks: their images run as root, so it enforces the
// baseline Pod Security profile (the runner and DB service pods there still
// meet restricted's rules; only the environment pod needs baseline).
const termNS = "e2e-term"

// terminalFixtures are the terminal tasks built and run on the node: a
// Harbor task and a Terminal-Bench 1 task (examples/terminal), and a Harbor
// task whose solution forges its reward (test/e2e/testdata/terminal).
var terminalFixtures = []string{filepath.Join("examples", "terminal"), filepath.Join("test", "e2e", "testdata", "terminal")}

func termTrial(name string) *evalv1.Trial {
	GinkgoHelper()
	var t evalv1.Trial
	Expect(k8s.Get(context.Background(), types.NamespacedName{Namespace: termNS, Name: name}, &t)).To(Succeed())
	return &t
}

func termPhase(name string) func() evalv1.TrialPhase {
	return func() evalv1.TrialPhase {
		var t evalv1.Trial
		if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: termNS, Name: name}, &t); err != nil {
			return evalv1.TrialPhase("get: " + err.Error())
		}
		return t.Status.Phase
	}
}

func oracleTrial(name, taskName string, maxAttempts int32) *evalv1.Trial {
	return &evalv1.Trial{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: termNS},
		Spec: evalv1.TrialSpec{
			TaskRef:     &evalv1.TaskReference{Name: taskName},
			Agent:       evalv1.ModelSpec{Provider: evalv1.ProviderOracle},
			RetryPolicy: evalv1.RetryPolicy{MaxAttempts: maxAttempts},
		},
	}
}

// packBuild runs `tolokaforge pack build` as a user would, into the node's
// registry, and applies what it prints; it returns the applied Task names.
func packBuild(dirs ...string) []string {
	GinkgoHelper()
	bin, registry := os.Getenv("E2E_TOLOKAFORGE"), os.Getenv("E2E_REGISTRY")
	Expect(bin).NotTo(BeEmpty(), "E2E_TOLOKAFORGE names the tolokaforge binary")
	Expect(registry).NotTo(BeEmpty(), "E2E_REGISTRY names the node's registry (cluster registry)")
	logs := GinkgoT().TempDir()
	args := append([]string{"pack", "build"}, dirs...)
	args = append(args, "--registry", registry, "--insecure-registry", "--namespace", termNS, "--log-dir", logs)
	cmd := exec.Command(bin, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	Expect(err).NotTo(HaveOccurred(), "pack build: %v\n%s", err, stderr.String())
	GinkgoWriter.Printf("pack build %s in %s:\n%s", strings.Join(dirs, " "), time.Since(start).Round(time.Millisecond), stderr.String())
	applied := mustKubectl(string(out), "apply", "--server-side", "-f", "-", "-o", "name")
	var tasks []string
	for _, l := range strings.Fields(applied) {
		if n, ok := strings.CutPrefix(l, "task.eval.tolokaforge.io/"); ok {
			tasks = append(tasks, n)
		}
	}
	sort.Strings(tasks)
	return tasks
}

// terminalSpecs: terminal tasks in their own containers on the real node:
// images built from the tasks' Dockerfiles by `pack build` into the node's
// registry, pulled by containerd, the exec agent as their PID 1.
func terminalSpecs() {
	It("grants a namespace for terminal tasks that enforces the baseline Pod Security profile", func() {
		grantNamespace(termNS, "baseline")
	})

	It("builds a Harbor and a Terminal-Bench 1 task from their Dockerfiles, and the oracle Passes both in the tasks' own containers", func() {
		var dirs []string
		for _, d := range terminalFixtures {
			dirs = append(dirs, filepath.Join(root, d))
		}
		Expect(packBuild(dirs...)).To(Equal([]string{"count-lines-tb1", "forge-harbor", "hello-harbor"}))
		ctx := context.Background()
		for _, name := range []string{"hello-harbor", "count-lines-tb1"} {
			Expect(k8s.Create(ctx, oracleTrial(name+"-oracle", name, 2))).To(Succeed())
		}
		for _, name := range []string{"hello-harbor", "count-lines-tb1"} {
			tr := name + "-oracle"
			Eventually(termPhase(tr)).WithTimeout(5*time.Minute).WithPolling(time.Second).
				Should(Equal(evalv1.PhasePassed), func() string { return describe(termTrial(tr)) })
			t := termTrial(tr)
			Expect(t.Status.Grade.Score).To(Equal(1.0), describe(t))
			Expect(t.Status.Attempts[len(t.Status.Attempts)-1].EnvironmentPod).To(Equal(tr + "-a" + fmt.Sprint(len(t.Status.Attempts)) + "-environment"))
			GinkgoWriter.Printf("%s: %s\n", tr, strings.ReplaceAll(t.Status.Grade.Reasons, "\n", "; "))
		}
		// The Terminal-Bench 1 task wrote no reward file: its grade is
		// pytest's -rA summary, each test a named component.
		Expect(termTrial("count-lines-tb1-oracle").Status.Grade.Reasons).To(ContainSubstring("test_count_is_right"))
	})

	It("scores a forging solution 0: planted reward.txt and reward.json, a rewritten /tests/test.sh, conftest.py files, background writers", func() {
		ctx := context.Background()
		Expect(k8s.Create(ctx, oracleTrial("forge-harbor-oracle", "forge-harbor", 1))).To(Succeed())
		Eventually(termPhase("forge-harbor-oracle")).WithTimeout(5*time.Minute).WithPolling(time.Second).
			Should(Equal(evalv1.PhaseFailed), func() string { return describe(termTrial("forge-harbor-oracle")) })
		t := termTrial("forge-harbor-oracle")
		Expect(t.Status.Grade).NotTo(BeNil(), describe(t))
		Expect(t.Status.Grade.Score).To(Equal(0.0), describe(t))
	})

	It("passes a fake-model agent whose tool calls are bash commands run in the task's container", func() {
		ctx := context.Background()
		image := os.Getenv("E2E_FAKELLM_IMAGE")
		Expect(image).NotTo(BeEmpty(), "E2E_FAKELLM_IMAGE names the fake LLM image")
		url := "http://fakellm." + termNS + ".svc:8080/v1"
		script, err := json.Marshal(map[string]any{"models": map[string][]fakellm.Reply{
			"bash-agent": {
				{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "bash", Arguments: `{"command":"ls /app && pwd"}`}}},
				{ToolCalls: []fakellm.ToolCall{{ID: "c2", Name: "bash", Arguments: `{"command":"echo 'Hello, World!' > hello.txt && cat /app/hello.txt"}`}}},
				{Content: "Done: /app/hello.txt holds the line."},
			},
		}})
		Expect(err).NotTo(HaveOccurred())
		Expect(k8s.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "llm", Namespace: termNS,
				Annotations: map[string]string{evalv1.AnnotationAllowedBaseURLs: url}},
			Data: map[string][]byte{"api-key": []byte(fakeLLMKey)},
		})).To(Succeed())
		mustKubectl(fakeLLMManifest(image, script), "-n", termNS, "apply", "-f", "-")
		mustKubectl("", "-n", termNS, "wait", "--for=condition=Ready", "pod/fakellm", "--timeout=2m")
		key := &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "llm"}, Key: "api-key"}
		tr := &evalv1.Trial{
			ObjectMeta: metav1.ObjectMeta{Name: "hello-harbor-bash", Namespace: termNS},
			Spec: evalv1.TrialSpec{
				TaskRef:     &evalv1.TaskReference{Name: "hello-harbor"},
				Agent:       evalv1.ModelSpec{Provider: evalv1.ProviderOpenAI, Model: "bash-agent", BaseURL: url, APIKeySecretRef: key},
				RetryPolicy: evalv1.RetryPolicy{MaxAttempts: 1}, // the script answers one attempt
			},
		}
		Expect(k8s.Create(ctx, tr)).To(Succeed())
		Eventually(termPhase(tr.Name)).WithTimeout(5*time.Minute).WithPolling(time.Second).
			Should(Equal(evalv1.PhasePassed), func() string { return describe(termTrial(tr.Name)) })
		t := termTrial(tr.Name)
		Expect(t.Status.Grade.Score).To(Equal(1.0), describe(t))
		Expect(t.Status.Usage.Agent.Calls).To(Equal(int64(3)), describe(t))
	})

	It("ends a Trial whose environment image cannot be pulled InfraFailed, naming the image, never averaged as a 0", func() {
		ctx := context.Background()
		var tk evalv1.Task
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: termNS, Name: "hello-harbor"}, &tk)).To(Succeed())
		var desc map[string]any
		Expect(json.Unmarshal(tk.Spec.Description.Raw, &desc)).To(Succeed())
		env := desc["environment"].(map[string]any)
		missing := os.Getenv("E2E_REGISTRY") + "/tolokaforge-tasks/no-such-task@sha256:" + strings.Repeat("0", 64)
		env["image"] = missing
		env["build_timeout_s"] = 20
		raw, err := json.Marshal(desc)
		Expect(err).NotTo(HaveOccurred())
		bad := &evalv1.Task{
			ObjectMeta: metav1.ObjectMeta{Name: "unpullable", Namespace: termNS},
			Spec:       *tk.Spec.DeepCopy(),
		}
		bad.Spec.Description = apiextensionsv1.JSON{Raw: raw}
		Expect(k8s.Create(ctx, bad)).To(Succeed())
		tr := oracleTrial("unpullable-oracle", "unpullable", 1)
		tr.Spec.Timeouts.PodsReady = &metav1.Duration{Duration: 20 * time.Second}
		Expect(k8s.Create(ctx, tr)).To(Succeed())
		Eventually(termPhase(tr.Name)).WithTimeout(3*time.Minute).WithPolling(time.Second).
			Should(Equal(evalv1.PhaseInfraFailed), func() string { return describe(termTrial(tr.Name)) })
		t := termTrial(tr.Name)
		a := t.Status.Attempts[0]
		Expect(a.Reason).To(Equal(evalv1.ReasonEnvironmentImageUnavailable), describe(t))
		Expect(a.Message).To(ContainSubstring("no-such-task"), describe(t))
		Expect(t.Status.Grade).To(BeNil(), "an infrastructure failure is not graded: %s", describe(t))
	})

	It("runs every task of E2E_TASKS with the oracle, one line per task", func() {
		dir := os.Getenv("E2E_TASKS")
		if dir == "" {
			Skip("E2E_TASKS is not set (E2E_TASKS=DIR make e2e imports, builds and runs every task under DIR)")
		}
		abs, err := filepath.Abs(dir)
		Expect(err).NotTo(HaveOccurred())
		ctx := context.Background()
		var before evalv1.TaskList
		Expect(k8s.List(ctx, &before, client.InNamespace(termNS))).To(Succeed())
		tasks := packBuild(abs)
		Expect(tasks).NotTo(BeEmpty())
		for _, name := range tasks {
			_ = k8s.Delete(ctx, &evalv1.Trial{ObjectMeta: metav1.ObjectMeta{Name: "tasks-" + name, Namespace: termNS}})
			Expect(k8s.Create(ctx, oracleTrial("tasks-"+name, name, 2))).To(Succeed())
		}
		for _, name := range tasks {
			Eventually(func() bool { return termTrial("tasks-"+name).Status.CompletionTime != nil }).
				WithTimeout(20 * time.Minute).WithPolling(2 * time.Second).Should(BeTrue())
			t := termTrial("tasks-" + name)
			score := 0.0
			if t.Status.Grade != nil {
				score = t.Status.Grade.Score
			}
			line := fmt.Sprintf("e2e task %s: %s score %g", t.Status.TaskID, t.Status.Phase, score)
			GinkgoWriter.Println(line)
			fmt.Fprintln(os.Stderr, line)
		}
	})
}
