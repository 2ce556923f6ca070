package controllers

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/gateway"
)

func testTrial() *evalv1.Trial {
	return &evalv1.Trial{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "t1", UID: "uid-1", Generation: 1},
		Spec: evalv1.TrialSpec{
			TaskRef: &evalv1.TaskReference{Name: "shop"},
			Agent:   evalv1.ModelSpec{Provider: evalv1.ProviderOracle},
		},
	}
}

// TestPodsPassRestricted checks every field Pod Security "restricted" and
// the issue demand, for both roles.
func TestPodsPassRestricted(t *testing.T) {
	cfg := PodConfig{Image: "registry/tolokaforge:v1"}
	tr := testTrial()
	for _, pod := range []*corev1.Pod{runnerPod(cfg, attemptRef{tr, 2}, nil), dbServicePod(cfg, attemptRef{tr, 2})} {
		t.Run(pod.Name, func(t *testing.T) {
			ps := pod.Spec
			if got := ptr.Deref(ps.AutomountServiceAccountToken, true); got {
				t.Errorf("automountServiceAccountToken = %v, want false", got)
			}
			if ps.RestartPolicy != corev1.RestartPolicyNever {
				t.Errorf("restartPolicy = %q, want Never", ps.RestartPolicy)
			}
			if ps.SecurityContext == nil || !ptr.Deref(ps.SecurityContext.RunAsNonRoot, false) {
				t.Errorf("pod runAsNonRoot not true: %+v", ps.SecurityContext)
			}
			if ps.SecurityContext.SeccompProfile == nil || ps.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
				t.Errorf("pod seccomp = %+v, want RuntimeDefault", ps.SecurityContext.SeccompProfile)
			}
			if len(ps.Containers) != 1 {
				t.Fatalf("containers = %d, want 1", len(ps.Containers))
			}
			c := ps.Containers[0]
			sc := c.SecurityContext
			if sc == nil {
				t.Fatal("container has no security context")
			}
			checks := map[string]bool{
				"allowPrivilegeEscalation=false": sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation,
				"readOnlyRootFilesystem=true":    ptr.Deref(sc.ReadOnlyRootFilesystem, false),
				"runAsNonRoot=true":              ptr.Deref(sc.RunAsNonRoot, false),
				"capabilities drop [ALL]":        sc.Capabilities != nil && reflect.DeepEqual(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) && len(sc.Capabilities.Add) == 0,
				"seccomp RuntimeDefault":         sc.SeccompProfile != nil && sc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault,
			}
			for what, ok := range checks {
				if !ok {
					t.Errorf("container %s: want %s", c.Name, what)
				}
			}
			if c.Image != "registry/tolokaforge:v1" || !reflect.DeepEqual(c.Command, []string{"tolokaforge"}) {
				t.Errorf("image/command = %q %q", c.Image, c.Command)
			}
			if len(c.Env) < 1 || c.Env[0].Name != "POD_IP" || c.Env[0].ValueFrom == nil ||
				c.Env[0].ValueFrom.FieldRef == nil || c.Env[0].ValueFrom.FieldRef.FieldPath != "status.podIP" {
				t.Errorf("env[0] = %+v, want POD_IP from status.podIP", c.Env)
			}
			if !hasMount(c, "tmp", "/tmp") {
				t.Errorf("no writable /tmp for a read-only root: %+v", c.VolumeMounts)
			}
			wantLabels := map[string]string{
				"app.kubernetes.io/managed-by": "tolokaforge",
				"eval.tolokaforge.io/trial":    "t1",
				"eval.tolokaforge.io/attempt":  "2",
				"eval.tolokaforge.io/role":     c.Name,
			}
			for k, v := range wantLabels {
				if pod.Labels[k] != v {
					t.Errorf("label %s = %q, want %q", k, pod.Labels[k], v)
				}
			}
			if len(pod.OwnerReferences) != 1 {
				t.Fatalf("ownerReferences = %+v", pod.OwnerReferences)
			}
			o := pod.OwnerReferences[0]
			if o.Kind != "Trial" || o.Name != "t1" || o.UID != "uid-1" || !ptr.Deref(o.Controller, false) || !ptr.Deref(o.BlockOwnerDeletion, false) {
				t.Errorf("owner = %+v, want controlling Trial t1", o)
			}
			if c.ReadinessProbe == nil {
				t.Fatal("no readiness probe")
			}
		})
	}
}

