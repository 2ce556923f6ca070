package controllers

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"tolokaforge.io/operator/api/task"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// A terminal task (task.Environment) runs in its own image: per attempt, a
// third pod beside the runner and the DB service. It is a pod of its own,
// never a container of the runner's pod, so the agent's shell shares no
// network namespace (and no localhost) with the runner's gRPC port or the
// DB service. Its entrypoint is our exec agent (cmd/tolokaforge-execagent),
// copied from the manager's image by an init container into an emptyDir,
// PID 1 and subreaper of the task's container, serving the runner alone
// (its own NetworkPolicy) with a token of its own: the runner's token never
// enters the task's container, where the agent is root.
const (
	// EnvironmentPort is the exec agent's gRPC port.
	EnvironmentPort = 7070
	// execAgentDir is where the exec agent lands in the task's container
	// (an emptyDir: the image's own filesystem is not touched).
	execAgentDir    = "/.tolokaforge"
	execAgentBinary = execAgentDir + "/execagent"
	// execAgentInImage is the exec agent in the manager's image.
	execAgentInImage = "/tolokaforge-execagent"
	execAgentVolume  = "execagent"
	// execAgentTokenEnv is the variable the exec agent reads its token
	// from (and unsets before it starts anything: it is non-dumpable, so
	// root in the container cannot read its environment back).
	execAgentTokenEnv = "TOLOKAFORGE_EXECAGENT_TOKEN"
	// EnvironmentTokenKey is the exec agent's token in the attempt's
	// credential Secret; the runner mounts it as a file of this name.
	EnvironmentTokenKey = "environment-token"
	// environmentTokenFile is where the runner reads it.
	environmentTokenFile = authDir + "/" + EnvironmentTokenKey
)

// hasEnvironment says the resolved task runs in its own container.
func hasEnvironment(desc *task.TaskDescription) bool {
	return desc != nil && desc.Environment != nil
}

// attemptRoles are the pods an attempt of the task needs.
func attemptRoles(desc *task.TaskDescription) []string {
	if hasEnvironment(desc) {
		return []string{evalv1.RoleDBService, evalv1.RoleRunner, evalv1.RoleEnvironment}
	}
	return []string{evalv1.RoleDBService, evalv1.RoleRunner}
}

// environmentReadyTimeout is how long the environment pod may take to be
// Ready (an image pull included): the task's build_timeout_s, at least the
// Trial's podsReady timeout.
func environmentReadyTimeout(t *evalv1.Trial, desc *task.TaskDescription) time.Duration {
	limit := podsReadyTimeout(t)
	if hasEnvironment(desc) {
		if b := time.Duration(desc.Environment.BuildTimeoutS * float64(time.Second)); b > limit {
			limit = b
		}
	}
	return limit
}

