package controllers

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"tolokaforge.io/operator/api/authn"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/api/telemetry"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/gateway"
)

// Ports and paths the pods serve on; probes and the network policy use them.
const (
	RunnerPort    = 50051
	DBServicePort = 8000
	// runnerWorkDir is the runner's --work-dir, an emptyDir because the root
	// filesystem is read-only.
	runnerWorkDir = "/var/lib/tolokaforge"
	// runnerSecretsDir is the runner's --secrets-dir: the Trial's gateway
	// token Secret is mounted there read-only (never a provider key). A file,
	// never an environment variable: env leaks into child processes (MCP
	// servers, the test_execution verifier), crash dumps and `kubectl describe`.
	runnerSecretsDir = "/var/run/tolokaforge/secrets"
	// judgeKeyFile is the gateway token's file name in RunnerSecretsDir; the
	// TrialSpec's judge.api_key_env names it (the runner reads api_key_env as
	// a file name in its secrets directory) and the judge sends it to the
	// gateway as its bearer key. No provider key ever enters a pod.
	judgeKeyFile = "judge-api-key"
	// judgeKeyVolume is the runner pod's volume of the gateway token Secret.
	judgeKeyVolume = "judge-key"
	// authDir is where both pods mount the attempt's credential Secret
	// read-only; AuthTokenFile is the token's file, named by
	// --auth-token-file. A file, like the judge key, never an env var.
	authDir       = "/var/run/tolokaforge/auth"
	authTokenFile = authDir + "/" + authn.SecretKey
	// authVolume is both pods' volume of the credential Secret.
	authVolume = "auth-token"
	// MetricsTokenKey is the scraper's token in a runner's credential
	// Secret (RunnerMetrics.Token), runnerMetricsTokenFile its file: beside
	// the runner's own token, out of every tool's reach like it (the
	// runner's confinement lets no tool read authDir).
	MetricsTokenKey        = "metrics-token"
	runnerMetricsTokenFile = authDir + "/" + MetricsTokenKey
	// RunnerMetricsPortName names the runner container's /metrics port,
	// which a PodMonitor selects.
	RunnerMetricsPortName = "metrics"
	// podIPEnv is the downward-API variable the listen flags expand.
	podIPEnv = "POD_IP"
	// nonRootUID is the distroless "nonroot" user.
	nonRootUID = 65532
)

// PodConfig is the manager's part of every attempt's pods.
type PodConfig struct {
	// Image is the manager's own image (--image); a trial may override it
	// per role.
	Image string
	// PythonImage runs the runner pods of tasks whose tools or checks need
	// Python (--runner-python-image); empty: such a Trial ends Invalid.
	PythonImage string
	// Python is the runner's --python in PythonImage (default
	// DefaultPython).
	Python string
	// Entrypoint is the container's command[0], the tolokaforge binary in
	// the image. Default "tolokaforge".
	Entrypoint string
	// PullPolicy defaults to IfNotPresent.
	PullPolicy corev1.PullPolicy
	// GatewayURL is the manager's LLM gateway as runner pods reach it, e.g.
	// http://tolokaforge-gateway.tolokaforge-system.svc:8090/v1. Empty: no
	// gateway, and a judge model gets no credential.
	GatewayURL string
	// RunnerMetrics has every runner the manager makes serve /metrics.
	RunnerMetrics RunnerMetrics
	// RunnerOTLPEndpoint is the OTLP/gRPC endpoint every runner the manager
	// makes exports its spans to (its OTEL_EXPORTER_OTLP_ENDPOINT, e.g.
	// http://collector.observability.svc:4317); empty: runners trace
	// nothing. ManagerPeer.Collector lets them reach it.
	RunnerOTLPEndpoint string
}

// RunnerMetrics is how the runners the manager makes (an attempt's, a warm
// slot's) serve their Prometheus series.
type RunnerMetrics struct {
	// Port is where each runner serves /metrics on its pod IP; 0: not
	// served.
	Port int32
	// Token is the scraper's bearer token (a Prometheus PodMonitor's): the
	// manager copies it into every runner's credential Secret, and /metrics
	// accepts it besides the runner's own token, which no scraper can know
	// (one per pod). RunnerService never accepts it. Empty: a scrape needs
	// the runner's own token. Never logged.
	Token string
}

// String keeps the token out of any print of a PodConfig.
func (m RunnerMetrics) String() string {
	tok := ""
	if m.Token != "" {
		tok = "(set)"
	}
	return fmt.Sprintf("{Port:%d Token:%s}", m.Port, tok)
}

