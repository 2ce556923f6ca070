package controllers

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"tolokaforge.io/operator/api/authn"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// Both pods mount the attempt's credential Secret read-only as a file and
// name it by flag; nothing puts it in the environment.
func TestBothPodsMountTheAttemptCredential(t *testing.T) {
	tr := testTrial()
	for _, pod := range []*corev1.Pod{runnerPod(PodConfig{Image: "i"}, attemptRef{tr, 3}, nil), dbServicePod(PodConfig{Image: "i"}, attemptRef{tr, 3})} {
		t.Run(pod.Name, func(t *testing.T) {
			var vol *corev1.Volume
			for i := range pod.Spec.Volumes {
				if pod.Spec.Volumes[i].Name == authVolume {
					vol = &pod.Spec.Volumes[i]
				}
			}
			if vol == nil || vol.Secret == nil {
				t.Fatalf("no credential Secret volume: %+v", pod.Spec.Volumes)
			}
			if vol.Secret.SecretName != "t1-a3-auth-uid-1" || len(vol.Secret.Items) != 1 || vol.Secret.Items[0].Key != authn.SecretKey ||
				vol.Secret.Optional != nil || vol.Secret.DefaultMode == nil || *vol.Secret.DefaultMode != 0o440 {
				t.Errorf("credential volume = %+v, want t1-a3-auth's token only, mode 0440, not optional", vol.Secret)
			}
			c := pod.Spec.Containers[0]
			mounted := false
			for _, m := range c.VolumeMounts {
				if m.Name == authVolume {
					mounted = m.MountPath == authDir && m.ReadOnly
				}
			}
			if !mounted {
				t.Errorf("credential not mounted read-only at %s: %+v", authDir, c.VolumeMounts)
			}
			if !slices.Contains(c.Args, "--auth-token-file="+authTokenFile) {
				t.Errorf("args = %q, want --auth-token-file=%s", c.Args, authTokenFile)
			}
			for _, e := range c.Env {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					t.Errorf("env %s reads a Secret", e.Name)
				}
			}
		})
	}
}

func TestAuthSecret(t *testing.T) {
	tr := testTrial()
	tok, err := authn.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	s := authSecret(attemptRef{tr, 2}, tok, "env-tok")
	if s.Name != "t1-a2-auth-uid-1" || s.Namespace != "ns" {
		t.Errorf("name = %s/%s", s.Namespace, s.Name)
	}
	if o := metav1.GetControllerOf(s); o == nil || o.UID != tr.UID || o.Kind != "Trial" {
		t.Errorf("controller = %+v, want the Trial", o)
	}
	if s.Immutable == nil || !*s.Immutable {
		t.Error("the credential Secret is mutable")
	}
	if string(s.Data[authn.SecretKey]) != tok || string(s.Data[EnvironmentTokenKey]) != "env-tok" || len(s.Data) != 2 {
		t.Errorf("data = %d keys, want %q holding the runner's token and %q the exec agent's", len(s.Data), authn.SecretKey, EnvironmentTokenKey)
	}
	if s.Labels[evalv1.LabelTrial] != "t1" || s.Labels[evalv1.LabelAttempt] != "2" {
		t.Errorf("labels = %v", s.Labels)
	}
	long := testTrial()
	long.Name, long.UID = strings.Repeat("a", 253), "0123456789abcdef"
	if got := AuthSecretName(long, 12); len(got) > 253 || !strings.HasSuffix(got, "-a12-auth-01234567") {
		t.Errorf("name of a long trial = %q (%d long)", got, len(got))
	}
}

// attemptToken refuses a Secret of the right name that this Trial does not
// control: its token could be someone else's.
func TestAttemptTokenNeedsTheTrialsOwnSecret(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	tr := testTrial()
	mine := authSecret(attemptRef{tr, 1}, "tok-1", "env-1")
	other := testTrial()
	other.UID = "uid-other"
	foreign := authSecret(attemptRef{other, 2}, "tok-2", "env-2")
	foreign.Name = AuthSecretName(tr, 2) // planted under this Trial's name
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(mine, foreign).Build()
	ctx := context.Background()
	if got, err := attemptToken(ctx, c, tr, 1); err != nil || got != "tok-1" {
		t.Errorf("attemptToken(1) = %q, %v", got, err)
	}
	_, err := attemptToken(ctx, c, tr, 2)
	if err == nil || !strings.Contains(err.Error(), "is not controlled by trial t1") || strings.Contains(err.Error(), "tok-2") {
		t.Errorf("foreign secret: err = %v", err)
	}
	_, err = attemptToken(ctx, c, tr, 3)
	if err == nil || !strings.Contains(err.Error(), "ns/t1-a3-auth-uid-1") {
		t.Errorf("absent secret: err = %v", err)
	}
}

