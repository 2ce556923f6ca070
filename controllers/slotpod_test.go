package controllers

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"tolokaforge.io/operator/api/authn"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

var testCampaign = campaignRef{Name: "c", UID: "cuid", MaxParallel: 2}

// slotTrial is a Campaign's Trial on slots, judged through the gateway.
func slotTrial() *evalv1.Trial {
	tr := testTrial()
	tr.Spec.Slots = &evalv1.SlotPolicy{Mode: evalv1.SlotsEnabled}
	tr.Spec.Judge = &evalv1.ModelSpec{Provider: evalv1.ProviderOpenAI, Model: "judge"}
	return tr
}

func testSlotPod(t *testing.T) *corev1.Pod {
	t.Helper()
	cfg := PodConfig{Image: "registry/tolokaforge:v1", GatewayURL: "http://gw:8090/v1"}
	class, tmpl := slotClassOf(cfg, slotTrial(), nil, "c")
	return slotPod(tmpl, "ns", "c-slot-abc", class.Hash, testCampaign)
}

// Both containers pass Pod Security "restricted" as today's pods do, and
// write only to emptyDirs.
func TestSlotPodIsRestricted(t *testing.T) {
	pod := testSlotPod(t)
	if n := len(pod.Spec.Containers); n != 2 || pod.Spec.Containers[0].Name != evalv1.RoleRunner || pod.Spec.Containers[1].Name != evalv1.RoleDBService {
		t.Fatalf("containers = %d (%v)", n, pod.Spec.Containers)
	}
	ps := pod.Spec.SecurityContext
	if ps == nil || !*ps.RunAsNonRoot || *ps.RunAsUser != nonRootUID || ps.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context %+v", ps)
	}
	if *pod.Spec.AutomountServiceAccountToken || pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("service account token %v restart %s", *pod.Spec.AutomountServiceAccountToken, pod.Spec.RestartPolicy)
	}
	emptyDirs := map[string]bool{}
	for _, v := range pod.Spec.Volumes {
		if v.EmptyDir != nil {
			emptyDirs[v.Name] = true
		}
	}
	for _, c := range pod.Spec.Containers {
		sc := c.SecurityContext
		if sc == nil || *sc.AllowPrivilegeEscalation || !*sc.ReadOnlyRootFilesystem || !*sc.RunAsNonRoot ||
			!slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 {
			t.Errorf("container %s security context %+v", c.Name, sc)
		}
		for _, m := range c.VolumeMounts {
			if !m.ReadOnly && !emptyDirs[m.Name] {
				t.Errorf("container %s writes to %s, not an emptyDir", c.Name, m.Name)
			}
		}
	}
	// The runner's /tmp is its alone: its baseline check wants it empty.
	runnerTmp, dbTmp := "", ""
	for _, m := range pod.Spec.Containers[0].VolumeMounts {
		if m.MountPath == "/tmp" {
			runnerTmp = m.Name
		}
	}
	for _, m := range pod.Spec.Containers[1].VolumeMounts {
		if m.MountPath == "/tmp" {
			dbTmp = m.Name
		}
	}
	if runnerTmp == "" || dbTmp == "" || runnerTmp == dbTmp {
		t.Errorf("/tmp volumes: runner %q, DB service %q", runnerTmp, dbTmp)
	}
}

// The runner is a slot's (--slot), reaches its DB service on loopback, and
// mounts no judge key: each trial's comes in RegisterTrial's metadata.
func TestSlotPodArgs(t *testing.T) {
	pod := testSlotPod(t)
	runner, db := pod.Spec.Containers[0], pod.Spec.Containers[1]
	for _, want := range []string{"runner", "--listen=$(POD_IP):50051", "--auth-token-file=" + authTokenFile,
		"--db-service-url=http://127.0.0.1:8000", "--slot"} {
		if !slices.Contains(runner.Args, want) {
			t.Errorf("runner args %v lack %s", runner.Args, want)
		}
	}
	for _, a := range runner.Args {
		if strings.HasPrefix(a, "--secrets-dir") {
			t.Errorf("slot runner has %s", a)
		}
	}
	if runner.ReadinessProbe == nil || runner.ReadinessProbe.GRPC == nil {
		t.Errorf("runner probe %+v", runner.ReadinessProbe)
	}
	if want := []string{"dbservice", "--listen=127.0.0.1:8000", "--auth-token-file=" + authTokenFile}; !slices.Equal(db.Args, want) {
		t.Errorf("dbservice args %v, want %v", db.Args, want)
	}
	if len(db.Ports) != 0 || db.ReadinessProbe != nil {
		t.Errorf("the loopback DB service has ports %v probe %+v", db.Ports, db.ReadinessProbe)
	}
}