// GoString is String, for %#v.
func (m RunnerMetrics) GoString() string { return m.String() }

// withToken reports whether runners get the scraper's token file.
func (m RunnerMetrics) withToken() bool { return m.Port > 0 && m.Token != "" }

// addMetricsToken puts the scraper's token into a runner's credential
// Secret, when runners serve metrics with it.
func addMetricsToken(s *corev1.Secret, m RunnerMetrics) {
	if m.withToken() {
		s.Data[MetricsTokenKey] = []byte(m.Token)
	}
}

// metricsTokenItem is the credential volume's item of the scraper's token.
var metricsTokenItem = corev1.KeyToPath{Key: MetricsTokenKey, Path: MetricsTokenKey}

func (c PodConfig) entrypoint() string {
	if c.Entrypoint == "" {
		return "tolokaforge"
	}
	return c.Entrypoint
}

// attemptRef names one attempt of one trial.
type attemptRef struct {
	Trial  *evalv1.Trial
	Number int32
}

// shortName keeps generated names within limit while staying unique: a name
// that is too long keeps a prefix and gains a hash of the whole.
func shortName(base string, limit int) string {
	if len(base) <= limit {
		return base
	}
	sum := sha256.Sum256([]byte(base))
	h := hex.EncodeToString(sum[:])[:10]
	return base[:limit-11] + "-" + h
}

// PodName is the deterministic name of an attempt's pod, so a create retried
// after a lost response finds its own pod instead of making a second one.
func PodName(trial string, attempt int32, role string) string {
	suffix := fmt.Sprintf("-a%d-%s", attempt, role)
	return shortName(trial, 253-len(suffix)) + suffix
}

// podLabels are the labels of an attempt's pod; the simulator, the network
// policy and the pod deletion all select on them.
func podLabels(trial string, attempt int32, role string) map[string]string {
	return map[string]string{
		evalv1.LabelName:      evalv1.AppName,
		evalv1.LabelManagedBy: evalv1.ManagedByValue,
		evalv1.LabelComponent: role,
		evalv1.LabelInstance:  evalv1.LabelValue(trial),
		evalv1.LabelTrial:     evalv1.LabelValue(trial),
		evalv1.LabelAttempt:   strconv.Itoa(int(attempt)),
		evalv1.LabelRole:      role,
	}
}

func ownerRef(t *evalv1.Trial) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         evalv1.GroupVersion.String(),
		Kind:               "Trial",
		Name:               t.Name,
		UID:                t.UID,
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}
}

// runnerPod is the attempt's runner: `tolokaforge runner` listening on the
// pod IP, probed over gRPC health.
//
// It gets no --db-service-url: both pods are created at once, so the DB
// service's IP is not known yet, and the TrialSpec's env_endpoints names it
// per trial anyway (the flag is only the runner's fallback). Creating the
// pods in parallel halves the time an attempt waits for readiness.
//
// Its image is the Go-only one unless the task needs Python (runnerImage);
// the plan refused a Trial whose image cannot be chosen before any pod, so
// an error here means the task changed under a running attempt and the
// pod falls back to the Go-only image, where RegisterTrial names the tool
// it cannot run.
func runnerPod(cfg PodConfig, a attemptRef, desc *task.TaskDescription) *corev1.Pod {
	t := a.Trial
	args := []string{
		"runner",
		fmt.Sprintf("--listen=$(%s):%d", podIPEnv, RunnerPort),
		"--work-dir=" + runnerWorkDir,
		"--auth-token-file=" + authTokenFile,
	}
	image, python, err := runnerImage(cfg, t, desc)
	if python != "" {
		args = append(args, "--python="+python)
	}
	o := t.Spec.Runner
	if err == nil {
		o.Image = image
	}
	c := baseContainer(cfg, evalv1.RoleRunner, o, args)
	c.Ports = []corev1.ContainerPort{{Name: "grpc", ContainerPort: RunnerPort, Protocol: corev1.ProtocolTCP}}
	if m := cfg.RunnerMetrics; m.Port > 0 {
		c.Args = append(c.Args, fmt.Sprintf("--metrics-bind-address=$(%s):%d", podIPEnv, m.Port))
		if m.withToken() {
			c.Args = append(c.Args, "--metrics-token-file="+runnerMetricsTokenFile)
		}
		c.Ports = append(c.Ports, corev1.ContainerPort{Name: RunnerMetricsPortName, ContainerPort: m.Port, Protocol: corev1.ProtocolTCP})
	}
	if cfg.RunnerOTLPEndpoint != "" {
		// The one OTEL_* variable the runner binary keeps through its
		// environment scrub (runner/proc); the runner names its own service.
		c.Env = append(c.Env, corev1.EnvVar{Name: telemetry.EnvEndpoint, Value: cfg.RunnerOTLPEndpoint})
	}
	c.ReadinessProbe = &corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: RunnerPort}},
		PeriodSeconds:    2,
		TimeoutSeconds:   2,
		FailureThreshold: 3,
	}
	gw := usesGateway(t, cfg.GatewayURL)
	if gw {
		c.Args = append(c.Args, "--secrets-dir="+runnerSecretsDir)
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: judgeKeyVolume, MountPath: runnerSecretsDir, ReadOnly: true})
	}
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "work", MountPath: runnerWorkDir})
	if hasEnvironment(desc) {
		c.Args = append(c.Args, "--environment-token-file="+environmentTokenFile)
	}
	pod := basePod(a, evalv1.RoleRunner, t.Spec.Runner, c)
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if v.Name != authVolume {
			continue
		}
		// The runner reads the exec agent's token and the scraper's too
		// (the DB service does not: its pod mounts the runner's token
		// alone).
		if hasEnvironment(desc) {
			v.Secret.Items = append(v.Secret.Items, corev1.KeyToPath{Key: EnvironmentTokenKey, Path: EnvironmentTokenKey})
		}
		if cfg.RunnerMetrics.withToken() {
			v.Secret.Items = append(v.Secret.Items, metricsTokenItem)
		}
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{
		Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(workDirSizeLimit.DeepCopy())}},
	})
	if gw {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{
			Name: judgeKeyVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
				SecretName: gateway.SecretName(t.Name),
				Items:      []corev1.KeyToPath{{Key: gateway.TokenKey, Path: judgeKeyFile}},
				// Group-readable: the pod's fsGroup is the runner's group.
				DefaultMode: ptr.To[int32](0o440),
			}},
		})
	}
	return pod
}

