package controllers

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"tolokaforge.io/operator/api/authn"
	"tolokaforge.io/operator/api/task"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// The objects of a Campaign's warm slots (docs/warm-slots.md): per slot a
// pod of two containers and its credential Secret, per Campaign one
// NetworkPolicy. All three are owned by the Campaign, made once, and never
// written again.
const (
	// ComponentSlot is the app.kubernetes.io/component of a slot pod. Slot
	// pods carry no role or trial label: no Trial's policy and not the
	// namespace's RunnersPolicy select them, only their Campaign's.
	ComponentSlot = "slot"
	// slotDBURL is where a slot's runner reaches its DB service: the pod's
	// loopback, which nothing outside the pod can reach.
	slotDBURL = "http://127.0.0.1:8000"
	// slotDBListen is the DB service's address in a slot pod.
	slotDBListen = "127.0.0.1:8000"
	// slotDBTmpVolume is the DB service's own /tmp: the runner's /tmp must
	// be empty after every trial (its baseline check), so nothing else
	// writes there.
	slotDBTmpVolume = "db-tmp"
)

// campaignRef names the Campaign a slotted Trial belongs to.
type campaignRef struct {
	Name string
	UID  types.UID
	// MaxParallel is its spec.maxParallel (0: unknown).
	MaxParallel int32
}

// SlotSecretName is a slot pod's credential Secret: created before the pod,
// which mounts it.
func SlotSecretName(pod string) string { return pod + "-auth" }

// SlotPolicyName is a Campaign's one slot NetworkPolicy.
func SlotPolicyName(campaign string) string {
	const suffix = "-slots"
	return shortName(campaign, 253-len(suffix)) + suffix
}

// slotTemplate is the slot pod a Trial's attempt needs, before it is named:
// what decides its class. Built from the Trial like its runner and DB
// service pods (image, Python, resources, placement), so a slot runs a
// Trial exactly as that Trial's own pods would.
func slotTemplate(cfg PodConfig, t *evalv1.Trial, desc *task.TaskDescription) *corev1.Pod {
	runner := runnerPod(cfg, attemptRef{Trial: t}, desc).Spec.Containers[0]
	// The slot's runner: no judge key file (the key of each trial comes in
	// RegisterTrial's metadata), its DB service on loopback, and --slot so
	// CleanupTrial checks the baseline.
	// No exec agent token file either: a terminal task's environment is per
	// attempt, and its token comes in RegisterTrial's metadata too.
	args := make([]string, 0, len(runner.Args)+2)
	for _, a := range runner.Args {
		if a == "--secrets-dir="+runnerSecretsDir || a == "--environment-token-file="+environmentTokenFile {
			continue
		}
		args = append(args, a)
	}
	runner.Args = append(args, "--db-service-url="+slotDBURL, "--slot")
	mounts := runner.VolumeMounts[:0:0]
	for _, m := range runner.VolumeMounts {
		if m.Name != judgeKeyVolume {
			mounts = append(mounts, m)
		}
	}
	runner.VolumeMounts = mounts

	db := baseContainer(cfg, evalv1.RoleDBService, t.Spec.DBService,
		[]string{"dbservice", "--listen=" + slotDBListen, "--auth-token-file=" + authTokenFile})
	// No port and no probe: it listens on loopback, where neither a kubelet
	// probe nor anyone else reaches it. The pod is Ready when the runner
	// serves; before an attempt registers, the driver asks the runner
	// whether it reaches its DB service (waitSlotDB).
	db.VolumeMounts = []corev1.VolumeMount{
		{Name: slotDBTmpVolume, MountPath: "/tmp"},
		{Name: authVolume, MountPath: authDir, ReadOnly: true},
	}

	auth := []corev1.KeyToPath{{Key: authn.SecretKey, Path: authn.SecretKey}}
	if cfg.RunnerMetrics.withToken() {
		auth = append(auth, metricsTokenItem)
	}
	pod := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		Spec: restrictedPodSpec(corev1.PodSpec{
			Containers: []corev1.Container{runner, db},
			Volumes: []corev1.Volume{
				{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(tmpSizeLimit.DeepCopy())}}},
				{Name: slotDBTmpVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(tmpSizeLimit.DeepCopy())}}},
				{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(workDirSizeLimit.DeepCopy())}}},
				{Name: authVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
					Items: auth,
					// Group-readable: the pod's fsGroup is the servers' group.
					DefaultMode: ptr.To[int32](0o440),
				}}},
			},
		}),
	}
	// One pod for both halves: the runner's placement, then the DB
	// service's selectors and tolerations added to it.
	placeAs(pod, t.Spec.Runner)
	for k, v := range t.Spec.DBService.NodeSelector {
		if pod.Spec.NodeSelector == nil {
			pod.Spec.NodeSelector = map[string]string{}
		}
		pod.Spec.NodeSelector[k] = v
	}
	for _, tol := range t.Spec.DBService.Tolerations {
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, *tol.DeepCopy())
	}
	return pod
}

// slotClassHash is the class of a slot template: a hash of its spec, so
// two Trials share slots exactly when their slot pods would be the same.
func slotClassHash(tmpl *corev1.Pod) string {
	b, err := json.Marshal(tmpl.Spec)
	if err != nil {
		// A PodSpec always marshals; should it not, no two Trials share.
		b = []byte(err.Error())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:10]
}