// environmentPod is the attempt's task container. It runs the task's image
// as the image's user (task images run as root: the namespace needs Pod
// Security "baseline"; the runner and the DB service stay "restricted"),
// with the task's resources as requests and limits, no service account
// token, no service links, and the exec agent as its command.
func environmentPod(cfg PodConfig, a attemptRef, env *task.Environment) *corev1.Pod {
	t := a.Trial
	pull := cfg.PullPolicy
	if pull == "" {
		pull = corev1.PullIfNotPresent
	}
	res := environmentResources(env)
	install := corev1.Container{
		Name:            "install-execagent",
		Image:           cfg.Image,
		ImagePullPolicy: pull,
		Command:         []string{execAgentInImage, "--install", execAgentBinary},
		SecurityContext: restrictedContainer(),
		VolumeMounts:    []corev1.VolumeMount{{Name: execAgentVolume, MountPath: execAgentDir}},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
		},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
	main := corev1.Container{
		Name:            evalv1.RoleEnvironment,
		Image:           env.Image,
		ImagePullPolicy: pull,
		Command:         []string{execAgentBinary, fmt.Sprintf("--listen=$(%s):%d", podIPEnv, EnvironmentPort)},
		WorkingDir:      env.Workdir,
		Env: []corev1.EnvVar{
			{Name: podIPEnv, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}}},
			{Name: execAgentTokenEnv, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: AuthSecretName(t, a.Number)}, Key: EnvironmentTokenKey,
			}}},
		},
		Ports:     []corev1.ContainerPort{{Name: "execagent", ContainerPort: EnvironmentPort, Protocol: corev1.ProtocolTCP}},
		Resources: res,
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(EnvironmentPort)}},
			PeriodSeconds:    1,
			TimeoutSeconds:   2,
			FailureThreshold: 3,
		},
		// Pod Security "baseline": the image's user (root, as task images
		// are written), the runtime's default capabilities and seccomp
		// profile, no privilege, no host namespaces.
		SecurityContext: &corev1.SecurityContext{
			Privileged:     ptr.To(false),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		VolumeMounts:             []corev1.VolumeMount{{Name: execAgentVolume, MountPath: execAgentDir, ReadOnly: true}},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
	for _, k := range slices.Sorted(maps.Keys(env.Env)) {
		main.Env = append(main.Env, corev1.EnvVar{Name: k, Value: env.Env[k]})
	}
	pod := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            PodName(t.Name, a.Number, evalv1.RoleEnvironment),
			Namespace:       t.Namespace,
			Labels:          podLabels(t.Name, a.Number, evalv1.RoleEnvironment),
			OwnerReferences: []metav1.OwnerReference{ownerRef(t)},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](5),
			// The exec agent writes itself as the init container's user:
			// the emptyDir's group lets it, and root reads it anyway.
			SecurityContext: &corev1.PodSecurityContext{
				FSGroup:        ptr.To[int64](nonRootUID),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			InitContainers: []corev1.Container{install},
			Containers:     []corev1.Container{main},
			Volumes: []corev1.Volume{{Name: execAgentVolume, VolumeSource: corev1.VolumeSource{
				EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("64Mi"))},
			}}},
		},
	}
	// Placed with the runner: the Trial names no overrides of its own for
	// the environment.
	placeAs(pod, t.Spec.Runner)
	return pod
}

// environmentResources are the task's cpus, memory_mb and storage_mb, as
// requests equal to limits (what Harbor gives the task's container).
func environmentResources(env *task.Environment) corev1.ResourceRequirements {
	return EnvironmentResources(env)
}

// EnvironmentResources are the environment pod's requests and limits: what
// a queue reserves for it beside AttemptResources. Unset sizes are Harbor's
// defaults (a description read without task.DecodeTaskDescription).
func EnvironmentResources(env *task.Environment) corev1.ResourceRequirements {
	cpus, mem, disk := env.CPUs, env.MemoryMB, env.StorageMB
	if cpus == 0 {
		cpus = task.DefaultEnvCPUs
	}
	if mem == 0 {
		mem = task.DefaultEnvMemoryMB
	}
	if disk == 0 {
		disk = task.DefaultEnvStorageMB
	}
	l := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewMilliQuantity(int64(cpus*1000), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(mem<<20, resource.BinarySI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(disk<<20, resource.BinarySI),
	}
	return corev1.ResourceRequirements{Requests: l, Limits: l.DeepCopy()}
}

// restrictedContainer is a security context that passes Pod Security
// "restricted".
func restrictedContainer() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		RunAsNonRoot:             ptr.To(true),
		RunAsUser:                ptr.To[int64](nonRootUID),
		RunAsGroup:               ptr.To[int64](nonRootUID),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// EnvironmentPolicyName is the name of a terminal trial's environment
// policy.
func EnvironmentPolicyName(trial string) string {
	const suffix = "-environment"
	return shortName(trial, 253-len(suffix)) + suffix
}

// EnvironmentPolicy fences a terminal trial's environment pod: ingress from
// its own trial's runner on the exec agent's port only; egress nowhere,
// unless the task allows the internet (then anywhere: the task asked for
// it, and DNS comes with it). The trial's own NetworkPolicy does not select
// this pod (policies are a union: its rules would widen this one).
func EnvironmentPolicy(t *evalv1.Trial, env *task.Environment) *networkingv1.NetworkPolicy {
	trial := evalv1.LabelValue(t.Name)
	var egress []networkingv1.NetworkPolicyEgressRule
	if env.AllowInternet {
		egress = []networkingv1.NetworkPolicyEgressRule{{}}
	}
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: policyMeta(t, EnvironmentPolicyName(t.Name)),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{
				evalv1.LabelManagedBy: evalv1.ManagedByValue,
				evalv1.LabelTrial:     trial,
				evalv1.LabelRole:      evalv1.RoleEnvironment,
			}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{
				{From: trialPod(trial, evalv1.RoleRunner), Ports: tcpPort(EnvironmentPort)},
			},
			Egress: egress,
		},
	}
}