func hasMount(c corev1.Container, vol, path string) bool {
	for _, m := range c.VolumeMounts {
		if m.Name == vol && m.MountPath == path && !m.ReadOnly {
			return true
		}
	}
	return false
}

func TestRunnerPodArgsAndProbe(t *testing.T) {
	p := runnerPod(PodConfig{Image: "img", Entrypoint: "/tolokaforge"}, attemptRef{testTrial(), 1}, nil)
	c := p.Spec.Containers[0]
	if p.Name != "t1-a1-runner" {
		t.Errorf("name = %q", p.Name)
	}
	want := []string{"runner", "--listen=$(POD_IP):50051", "--work-dir=/var/lib/tolokaforge", "--auth-token-file=/var/run/tolokaforge/auth/token"}
	if !reflect.DeepEqual(c.Args, want) || c.Command[0] != "/tolokaforge" {
		t.Errorf("command/args = %q %q, want [/tolokaforge] %q", c.Command, c.Args, want)
	}
	if g := c.ReadinessProbe.GRPC; g == nil || g.Port != 50051 {
		t.Errorf("readiness = %+v, want gRPC health on 50051", c.ReadinessProbe)
	}
	if !hasMount(c, "work", runnerWorkDir) {
		t.Errorf("no emptyDir for --work-dir: %+v", c.VolumeMounts)
	}
	for _, v := range p.Spec.Volumes {
		if v.Secret != nil && v.Name != authVolume {
			t.Errorf("a Secret volume other than the credential without a judge: %+v", v)
		}
	}
}

func TestDBServicePodArgsAndProbe(t *testing.T) {
	p := dbServicePod(PodConfig{Image: "img"}, attemptRef{testTrial(), 3})
	c := p.Spec.Containers[0]
	if p.Name != "t1-a3-dbservice" {
		t.Errorf("name = %q", p.Name)
	}
	if want := []string{"dbservice", "--listen=$(POD_IP):8000", "--auth-token-file=/var/run/tolokaforge/auth/token"}; !reflect.DeepEqual(c.Args, want) {
		t.Errorf("args = %q, want %q", c.Args, want)
	}
	g := c.ReadinessProbe.HTTPGet
	if g == nil || g.Path != "/health" || g.Port.IntValue() != 8000 {
		t.Errorf("readiness = %+v, want HTTP GET /health on 8000", c.ReadinessProbe)
	}
}

func TestPodOverridesApplyPerRole(t *testing.T) {
	tr := testTrial()
	tr.Spec.Runner = evalv1.PodOverrides{
		Image:        "custom/runner:1",
		NodeSelector: map[string]string{"pool": "eval"},
		Tolerations:  []corev1.Toleration{{Key: "eval", Operator: corev1.TolerationOpExists}},
		Resources: &corev1.ResourceRequirements{Limits: corev1.ResourceList{
			corev1.ResourceMemory: resource.MustParse("512Mi"),
		}},
	}
	r := runnerPod(PodConfig{Image: "mgr:1"}, attemptRef{tr, 1}, nil)
	d := dbServicePod(PodConfig{Image: "mgr:1"}, attemptRef{tr, 1})
	if got := r.Spec.Containers[0].Image; got != "custom/runner:1" {
		t.Errorf("runner image = %q", got)
	}
	if got := d.Spec.Containers[0].Image; got != "mgr:1" {
		t.Errorf("dbservice image = %q, want the manager's", got)
	}
	if r.Spec.NodeSelector["pool"] != "eval" || len(r.Spec.Tolerations) != 1 {
		t.Errorf("runner scheduling = %v %v", r.Spec.NodeSelector, r.Spec.Tolerations)
	}
	if len(d.Spec.NodeSelector) != 0 || len(d.Spec.Tolerations) != 0 {
		t.Errorf("dbservice got the runner's scheduling: %v %v", d.Spec.NodeSelector, d.Spec.Tolerations)
	}
	if got := r.Spec.Containers[0].Resources.Limits.Memory().String(); got != "512Mi" {
		t.Errorf("runner memory limit = %q", got)
	}
	// The override must not alias the Trial's spec.
	tr.Spec.Runner.NodeSelector["pool"] = "changed"
	if r.Spec.NodeSelector["pool"] != "eval" {
		t.Error("pod node selector aliases the Trial spec")
	}
}

