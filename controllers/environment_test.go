package controllers

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"tolokaforge.io/operator/api/authn"
	"tolokaforge.io/operator/api/task"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

func terminalTask(image string) *task.TaskDescription {
	return &task.TaskDescription{TaskID: "hello-world", AdapterType: task.AdapterTerminalBench, Environment: &task.Environment{
		Image: image, CPUs: 1.5, MemoryMB: 1024, StorageMB: 2048, BuildTimeoutS: 300, Workdir: "/app",
		Env:   map[string]string{"B": "2", "A": "1"},
		Build: &task.EnvironmentBuild{Context: "environment", Dockerfile: "environment/Dockerfile"},
	}}
}

// The environment pod runs the task's image with our exec agent as its
// command, the exec agent's own token (never the runner's), the task's
// resources, and no service account token.
func TestEnvironmentPod(t *testing.T) {
	tr := testTrial()
	desc := terminalTask("registry.local:5055/tolokaforge-tasks/hello-world@sha256:" + strings.Repeat("a", 64))
	p := environmentPod(PodConfig{Image: "tolokaforge:1"}, attemptRef{tr, 2}, desc.Environment)
	if p.Name != "t1-a2-environment" || p.Labels[evalv1.LabelRole] != evalv1.RoleEnvironment || p.Labels[evalv1.LabelAttempt] != "2" {
		t.Fatalf("pod %s labels %v", p.Name, p.Labels)
	}
	if *p.Spec.EnableServiceLinks || *p.Spec.AutomountServiceAccountToken || p.Spec.RestartPolicy != corev1.RestartPolicyNever ||
		p.Spec.HostNetwork || p.Spec.HostPID || p.Spec.ShareProcessNamespace != nil {
		t.Fatalf("pod spec %+v", p.Spec)
	}
	init := p.Spec.InitContainers[0]
	if init.Image != "tolokaforge:1" || !slices.Equal(init.Command, []string{"/tolokaforge-execagent", "--install", "/.tolokaforge/execagent"}) ||
		!*init.SecurityContext.RunAsNonRoot || *init.SecurityContext.AllowPrivilegeEscalation {
		t.Fatalf("init container %+v", init)
	}
	c := p.Spec.Containers[0]
	if c.Image != desc.Environment.Image || c.Command[0] != "/.tolokaforge/execagent" || c.Command[1] != "--listen=$(POD_IP):7070" || c.WorkingDir != "/app" {
		t.Fatalf("container %+v", c)
	}
	if *c.SecurityContext.Privileged || c.SecurityContext.Capabilities != nil {
		t.Fatalf("security context %+v", c.SecurityContext)
	}
	var tokenRef *corev1.SecretKeySelector
	var names []string
	for _, e := range c.Env {
		names = append(names, e.Name)
		if e.Name == execAgentTokenEnv {
			tokenRef = e.ValueFrom.SecretKeyRef
		}
	}
	if tokenRef == nil || tokenRef.Name != AuthSecretName(tr, 2) || tokenRef.Key != EnvironmentTokenKey {
		t.Fatalf("token from %+v", tokenRef)
	}
	if !slices.Equal(names, []string{podIPEnv, execAgentTokenEnv, "A", "B"}) {
		t.Fatalf("env %v", names)
	}
	for _, v := range p.Spec.Volumes {
		if v.Secret != nil {
			t.Fatalf("the environment pod mounts secret volume %s (the runner's token lives there)", v.Name)
		}
	}
	want := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("1Gi"), corev1.ResourceEphemeralStorage: resource.MustParse("2Gi")}
	for name, q := range want {
		if got := c.Resources.Requests[name]; got.Cmp(q) != 0 {
			t.Errorf("request %s = %s, want %s", name, got.String(), q.String())
		}
		if got := c.Resources.Limits[name]; got.Cmp(q) != 0 {
			t.Errorf("limit %s = %s, want %s", name, got.String(), q.String())
		}
	}
}