func TestEveryEmptyDirHasASizeLimit(t *testing.T) {
	tr := testTrial()
	for _, pod := range []*corev1.Pod{runnerPod(PodConfig{Image: "i"}, attemptRef{tr, 1}, nil), dbServicePod(PodConfig{Image: "i"}, attemptRef{tr, 1})} {
		n := 0
		for _, v := range pod.Spec.Volumes {
			if v.EmptyDir == nil {
				continue
			}
			n++
			if v.EmptyDir.SizeLimit == nil || v.EmptyDir.SizeLimit.IsZero() {
				t.Errorf("%s: emptyDir %s has no size limit", pod.Name, v.Name)
			}
		}
		if n == 0 {
			t.Errorf("%s: no emptyDir at all", pod.Name)
		}
	}
}

func TestResourcesDefaultAndOverride(t *testing.T) {
	q := resource.MustParse
	for _, tc := range []struct {
		name     string
		role     string
		override *corev1.ResourceRequirements
		want     map[string]string // "requests.cpu" -> quantity
	}{
		{"runner defaults", evalv1.RoleRunner, nil, map[string]string{
			"requests.cpu": "250m", "requests.memory": "256Mi", "limits.cpu": "2", "limits.memory": "2Gi"}},
		{"dbservice defaults", evalv1.RoleDBService, nil, map[string]string{
			"requests.cpu": "100m", "requests.memory": "128Mi", "limits.cpu": "1", "limits.memory": "1Gi"}},
		{"a raised memory limit keeps the rest", evalv1.RoleRunner, &corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceMemory: q("8Gi")}}, map[string]string{
			"requests.cpu": "250m", "requests.memory": "256Mi", "limits.cpu": "2", "limits.memory": "8Gi"}},
		{"a request above the default limit lifts the limit", evalv1.RoleDBService, &corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: q("4Gi")}}, map[string]string{
			"requests.memory": "4Gi", "limits.memory": "4Gi", "limits.cpu": "1"}},
		{"a limit below the default request lowers the request", evalv1.RoleRunner, &corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceCPU: q("100m")}}, map[string]string{
			"requests.cpu": "100m", "limits.cpu": "100m"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := testTrial()
			var pod *corev1.Pod
			if tc.role == evalv1.RoleRunner {
				tr.Spec.Runner.Resources = tc.override
				pod = runnerPod(PodConfig{Image: "i"}, attemptRef{tr, 1}, nil)
			} else {
				tr.Spec.DBService.Resources = tc.override
				pod = dbServicePod(PodConfig{Image: "i"}, attemptRef{tr, 1})
			}
			r := pod.Spec.Containers[0].Resources
			for k, v := range tc.want {
				list := r.Requests
				kind, name, _ := strings.Cut(k, ".")
				if kind == "limits" {
					list = r.Limits
				}
				got := list[corev1.ResourceName(name)]
				if got.Cmp(q(v)) != 0 {
					t.Errorf("%s = %s, want %s", k, got.String(), v)
				}
			}
			for name, req := range r.Requests {
				if lim, ok := r.Limits[name]; ok && req.Cmp(lim) > 0 {
					t.Errorf("request %s %s exceeds its limit %s", name, req.String(), lim.String())
				}
			}
			if tc.override != nil {
				// The Trial's spec is not aliased.
				for _, l := range []corev1.ResourceList{r.Requests, r.Limits} {
					l[corev1.ResourceCPU] = q("99")
				}
				if c, ok := tc.override.Limits[corev1.ResourceCPU]; ok && c.Cmp(q("99")) == 0 {
					t.Error("pod resources alias the Trial spec")
				}
			}
		})
	}
}