// slotLabels are a slot pod's: never written after create.
func slotLabels(campaign, class string) map[string]string {
	return map[string]string{
		evalv1.LabelName:      evalv1.AppName,
		evalv1.LabelManagedBy: evalv1.ManagedByValue,
		evalv1.LabelComponent: ComponentSlot,
		evalv1.LabelCampaign:  evalv1.LabelValue(campaign),
		evalv1.LabelSlotClass: class,
	}
}

func campaignOwner(c campaignRef) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         evalv1.GroupVersion.String(),
		Kind:               "Campaign",
		Name:               c.Name,
		UID:                c.UID,
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}
}

// slotPod names the template as one slot of campaign c.
func slotPod(tmpl *corev1.Pod, namespace, name, class string, c campaignRef) *corev1.Pod {
	pod := tmpl.DeepCopy()
	labels := slotLabels(c.Name, class)
	// Its own name, for the NetworkPolicy of an environment it is to reach
	// (SlotEnvironmentPolicy): the pod is never relabelled, so this is its
	// one unique label from the start.
	labels[evalv1.LabelSlot] = name
	pod.ObjectMeta = metav1.ObjectMeta{
		Name:            name,
		Namespace:       namespace,
		Labels:          labels,
		OwnerReferences: []metav1.OwnerReference{campaignOwner(c)},
	}
	for i := range pod.Spec.Volumes {
		if v := &pod.Spec.Volumes[i]; v.Name == authVolume {
			v.Secret.SecretName = SlotSecretName(name)
		}
	}
	return pod
}

// slotSecret is a slot's credential: a fresh token both containers mount
// and the manager presents. Immutable, so the token the pod read never
// changes under it; owned by the Campaign.
func slotSecret(namespace, pod, class, token string, c campaignRef) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            SlotSecretName(pod),
			Namespace:       namespace,
			Labels:          slotLabels(c.Name, class),
			OwnerReferences: []metav1.OwnerReference{campaignOwner(c)},
		},
		Type:      corev1.SecretTypeOpaque,
		Immutable: ptr.To(true),
		Data:      map[string][]byte{authn.SecretKey: []byte(token)},
	}
}

// SlotNetworkPolicy fences every slot pod of a Campaign: the manager may
// call the runner's port, the metrics scraper (when mgr.Scraper has a port)
// the runner's /metrics, and nothing else comes in (the DB service listens
// on loopback only); out, the slots reach cluster DNS, the judge gateway
// when the manager serves one and the OTLP collector when runners export
// spans, as RunnersPolicy lets per-trial runners,
// and the exec agents of its Campaign's environment pods, as a trial's
// NetworkPolicy lets its runner reach its own. Which slot may reach which
// environment is the environment's policy's to say (SlotEnvironmentPolicy:
// the one slot running its attempt); egress cannot name the attempt, since
// this policy is written once for every slot of the Campaign.
func SlotNetworkPolicy(namespace string, c campaignRef, mgr ManagerPeer) *networkingv1.NetworkPolicy {
	egress := append(RunnersPolicy(namespace, mgr).Spec.Egress, networkingv1.NetworkPolicyEgressRule{
		To: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
			evalv1.LabelManagedBy: evalv1.ManagedByValue,
			evalv1.LabelRole:      evalv1.RoleEnvironment,
			evalv1.LabelCampaign:  evalv1.LabelValue(c.Name),
		}}}},
		Ports: tcpPort(EnvironmentPort),
	})
	return &networkingv1.NetworkPolicy{
		TypeMeta: metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      SlotPolicyName(c.Name),
			Namespace: namespace,
			Labels: map[string]string{
				evalv1.LabelName:      evalv1.AppName,
				evalv1.LabelManagedBy: evalv1.ManagedByValue,
				evalv1.LabelCampaign:  evalv1.LabelValue(c.Name),
			},
			OwnerReferences: []metav1.OwnerReference{campaignOwner(c)},
		},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{
				evalv1.LabelManagedBy: evalv1.ManagedByValue,
				evalv1.LabelComponent: ComponentSlot,
				evalv1.LabelCampaign:  evalv1.LabelValue(c.Name),
			}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Ingress: append([]networkingv1.NetworkPolicyIngressRule{
				{From: []networkingv1.NetworkPolicyPeer{managerPeer(mgr)}, Ports: tcpPort(RunnerPort)},
			}, scraperIngress(mgr.Scraper)...),
			Egress: egress,
		},
	}
}

// slotClassOf is a Trial's slot class and template.
func slotClassOf(cfg PodConfig, t *evalv1.Trial, desc *task.TaskDescription, campaign string) (slotClass, *corev1.Pod) {
	tmpl := slotTemplate(cfg, t, desc)
	return slotClass{Namespace: t.Namespace, Campaign: campaign, Hash: slotClassHash(tmpl)}, tmpl
}

// slotWhy is the SlotReplaced event's sentence.
func slotWhy(slot string, attempt int32, trial, why string) string {
	return fmt.Sprintf("slot %s is replaced after attempt %d of trial %s: %s", slot, attempt, trial, why)
}