// The runner of a terminal task reads the exec agent's token from a file;
// other runners do not mount it.
func TestRunnerPodEnvironmentToken(t *testing.T) {
	tr := testTrial()
	for _, tc := range []struct {
		name  string
		desc  *task.TaskDescription
		items []string
		flag  bool
	}{
		{"terminal task", terminalTask("img"), []string{authn.SecretKey, EnvironmentTokenKey}, true},
		{"tool-use task", &task.TaskDescription{TaskID: "shop"}, []string{authn.SecretKey}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := runnerPod(PodConfig{Image: "i"}, attemptRef{tr, 1}, tc.desc)
			var items []string
			for _, v := range p.Spec.Volumes {
				if v.Name == authVolume {
					for _, it := range v.Secret.Items {
						items = append(items, it.Key)
					}
				}
			}
			if !slices.Equal(items, tc.items) {
				t.Errorf("auth items %v, want %v", items, tc.items)
			}
			if got := slices.Contains(p.Spec.Containers[0].Args, "--environment-token-file="+environmentTokenFile); got != tc.flag {
				t.Errorf("--environment-token-file present %v, want %v", got, tc.flag)
			}
			db := dbServicePod(PodConfig{Image: "i"}, attemptRef{tr, 1})
			for _, v := range db.Spec.Volumes {
				if v.Secret != nil && len(v.Secret.Items) != 1 {
					t.Errorf("the DB service mounts %v", v.Secret.Items)
				}
			}
		})
	}
}

func selects(np *networkingv1.NetworkPolicy, podLabels map[string]string) bool {
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil {
		panic(err)
	}
	return sel.Matches(labels.Set(podLabels))
}

// The environment answers its own runner on the exec agent's port and
// nobody else; it reaches nothing unless the task allows the internet; the
// trial's own policy does not select it (a union would widen it).
func TestEnvironmentPolicy(t *testing.T) {
	tr := testTrial()
	env := podLabels(tr.Name, 1, evalv1.RoleEnvironment)
	runner := podLabels(tr.Name, 1, evalv1.RoleRunner)
	np := EnvironmentPolicy(tr, terminalTask("img").Environment)
	if !selects(np, env) || selects(np, runner) {
		t.Fatal("the environment policy must select the environment pod alone")
	}
	if own := NetworkPolicy(tr, ManagerPeer{}); selects(own, env) || !selects(own, runner) {
		t.Fatal("the trial's policy must select its runner and not its environment")
	}
	if len(np.Spec.Ingress) != 1 || len(np.Spec.Ingress[0].From) != 1 || np.Spec.Ingress[0].Ports[0].Port.IntVal != EnvironmentPort {
		t.Fatalf("ingress %+v", np.Spec.Ingress)
	}
	from := np.Spec.Ingress[0].From[0].PodSelector.MatchLabels
	if from[evalv1.LabelRole] != evalv1.RoleRunner || from[evalv1.LabelTrial] != evalv1.LabelValue(tr.Name) {
		t.Fatalf("ingress from %v", from)
	}
	if len(np.Spec.Egress) != 0 || !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
		t.Fatalf("egress %+v types %v: want none", np.Spec.Egress, np.Spec.PolicyTypes)
	}
	open := terminalTask("img").Environment
	open.AllowInternet = true
	if eg := EnvironmentPolicy(tr, open).Spec.Egress; len(eg) != 1 || len(eg[0].To) != 0 {
		t.Fatalf("allow_internet egress %+v", eg)
	}
	var toEnv bool
	for _, r := range NetworkPolicy(tr, ManagerPeer{}).Spec.Egress {
		for _, to := range r.To {
			toEnv = toEnv || to.PodSelector.MatchLabels[evalv1.LabelRole] == evalv1.RoleEnvironment && r.Ports[0].Port.IntVal == EnvironmentPort
		}
	}
	if !toEnv {
		t.Fatal("the runner may not reach its environment")
	}
}

func envPod(tr *evalv1.Trial, n int32, ip string) *corev1.Pod {
	p := environmentPod(PodConfig{Image: "i"}, attemptRef{tr, n}, terminalTask("img").Environment)
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	return p
}