// egressAllowed evaluates egress the way a CNI does: a pod no policy
// isolates for egress may go anywhere; an isolated one only where some rule
// of a policy selecting it allows.
func egressAllowed(t *testing.T, nps []*networkingv1.NetworkPolicy, from *corev1.Pod, toNS string, toLabels map[string]string, proto corev1.Protocol, port int32) bool {
	t.Helper()
	isolated := false
	for _, np := range nps {
		sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		if err != nil {
			t.Fatal(err)
		}
		if np.Namespace != from.Namespace || !sel.Matches(labels.Set(from.Labels)) || !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
			continue
		}
		isolated = true
		for _, rule := range np.Spec.Egress {
			portOK := len(rule.Ports) == 0
			for _, p := range rule.Ports {
				pr := corev1.ProtocolTCP
				if p.Protocol != nil {
					pr = *p.Protocol
				}
				if pr == proto && (p.Port == nil || p.Port.IntVal == port) {
					portOK = true
				}
			}
			if !portOK {
				continue
			}
			if len(rule.To) == 0 {
				return true
			}
			for _, to := range rule.To {
				nsOK := toNS == np.Namespace
				if to.NamespaceSelector != nil {
					s, err := metav1.LabelSelectorAsSelector(to.NamespaceSelector)
					if err != nil {
						t.Fatal(err)
					}
					nsOK = s.Matches(labels.Set{corev1.LabelMetadataName: toNS})
				}
				podOK := true
				if to.PodSelector != nil {
					s, err := metav1.LabelSelectorAsSelector(to.PodSelector)
					if err != nil {
						t.Fatal(err)
					}
					podOK = s.Matches(labels.Set(toLabels))
				}
				if to.IPBlock != nil {
					podOK = false
				}
				if nsOK && podOK {
					return true
				}
			}
		}
	}
	return !isolated
}

// trialPolicies are the policies that select a trial's pods: its own and its
// namespace's runner policy.
func trialPolicies(t *evalv1.Trial, mgr ManagerPeer) []*networkingv1.NetworkPolicy {
	return []*networkingv1.NetworkPolicy{NetworkPolicy(t, mgr), RunnersPolicy(t.Namespace, mgr)}
}

func TestNetworkPolicyEgress(t *testing.T) {
	tr := testTrial()
	mgr := DefaultManagerPeer("tolokaforge-system")
	mgr.GatewayPort = 8090
	nps := trialPolicies(tr, mgr)

	runner := runnerPod(PodConfig{Image: "i"}, attemptRef{tr, 1}, nil)
	db := dbServicePod(PodConfig{Image: "i"}, attemptRef{tr, 1})
	other := testTrial()
	other.Name, other.UID = "t2", "uid-2"
	otherDB := dbServicePod(PodConfig{Image: "i"}, attemptRef{other, 1})
	dns := map[string]string{"k8s-app": "kube-dns"}
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	for _, tc := range []struct {
		name   string
		from   *corev1.Pod
		ns     string
		labels map[string]string
		proto  corev1.Protocol
		port   int32
		want   bool
	}{
		{"runner to its dbservice", runner, "ns", db.Labels, tcp, DBServicePort, true},
		{"runner to its dbservice, another port", runner, "ns", db.Labels, tcp, 22, false},
		{"runner to another trial's dbservice", runner, "ns", otherDB.Labels, tcp, DBServicePort, false},
		{"runner to DNS over UDP", runner, "kube-system", dns, udp, 53, true},
		{"runner to DNS over TCP", runner, "kube-system", dns, tcp, 53, true},
		{"runner to a kube-dns look-alike elsewhere", runner, "ns", dns, udp, 53, false},
		{"runner to the manager's gateway", runner, "tolokaforge-system", mgr.Labels, tcp, 8090, true},
		{"runner to the manager's metrics", runner, "tolokaforge-system", mgr.Labels, tcp, 8080, false},
		{"runner to anything else", runner, "default", map[string]string{"app": "web"}, tcp, 443, false},
		{"dbservice to its runner", db, "ns", runner.Labels, tcp, RunnerPort, false},
		{"dbservice to DNS", db, "kube-system", dns, udp, 53, false},
		{"dbservice to the manager's gateway", db, "tolokaforge-system", mgr.Labels, tcp, 8090, false},
		// The union of the trial's one policy: harmless, it is its own port.
		{"dbservice to itself", db, "ns", db.Labels, tcp, DBServicePort, true},
		{"dbservice to itself, another port", db, "ns", db.Labels, tcp, 22, false},
		{"dbservice to another trial's dbservice", db, "ns", otherDB.Labels, tcp, DBServicePort, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := egressAllowed(t, nps, tc.from, tc.ns, tc.labels, tc.proto, tc.port); got != tc.want {
				t.Errorf("allowed = %v, want %v", got, tc.want)
			}
		})
	}

	// Without a gateway port the manager is unreachable from the runner.
	none := trialPolicies(tr, DefaultManagerPeer("tolokaforge-system"))
	if egressAllowed(t, none, runner, "tolokaforge-system", mgr.Labels, tcp, 8090) {
		t.Error("runner reaches the manager although no gateway port is configured")
	}
	// The trial's policy goes with the Trial; the namespace's runner policy
	// serves every trial there and has no owner.
	if o := metav1.GetControllerOf(nps[0]); o == nil || o.UID != tr.UID {
		t.Errorf("%s: controller = %+v", nps[0].Name, o)
	}
	if nps[1].Name != RunnersPolicyName || len(nps[1].OwnerReferences) != 0 {
		t.Errorf("second policy %s owned by %+v, want %s without owner", nps[1].Name, nps[1].OwnerReferences, RunnersPolicyName)
	}
}