// gatewaySecret is the Trial's gateway token Secret, owned by the Trial.
func gatewaySecret(t *evalv1.Trial, token string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      gateway.SecretName(t.Name),
			Namespace: t.Namespace,
			Labels: map[string]string{
				evalv1.LabelName: evalv1.AppName, evalv1.LabelManagedBy: evalv1.ManagedByValue,
				evalv1.LabelTrial: evalv1.LabelValue(t.Name),
			},
			OwnerReferences: []metav1.OwnerReference{ownerRef(t)},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{gateway.TokenKey: []byte(token)},
	}
}

// dbServicePod is the attempt's DB service, probed over HTTP /health.
func dbServicePod(cfg PodConfig, a attemptRef) *corev1.Pod {
	t := a.Trial
	args := []string{"dbservice", fmt.Sprintf("--listen=$(%s):%d", podIPEnv, DBServicePort), "--auth-token-file=" + authTokenFile}
	c := baseContainer(cfg, evalv1.RoleDBService, t.Spec.DBService, args)
	c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: DBServicePort, Protocol: corev1.ProtocolTCP}}
	c.ReadinessProbe = &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: "/health", Port: intstr.FromInt32(DBServicePort), Scheme: corev1.URISchemeHTTP,
		}},
		PeriodSeconds:    2,
		TimeoutSeconds:   2,
		FailureThreshold: 3,
	}
	return basePod(a, evalv1.RoleDBService, t.Spec.DBService, c)
}

// baseContainer is what both roles share: the image, the downward-API pod IP
// and a container security context that passes Pod Security "restricted".
func baseContainer(cfg PodConfig, role string, o evalv1.PodOverrides, args []string) corev1.Container {
	image := cfg.Image
	if o.Image != "" {
		image = o.Image
	}
	pull := cfg.PullPolicy
	if pull == "" {
		pull = corev1.PullIfNotPresent
	}
	c := corev1.Container{
		Name:            role,
		Image:           image,
		ImagePullPolicy: pull,
		Command:         []string{cfg.entrypoint()},
		Args:            args,
		Env: []corev1.EnvVar{{
			Name:      podIPEnv,
			ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}},
		}},
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			RunAsNonRoot:             ptr.To(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		// Read-only root: anything that wants a temp file gets an emptyDir.
		VolumeMounts: []corev1.VolumeMount{
			{Name: "tmp", MountPath: "/tmp"},
			{Name: authVolume, MountPath: authDir, ReadOnly: true},
		},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
	c.Resources = resourcesFor(role, o.Resources)
	return c
}