// TestRunnerPodHoldsTheGatewayTokenNeverAProviderKey: the judge's provider
// key stays in the manager; the runner pod mounts only the Trial's gateway
// token Secret, as a file.
func TestRunnerPodHoldsTheGatewayTokenNeverAProviderKey(t *testing.T) {
	const gw = "http://tolokaforge-gateway.tolokaforge-system.svc:8090/v1"
	tr := testTrial()
	tr.Spec.Judge = &evalv1.ModelSpec{Provider: evalv1.ProviderOpenAI, Model: "judge",
		APIKeySecretRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "keys"}, Key: "judge"},
		ExtraHeaders:    []evalv1.ExtraHeader{{Name: "X-Org", ValueFrom: evalv1.HeaderValueSource{SecretKeyRef: corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "hdr"}, Key: "org"}}}}}
	tr.Spec.Agent.APIKeySecretRef = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "keys"}, Key: "agent"}
	p := runnerPod(PodConfig{Image: "img", GatewayURL: gw}, attemptRef{tr, 1}, nil)
	c := p.Spec.Containers[0]
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			t.Errorf("env %s reads Secret %s/%s: no key may reach the runner's environment", e.Name, e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key)
		}
		if e.Value != "" {
			t.Errorf("env %s carries a literal value", e.Name)
		}
	}
	if len(c.EnvFrom) != 0 {
		t.Errorf("envFrom = %+v: no Secret may be loaded into the environment", c.EnvFrom)
	}
	var secrets []corev1.Volume
	for _, v := range p.Spec.Volumes {
		if v.Secret != nil && v.Name != authVolume {
			secrets = append(secrets, v)
		}
		if v.Projected != nil {
			t.Errorf("projected volume %s: no Secret may reach the runner but the gateway token", v.Name)
		}
	}
	if len(secrets) != 1 {
		t.Fatalf("Secret volumes = %+v, want exactly the gateway token's", secrets)
	}
	sv := secrets[0].Secret
	wantItems := []corev1.KeyToPath{{Key: gateway.TokenKey, Path: judgeKeyFile}}
	if sv.SecretName != "t1-llm-gateway" || !reflect.DeepEqual(sv.Items, wantItems) {
		t.Errorf("Secret volume = %+v, want only t1-llm-gateway/token as %s (provider keys stay in the manager)", sv, judgeKeyFile)
	}
	if sv.DefaultMode == nil || *sv.DefaultMode != 0o440 {
		t.Errorf("token file mode = %v, want 0440", sv.DefaultMode)
	}
	var mounted bool
	for _, m := range c.VolumeMounts {
		if m.Name == secrets[0].Name {
			mounted = m.MountPath == runnerSecretsDir && m.ReadOnly
		}
	}
	if !mounted {
		t.Errorf("token volume not mounted read-only at %s: %+v", runnerSecretsDir, c.VolumeMounts)
	}
	if !slices.Contains(c.Args, "--secrets-dir="+runnerSecretsDir) {
		t.Errorf("args = %q, want --secrets-dir=%s", c.Args, runnerSecretsDir)
	}

	// No gateway configured, or an oracle judge: no Secret but the attempt's
	// credential.
	for name, pod := range map[string]*corev1.Pod{
		"no gateway":   runnerPod(PodConfig{Image: "img"}, attemptRef{tr, 1}, nil),
		"oracle judge": runnerPod(PodConfig{Image: "img", GatewayURL: gw}, attemptRef{testTrial(), 1}, nil),
	} {
		for _, v := range pod.Spec.Volumes {
			if v.Secret != nil && v.Name != authVolume {
				t.Errorf("%s: Secret volume %+v", name, v.Secret)
			}
		}
	}

	s := gatewaySecret(tr, "ns/t1/abc")
	if s.Name != "t1-llm-gateway" || s.Namespace != tr.Namespace || string(s.Data[gateway.TokenKey]) != "ns/t1/abc" ||
		len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != tr.UID || len(s.Data) != 1 {
		t.Errorf("gateway Secret = %+v", s)
	}
}