// SlotEnvironmentPolicyName is the name of the environment policy of one
// attempt on a slot.
func SlotEnvironmentPolicyName(trial string, attempt int32) string {
	suffix := fmt.Sprintf("-a%d-environment", attempt)
	return shortName(trial, 253-len(suffix)) + suffix
}

// SlotEnvironmentPolicy fences the environment pod of attempt n of a
// terminal trial that runs on a slot: ingress from that slot pod alone (its
// LabelSlot, set when it was made) on the exec agent's port; egress as
// EnvironmentPolicy. Per attempt, as the environment pod is: the next
// attempt may run on another slot, and a slot that served this attempt
// serves other Trials next, whose runner must not reach this environment
// should it outlive the attempt (a Trial that keeps its pods).
func SlotEnvironmentPolicy(t *evalv1.Trial, n int32, slot string, env *task.Environment) *networkingv1.NetworkPolicy {
	np := EnvironmentPolicy(t, env)
	np.Name = SlotEnvironmentPolicyName(t.Name, n)
	np.Labels[evalv1.LabelAttempt] = strconv.Itoa(int(n))
	np.Spec.PodSelector.MatchLabels[evalv1.LabelAttempt] = strconv.Itoa(int(n))
	np.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{
		From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
			evalv1.LabelManagedBy: evalv1.ManagedByValue,
			evalv1.LabelComponent: ComponentSlot,
			evalv1.LabelSlot:      slot,
		}}}},
		Ports: tcpPort(EnvironmentPort),
	}}
	return np
}

// onSlotEnvironment is environmentPod for an attempt on a slot of campaign:
// labelled with it, so the Campaign's slot policy lets its slots out to the
// pod (SlotNetworkPolicy).
func onSlotEnvironment(pod *corev1.Pod, campaign string) *corev1.Pod {
	pod.Labels[evalv1.LabelCampaign] = evalv1.LabelValue(campaign)
	return pod
}

// attemptDesc is the task the active attempt runs: the one it started with
// when this process drives it, else the one just resolved.
func (w *world) attemptDesc() *task.TaskDescription {
	if w.AttemptTask != nil {
		return w.AttemptTask.Desc
	}
	if w.Task != nil {
		return w.Task.Desc
	}
	return nil
}

// environment is the attempt's task environment, nil for other tasks.
func (w *world) environment() *task.Environment {
	if d := w.attemptDesc(); d != nil {
		return d.Environment
	}
	return nil
}

// imagePullFailures are the waiting reasons of a container whose image
// the node cannot get.
var imagePullFailures = map[string]bool{"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true, "ErrImageNeverPull": true}

// imagePullFailure is the environment pod's pull failure ("ErrImagePull:
// ..."), empty when its image is not failing to pull.
func imagePullFailure(p *corev1.Pod) string {
	if p == nil {
		return ""
	}
	for _, cs := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil && imagePullFailures[w.Reason] {
			return fmt.Sprintf("container %s: %s: %s", cs.Name, w.Reason, w.Message)
		}
	}
	return ""
}

func podIsReady(p *corev1.Pod) bool {
	h, _, _ := observePod(p)
	return h == podReady
}

// environmentImageErr refuses a terminal task that has no image yet: it
// ships a Dockerfile `pack build` has not built. The manager never builds.
func environmentImageErr(desc *task.TaskDescription) error {
	if !hasEnvironment(desc) || desc.Environment.Image != "" {
		return nil
	}
	return fmt.Errorf("task %s runs in its own container and its environment has no image: build it with `tolokaforge pack build` (it builds %s, pushes it to your registry and pins the digest in the Task); the manager never builds images",
		desc.TaskID, desc.Environment.Build.Dockerfile)
}