// A refused policy create leaves no pods and no credential, and the Trial
// says why in a condition that outlives the event.
func TestRefusedNetworkPolicyIsACondition(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := evalv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	refused := errors.New(`networkpolicies.networking.k8s.io "tolokaforge-runners" is forbidden: exceeded quota`)
	tr := running(1)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tr).WithStatusSubresource(tr).
		WithInterceptorFuncs(refuseEgressPolicy(refused)).Build()
	r := &TrialReconciler{Client: c, Recorder: events.NewFakeRecorder(10), Pods: PodConfig{Image: "i"},
		Pool: NewPool(1, nil, logr.Discard()), Log: logr.Discard()}
	p := &plan{EnsureNP: true, CreatePod: []string{evalv1.RoleDBService, evalv1.RoleRunner}}
	if err := r.execute(context.Background(), tr, p); !errors.Is(err, refused) {
		t.Fatalf("execute = %v, want the refusal", err)
	}
	var got evalv1.Trial
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(tr), &got); err != nil {
		t.Fatal(err)
	}
	var cond *metav1.Condition
	for i := range got.Status.Conditions {
		if got.Status.Conditions[i].Type == evalv1.TrialNetworkPolicyReady {
			cond = &got.Status.Conditions[i]
		}
	}
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != evalv1.ReasonNetworkPolicyUnavailable ||
		!strings.Contains(cond.Message, refused.Error()) || !strings.Contains(cond.Message, "no pods are created without it") {
		t.Fatalf("condition = %+v, want NetworkPolicyReady=False NetworkPolicyUnavailable naming the refusal", cond)
	}
	var pods corev1.PodList
	var secrets corev1.SecretList
	if err := c.List(context.Background(), &pods); err != nil {
		t.Fatal(err)
	}
	if err := c.List(context.Background(), &secrets); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 0 || len(secrets.Items) != 0 {
		t.Fatalf("%d pods and %d secrets created without the fence", len(pods.Items), len(secrets.Items))
	}

	// Once both policies exist the next plan turns the condition True.
	w := &world{Now: got.Status.Conditions[0].LastTransitionTime.Time, Trial: &got, HasNetworkPolicy: true,
		Pods: map[int32]map[string]*corev1.Pod{}}
	next := planTrial(w)
	for _, c := range next.Status.Conditions {
		if c.Type == evalv1.TrialNetworkPolicyReady && (c.Status != metav1.ConditionTrue || c.Reason != evalv1.ReasonNetworkPolicyCreated) {
			t.Errorf("after the policies exist: %+v", c)
		}
	}
}

// A pod create retried by a later reconcile re-checks the fence: the plan
// asks for the policies again when they are missing.
func TestRetriedPodCreateEnsuresThePolicies(t *testing.T) {
	tr := running(1)
	a := activeAttempt(&tr.Status)
	w := &world{Now: a.StartTime.Time, Trial: tr, Pods: map[int32]map[string]*corev1.Pod{},
		Driver: &driverView{AttemptID: a.ID, State: stateClaimed}}
	p := planTrial(w)
	if len(p.CreatePod) != 2 || !p.EnsureNP {
		t.Fatalf("plan: CreatePod=%v EnsureNP=%v, want both pods and the policies", p.CreatePod, p.EnsureNP)
	}
	w.HasNetworkPolicy = true
	if p := planTrial(w); p.EnsureNP {
		t.Error("plan re-creates policies that exist")
	}
}

// refuseEgressPolicy lets the trial's policy through and refuses the
// namespace's runner policy: a half-made fence must still stop every pod.
func refuseEgressPolicy(refused error) interceptor.Funcs {
	return interceptor.Funcs{
		Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if np, ok := obj.(*networkingv1.NetworkPolicy); ok && np.Name == RunnersPolicyName {
				return refused
			}
			return cl.Create(ctx, obj, opts...)
		},
	}
}