// A terminal task's attempt creates three pods, hands the driver the
// environment's IP once all three are Ready, waits build_timeout_s for
// it, and names an image that cannot be pulled.
func TestPlanTerminalTask(t *testing.T) {
	resolved := &resolvedTask{Desc: terminalTask("img")}
	tr := testTrial()
	p := planTrial(&world{Now: t0, Trial: tr, Task: resolved})
	if diff := cmp.Diff([]string{evalv1.RoleDBService, evalv1.RoleRunner, evalv1.RoleEnvironment}, p.CreatePod); diff != "" {
		t.Errorf("pods (-want +got):\n%s", diff)
	}
	if a := p.Status.Attempts[0]; a.EnvironmentPod != "t1-a1-environment" {
		t.Errorf("attempt %+v", a)
	}
	if p.Env == nil || p.RequeueAfter != 300*time.Second || !strings.Contains(p.Events[0].Message, "t1-a1-environment") {
		t.Errorf("env %v requeue %s event %q", p.Env, p.RequeueAfter, p.Events[0].Message)
	}

	all := map[string]bool{evalv1.RoleRunner: true, evalv1.RoleDBService: true, evalv1.RoleEnvironment: true}
	tr = running(1)
	w := &world{Now: t0.Add(2 * time.Second), Trial: tr, AttemptTask: resolved,
		Pods:        podsOf(readyPod(tr, 1, evalv1.RoleRunner, "10.0.0.1"), readyPod(tr, 1, evalv1.RoleDBService, "10.0.0.2")),
		Driver:      &driverView{AttemptID: "uid-1-1", State: stateClaimed},
		PodsCreated: all, PodsSeen: map[string]bool{evalv1.RoleRunner: true, evalv1.RoleDBService: true}}
	if p := planTrial(w); p.Submit {
		t.Fatal("submitted before the environment was Ready")
	}
	w.Pods = podsOf(readyPod(tr, 1, evalv1.RoleRunner, "10.0.0.1"), readyPod(tr, 1, evalv1.RoleDBService, "10.0.0.2"), envPod(tr, 1, "10.0.0.3"))
	if p := planTrial(w); !p.Submit || p.EnvIP != "10.0.0.3" {
		t.Fatalf("submit %v env ip %q", p.Submit, p.EnvIP)
	}

	pulling := envPod(tr, 1, "")
	pulling.Status = corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "environment",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "nope"`}}}}}
	w.Pods = podsOf(readyPod(tr, 1, evalv1.RoleRunner, "10.0.0.1"), readyPod(tr, 1, evalv1.RoleDBService, "10.0.0.2"), pulling)
	w.Now = t0.Add(299 * time.Second)
	if p := planTrial(w); p.Status.Attempts[0].EndTime != nil {
		t.Fatal("ended before build_timeout_s (300 s) elapsed, though podsReady is 120 s")
	}
	w.Now = t0.Add(300 * time.Second)
	p = planTrial(w)
	a := p.Status.Attempts[0]
	if a.Outcome != evalv1.OutcomeInfraFailed || a.Reason != evalv1.ReasonEnvironmentImageUnavailable || !strings.Contains(a.Message, "t1-a1-environment") {
		t.Fatalf("attempt %+v", a)
	}
	pulling.Status.ContainerStatuses = nil
	if p := planTrial(w); p.Status.Attempts[0].Reason != evalv1.ReasonEnvironmentNotReady {
		t.Fatalf("reason %s", p.Status.Attempts[0].Reason)
	}
}

// A terminal task whose Dockerfile was never built is Invalid before any
// pod, and the message says how to build it.
func TestPlanRefusesATerminalTaskWithoutAnImage(t *testing.T) {
	desc := terminalTask("")
	w := &world{Now: t0, Trial: testTrial(), Task: &resolvedTask{Desc: desc}, ImageErr: environmentImageErr(desc)}
	p := planTrial(w)
	if p.Status.Phase != evalv1.PhaseInvalid || len(p.CreatePod) != 0 || !strings.Contains(cond(&p.Status, evalv1.TrialCompleted).Message, "tolokaforge pack build") ||
		!strings.Contains(cond(&p.Status, evalv1.TrialCompleted).Message, "environment/Dockerfile") {
		t.Fatalf("phase %s pods %v message %q", p.Status.Phase, p.CreatePod, cond(&p.Status, evalv1.TrialCompleted).Message)
	}
	if environmentImageErr(terminalTask("img")) != nil || environmentImageErr(&task.TaskDescription{}) != nil {
		t.Fatal("refused a task that has its image, or no environment")
	}
}