// The slot's own Secret is the one Secret in the pod, mounted in both; the
// Trial's gateway Secret is not.
func TestSlotPodMountsOnlyItsSecret(t *testing.T) {
	pod := testSlotPod(t)
	var secrets []string
	for _, v := range pod.Spec.Volumes {
		if v.Secret != nil {
			secrets = append(secrets, v.Secret.SecretName)
			if len(v.Secret.Items) != 1 || v.Secret.Items[0].Key != authn.SecretKey {
				t.Errorf("secret volume items %+v", v.Secret.Items)
			}
		}
		if v.Projected != nil || v.CSI != nil {
			t.Errorf("volume %s", v.Name)
		}
	}
	if !slices.Equal(secrets, []string{"c-slot-abc-auth"}) {
		t.Fatalf("secrets = %v", secrets)
	}
	for _, c := range pod.Spec.Containers {
		if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == authVolume && m.ReadOnly }) {
			t.Errorf("container %s does not mount the slot's token", c.Name)
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				t.Errorf("container %s reads Secret %s into its environment", c.Name, e.ValueFrom.SecretKeyRef.Name)
			}
		}
	}
}

// Owned by the Campaign; labelled as a slot of its class, never as a
// Trial's pod (no Trial policy or RunnersPolicy selects it).
func TestSlotObjectsBelongToTheCampaign(t *testing.T) {
	pod := testSlotPod(t)
	sec := slotSecret("ns", pod.Name, pod.Labels[evalv1.LabelSlotClass], "tok", testCampaign)
	np := SlotNetworkPolicy("ns", testCampaign, DefaultManagerPeer("sys"))
	for _, o := range []metav1.Object{pod, sec, np} {
		ref := metav1.GetControllerOf(o)
		if ref == nil || ref.Kind != "Campaign" || ref.UID != "cuid" || ref.Name != "c" {
			t.Errorf("%s owner %+v", o.GetName(), ref)
		}
	}
	if pod.Labels[evalv1.LabelSlotClass] == "" || pod.Labels[evalv1.LabelCampaign] != "c" || pod.Labels[evalv1.LabelComponent] != ComponentSlot ||
		pod.Labels[evalv1.LabelSlot] != "c-slot-abc" {
		t.Errorf("labels %v", pod.Labels)
	}
	for _, k := range []string{evalv1.LabelRole, evalv1.LabelTrial, evalv1.LabelAttempt} {
		if _, ok := pod.Labels[k]; ok {
			t.Errorf("slot pod has label %s", k)
		}
	}
	if sec.Name != SlotSecretName(pod.Name) || !*sec.Immutable || string(sec.Data[authn.SecretKey]) != "tok" || len(sec.Data) != 1 {
		t.Errorf("secret %s immutable %v data keys %d", sec.Name, *sec.Immutable, len(sec.Data))
	}
}