func TestNamesStayWithinLimits(t *testing.T) {
	long := strings.Repeat("a", 253)
	for _, tc := range []struct {
		name, got string
		limit     int
	}{
		{"label", evalv1.LabelValue(long), 63},
		{"runner pod", PodName(long, 20, evalv1.RoleRunner), 253},
		{"dbservice pod", PodName(long, 20, evalv1.RoleDBService), 253},
		{"network policy", NetworkPolicyName(long), 253},
	} {
		if len(tc.got) > tc.limit {
			t.Errorf("%s: %d chars > %d", tc.name, len(tc.got), tc.limit)
		}
		if errs := validation.IsDNS1123Subdomain(tc.got); tc.limit == 253 && len(errs) > 0 {
			t.Errorf("%s %q: %v", tc.name, tc.got, errs)
		}
		if errs := validation.IsValidLabelValue(tc.got); tc.limit == 63 && len(errs) > 0 {
			t.Errorf("%s %q: %v", tc.name, tc.got, errs)
		}
	}
	// Two long names that share a prefix must not collide.
	a, b := evalv1.LabelValue(long+"x"), evalv1.LabelValue(long+"y")
	if a == b {
		t.Errorf("label values collide: %q", a)
	}
	if got := evalv1.LabelValue("short"); got != "short" {
		t.Errorf("short name changed: %q", got)
	}
}

func TestObservePod(t *testing.T) {
	now := metav1.Now()
	ready := corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1",
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	for _, tc := range []struct {
		name       string
		pod        *corev1.Pod
		want       podHealth
		wantReason string
		wantMsg    string
	}{
		{"absent", nil, podAbsent, "", ""},
		{"pending", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}, podWaiting, "", ""},
		{"ready", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: ready}, podReady, "", ""},
		{"ready without IP", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: corev1.PodStatus{
			Phase: corev1.PodRunning, Conditions: ready.Conditions}}, podWaiting, "", ""},
		{"killed", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: corev1.PodStatus{
			Phase: corev1.PodFailed,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "runner", State: corev1.ContainerState{
				Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error"}}}},
		}}, podGone, evalv1.ReasonPodFailed, "pod p container runner exited with code 137 (Error)"},
		{"deleting", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", DeletionTimestamp: &now}, Status: ready},
			podGone, evalv1.ReasonPodLost, "pod p is being deleted"},
		{"image never pulled", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: corev1.PodStatus{
			Phase: corev1.PodPending,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "runner", State: corev1.ContainerState{
				Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull", Message: "image \"x:1\" is not present"}}}},
		}}, podGone, evalv1.ReasonPodFailed, `pod p cannot start: container runner ErrImageNeverPull (image "x:1" is not present)`},
		{"image pull back-off waits", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: corev1.PodStatus{
			Phase: corev1.PodPending,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "runner", State: corev1.ContainerState{
				Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}}},
		}}, podWaiting, "", ""},
		{"evicted", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: corev1.PodStatus{
			Phase: corev1.PodFailed, Reason: "Evicted"}}, podGone, evalv1.ReasonPodFailed, "pod p is Failed (Evicted)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, reason, msg := observePod(tc.pod)
			if h != tc.want || reason != tc.wantReason || msg != tc.wantMsg {
				t.Errorf("observePod = %v %q %q, want %v %q %q", h, reason, msg, tc.want, tc.wantReason, tc.wantMsg)
			}
		})
	}
}

// TestPodPhaseNamesTheWaitingReason: an attempt that ends PodsNotReady on a
// real node says why its pod never started.
func TestPodPhaseNamesTheWaitingReason(t *testing.T) {
	waiting := func(reason, msg string) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{
			{Name: "runner", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}}}}
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"no status", &corev1.Pod{}, "Pending"},
		{"running", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, "Running, not ready"},
		{"creating", waiting("ContainerCreating", ""), "Pending"},
		{"pull back-off", waiting("ImagePullBackOff", `Back-off pulling image "r/x:1"`),
			`Pending: container runner ImagePullBackOff (Back-off pulling image "r/x:1")`},
		{"no message", waiting("ErrImagePull", ""), "Pending: container runner ErrImagePull"},
		{"long message", waiting("ErrImagePull", strings.Repeat("x", 300)),
			"Pending: container runner ErrImagePull (" + strings.Repeat("x", 200) + "...)"},
	} {
		if got := podPhase(tc.pod); got != tc.want {
			t.Errorf("%s: podPhase = %q, want %q", tc.name, got, tc.want)
		}
	}
}