func basePod(a attemptRef, role string, o evalv1.PodOverrides, c corev1.Container) *corev1.Pod {
	t := a.Trial
	pod := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            PodName(t.Name, a.Number, role),
			Namespace:       t.Namespace,
			Labels:          podLabels(t.Name, a.Number, role),
			OwnerReferences: []metav1.OwnerReference{ownerRef(t)},
		},
		Spec: restrictedPodSpec(corev1.PodSpec{
			Containers: []corev1.Container{c},
			Volumes: []corev1.Volume{
				{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(tmpSizeLimit.DeepCopy())}}},
				{Name: authVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
					SecretName: AuthSecretName(t, a.Number),
					Items:      []corev1.KeyToPath{{Key: authn.SecretKey, Path: authn.SecretKey}},
					// Group-readable: the pod's fsGroup is the server's group.
					DefaultMode: ptr.To[int32](0o440),
				}}},
			},
		}),
	}
	placeAs(pod, o)
	return pod
}

// restrictedPodSpec is spec as every pod the manager runs for trials has it
// (an attempt's, a slot's): never restarted, no service-account token, no
// service links, non-root with the runtime's seccomp profile (containers
// drop every capability in baseContainer).
func restrictedPodSpec(spec corev1.PodSpec) corev1.PodSpec {
	// A restarted runner has lost its registrations: the attempt (or the
	// slot) is over either way, so the kubelet must not pretend otherwise.
	spec.RestartPolicy = corev1.RestartPolicyNever
	spec.AutomountServiceAccountToken = ptr.To(false)
	spec.EnableServiceLinks = ptr.To(false)
	spec.TerminationGracePeriodSeconds = ptr.To[int64](10)
	spec.SecurityContext = &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		RunAsUser:      ptr.To[int64](nonRootUID),
		RunAsGroup:     ptr.To[int64](nonRootUID),
		FSGroup:        ptr.To[int64](nonRootUID),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	return spec
}

// placeAs gives pod the Trial's nodeSelector and tolerations for a role.
func placeAs(pod *corev1.Pod, o evalv1.PodOverrides) {
	if len(o.NodeSelector) > 0 {
		pod.Spec.NodeSelector = make(map[string]string, len(o.NodeSelector))
		for k, v := range o.NodeSelector {
			pod.Spec.NodeSelector[k] = v
		}
	}
	for _, tol := range o.Tolerations {
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, *tol.DeepCopy())
	}
}

// podHealth is what the controller concludes from one pod.
type podHealth int

const (
	podAbsent  podHealth = iota // not in the cache
	podWaiting                  // exists, not ready yet
	podReady                    // Ready condition true
	podGone                     // exited, failed or being deleted
)

// neverStarts are container waiting reasons kubelet does not recover from
// without a new pod spec (ErrImagePull and ImagePullBackOff may: a registry
// comes back).
var neverStarts = map[string]bool{"ErrImageNeverPull": true, "InvalidImageName": true}

// observePod classifies a pod and explains a gone pod in one sentence.
func observePod(p *corev1.Pod) (podHealth, string, string) {
	if p == nil {
		return podAbsent, "", ""
	}
	if p.DeletionTimestamp != nil {
		return podGone, evalv1.ReasonPodLost, fmt.Sprintf("pod %s is being deleted", p.Name)
	}
	switch p.Status.Phase {
	case corev1.PodFailed, corev1.PodSucceeded:
		return podGone, evalv1.ReasonPodFailed, fmt.Sprintf("pod %s %s", p.Name, exitDescription(p))
	}
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			return podGone, evalv1.ReasonPodFailed, fmt.Sprintf("pod %s %s", p.Name, exitDescription(p))
		}
		// kubelet never retries these: waiting for the pods-ready timeout
		// would only delay the same end.
		if w := cs.State.Waiting; w != nil && neverStarts[w.Reason] {
			return podGone, evalv1.ReasonPodFailed, fmt.Sprintf("pod %s cannot start: container %s %s (%s)", p.Name, cs.Name, w.Reason, w.Message)
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.Status.PodIP != "" {
			return podReady, "", ""
		}
	}
	return podWaiting, "", ""
}

func exitDescription(p *corev1.Pod) string {
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			msg := fmt.Sprintf("container %s exited with code %d", cs.Name, t.ExitCode)
			if t.Reason != "" {
				msg += " (" + t.Reason + ")"
			}
			return msg
		}
	}
	if p.Status.Reason != "" {
		return fmt.Sprintf("is %s (%s)", p.Status.Phase, p.Status.Reason)
	}
	return fmt.Sprintf("is %s", p.Status.Phase)
}