// The Campaign's policy selects its slot pods and nothing else: not a
// Trial's own pods, not another Campaign's slots. In: the manager, on the
// runner's port only. Out: what RunnersPolicy lets every runner reach, and
// the exec agents of its own Campaign's environment pods on their port.
func TestSlotNetworkPolicy(t *testing.T) {
	mgr := DefaultManagerPeer("sys")
	mgr.GatewayPort = 8090
	np := SlotNetworkPolicy("ns", testCampaign, mgr)
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil {
		t.Fatal(err)
	}
	other := campaignRef{Name: "other", UID: "ouid"}
	tr := testTrial()
	for _, tc := range []struct {
		what string
		lbls map[string]string
		want bool
	}{
		{"its slot", testSlotPod(t).Labels, true},
		{"another campaign's slot", slotLabels(other.Name, "x"), false},
		{"a trial's runner", podLabels(tr.Name, 1, evalv1.RoleRunner), false},
		{"a trial's DB service", podLabels(tr.Name, 1, evalv1.RoleDBService), false},
	} {
		if got := sel.Matches(labels.Set(tc.lbls)); got != tc.want {
			t.Errorf("selects %s: %t, want %t", tc.what, got, tc.want)
		}
	}
	if len(np.Spec.Ingress) != 1 || len(np.Spec.Ingress[0].Ports) != 1 || np.Spec.Ingress[0].Ports[0].Port.IntVal != RunnerPort ||
		!equality.Semantic.DeepEqual(np.Spec.Ingress[0].From, []networkingv1.NetworkPolicyPeer{managerPeer(mgr)}) {
		t.Errorf("ingress %+v", np.Spec.Ingress)
	}
	runners := RunnersPolicy("ns", mgr).Spec.Egress
	if len(np.Spec.Egress) != len(runners)+1 || !equality.Semantic.DeepEqual(np.Spec.Egress[:len(runners)], runners) || len(np.Spec.PolicyTypes) != 2 {
		t.Fatalf("egress %+v types %v", np.Spec.Egress, np.Spec.PolicyTypes)
	}
	env := np.Spec.Egress[len(runners)]
	if len(env.To) != 1 || env.To[0].NamespaceSelector != nil || len(env.Ports) != 1 || env.Ports[0].Port.IntVal != EnvironmentPort {
		t.Fatalf("environment egress %+v", env)
	}
	to, err := metav1.LabelSelectorAsSelector(env.To[0].PodSelector)
	if err != nil {
		t.Fatal(err)
	}
	desc := terminalTask("img")
	ownEnv := onSlotEnvironment(environmentPod(PodConfig{}, attemptRef{tr, 1}, desc.Environment), "c")
	for _, tc := range []struct {
		what string
		lbls map[string]string
		want bool
	}{
		{"its campaign's environment on a slot", ownEnv.Labels, true},
		{"another campaign's environment", onSlotEnvironment(environmentPod(PodConfig{}, attemptRef{tr, 1}, desc.Environment), other.Name).Labels, false},
		{"an environment with pods of its own", environmentPod(PodConfig{}, attemptRef{tr, 1}, desc.Environment).Labels, false},
		{"a trial's runner", podLabels(tr.Name, 1, evalv1.RoleRunner), false},
		{"its own slot", testSlotPod(t).Labels, false},
	} {
		if got := to.Matches(labels.Set(tc.lbls)); got != tc.want {
			t.Errorf("lets out to %s: %t, want %t", tc.what, got, tc.want)
		}
	}
}

// Trials share a class exactly when their slot pods would be alike.
func TestSlotClass(t *testing.T) {
	cfg := PodConfig{Image: "img"}
	base, _ := slotClassOf(cfg, slotTrial(), nil, "c")
	same := slotTrial()
	same.Name, same.UID, same.Spec.TrialIndex = "t2", "uid-2", 3
	if got, _ := slotClassOf(cfg, same, nil, "c"); got != base {
		t.Errorf("another Trial of the same shape: %v != %v", got, base)
	}
	image := slotTrial()
	image.Spec.Runner.Image = "other"
	res := slotTrial()
	res.Spec.DBService.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("3Gi")}}
	place := slotTrial()
	place.Spec.Runner.NodeSelector = map[string]string{"pool": "eval"}
	for name, tr := range map[string]*evalv1.Trial{"runner image": image, "DB resources": res, "placement": place} {
		if got, _ := slotClassOf(cfg, tr, nil, "c"); got.Hash == base.Hash {
			t.Errorf("%s does not change the class", name)
		}
	}
	if got, _ := slotClassOf(cfg, slotTrial(), nil, "d"); got == base {
		t.Error("two Campaigns share a class")
	}
}
