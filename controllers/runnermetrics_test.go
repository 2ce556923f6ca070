package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"tolokaforge.io/operator/api/authn"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

const scrapeToken = "scraper-token-0123456789"

// metricsView is what a runner container and its pod say about /metrics.
type metricsView struct {
	args  []string // the container's metrics flags
	port  *corev1.ContainerPort
	items []string // keys of the credential volume
}

func viewMetrics(t *testing.T, pod *corev1.Pod, container string) metricsView {
	t.Helper()
	var v metricsView
	i := slices.IndexFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == container })
	if i < 0 {
		t.Fatalf("pod %s has no container %s", pod.Name, container)
	}
	c := pod.Spec.Containers[i]
	for _, a := range c.Args {
		if strings.HasPrefix(a, "--metrics-") {
			v.args = append(v.args, a)
		}
	}
	for j := range c.Ports {
		if c.Ports[j].Name == RunnerMetricsPortName {
			v.port = &c.Ports[j]
		}
	}
	for _, vol := range pod.Spec.Volumes {
		if vol.Name == authVolume {
			for _, it := range vol.Secret.Items {
				v.items = append(v.items, it.Key)
			}
		}
	}
	return v
}

// With RunnerMetrics on, every runner the manager makes (an attempt's, a
// slot's) serves /metrics on its pod IP at the port, names the port, and
// reads the scraper's token from its credential volume; off, nothing of it.
// The DB service gets none of it.
func TestRunnerPodsServeMetrics(t *testing.T) {
	bind := "--metrics-bind-address=$(POD_IP):9464"
	tokenFlag := "--metrics-token-file=/var/run/tolokaforge/auth/metrics-token"
	for _, tc := range []struct {
		name      string
		m         RunnerMetrics
		wantArgs  []string
		wantPort  bool
		wantItems []string
	}{
		{"off", RunnerMetrics{}, nil, false, []string{authn.SecretKey}},
		{"off with a token", RunnerMetrics{Token: scrapeToken}, nil, false, []string{authn.SecretKey}},
		{"on", RunnerMetrics{Port: 9464, Token: scrapeToken}, []string{bind, tokenFlag}, true, []string{authn.SecretKey, MetricsTokenKey}},
		{"on without a token", RunnerMetrics{Port: 9464}, []string{bind}, true, []string{authn.SecretKey}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := PodConfig{Image: "img", GatewayURL: "http://gw:8090/v1", RunnerMetrics: tc.m}
			class, tmpl := slotClassOf(cfg, slotTrial(), nil, "c")
			for what, pod := range map[string]*corev1.Pod{
				"attempt runner": runnerPod(cfg, attemptRef{testTrial(), 1}, nil),
				"slot runner":    slotPod(tmpl, "ns", "c-slot-abc", class.Hash, testCampaign),
			} {
				v := viewMetrics(t, pod, evalv1.RoleRunner)
				if !slices.Equal(v.args, tc.wantArgs) {
					t.Errorf("%s: metrics args %v, want %v", what, v.args, tc.wantArgs)
				}
				if !tc.wantPort && v.port != nil {
					t.Errorf("%s: has a metrics port %+v", what, *v.port)
				}
				if tc.wantPort && (v.port == nil || v.port.ContainerPort != 9464 || v.port.Protocol != corev1.ProtocolTCP) {
					t.Errorf("%s: metrics port %+v, want TCP 9464", what, v.port)
				}
				if !slices.Equal(v.items, tc.wantItems) {
					t.Errorf("%s: credential volume items %v, want %v", what, v.items, tc.wantItems)
				}
			}
			db := viewMetrics(t, dbServicePod(cfg, attemptRef{testTrial(), 1}), evalv1.RoleDBService)
			if db.args != nil || db.port != nil || !slices.Equal(db.items, []string{authn.SecretKey}) {
				t.Errorf("DB service pod: metrics args %v port %v items %v", db.args, db.port, db.items)
			}
			slot := slotPod(tmpl, "ns", "c-slot-abc", class.Hash, testCampaign)
			if dbc := slot.Spec.Containers[1]; slices.ContainsFunc(dbc.Args, func(a string) bool { return strings.HasPrefix(a, "--metrics-") }) || len(dbc.Ports) != 0 {
				t.Errorf("slot DB service: args %v ports %v", dbc.Args, dbc.Ports)
			}
		})
	}
	// Slots of a manager with and without metrics are not one class: a slot
	// made before the switch would serve no metrics.
	off, _ := slotClassOf(PodConfig{Image: "img"}, slotTrial(), nil, "c")
	on, _ := slotClassOf(PodConfig{Image: "img", RunnerMetrics: RunnerMetrics{Port: 9464, Token: scrapeToken}}, slotTrial(), nil, "c")
	if off.Hash == on.Hash {
		t.Error("slot class does not change with runner metrics")
	}
}

// The scraper's token reaches the attempt's and the slot's credential
// Secrets under MetricsTokenKey when runners serve metrics, and only then.
func TestRunnerSecretsCarryTheScraperToken(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		m    RunnerMetrics
		want bool
	}{
		{"off", RunnerMetrics{Token: scrapeToken}, false},
		{"on", RunnerMetrics{Port: 9464, Token: scrapeToken}, true},
		{"on without a token", RunnerMetrics{Port: 9464}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(slotScheme(t)).Build()
			cfg := PodConfig{Image: "img", RunnerMetrics: tc.m}
			r := &TrialReconciler{Client: c, APIReader: c, Recorder: events.NewFakeRecorder(10), Slots: newSlotRegistry(),
				ManagerPeer: DefaultManagerPeer("sys"), Pods: cfg}
			tr := testTrial()
			if err := r.ensureAuthSecret(ctx, attemptRef{tr, 1}); err != nil {
				t.Fatal(err)
			}
			class, tmpl := slotClassOf(cfg, slotTrial(), nil, "c")
			res := r.Slots.claim(class, trialKey(1), "t1-1", slotPolicy{Cap: 1}, allReady)
			if err := r.createSlot(ctx, "ns", res.View.Name, &slotMake{Template: tmpl, Campaign: testCampaign, Class: class}); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{AuthSecretName(tr, 1), SlotSecretName(res.View.Name)} {
				s := &corev1.Secret{}
				if err := c.Get(ctx, types.NamespacedName{Namespace: "ns", Name: name}, s); err != nil {
					t.Fatal(err)
				}
				got, ok := s.Data[MetricsTokenKey]
				if ok != tc.want || (tc.want && string(got) != scrapeToken) {
					t.Errorf("secret %s: %s present %t (matches %t), want present %t", name, MetricsTokenKey, ok, string(got) == scrapeToken, tc.want)
				}
				if string(s.Data[authn.SecretKey]) == scrapeToken {
					t.Errorf("secret %s: the runner's own token is the scraper's", name)
				}
			}
		})
	}
}

// admittedByAll evaluates policies as a CNI does: a pod no policy selects is
// open; a selected one takes what any selecting policy's rules admit.
func admittedByAll(t *testing.T, nps []*networkingv1.NetworkPolicy, to *corev1.Pod, ns string, l map[string]string, port int32) bool {
	t.Helper()
	selected := false
	for _, np := range nps {
		if np.Namespace != to.Namespace {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		if err != nil {
			t.Fatal(err)
		}
		if !sel.Matches(labels.Set(to.Labels)) || !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) {
			continue
		}
		selected = true
		if admits(t, np, to, ns, l, port) {
			return true
		}
	}
	return !selected
}

// With a scraper, the runner policies (the namespace's RunnersPolicy for an
// attempt's runner, the Campaign's for its slots) admit it to the runners'
// metrics port, and to nothing else; without, nobody new gets in.
func TestRunnerPoliciesAdmitTheScraper(t *testing.T) {
	tr := testTrial()
	prom := map[string]string{"app.kubernetes.io/name": "prometheus"}
	scraper := MetricsScraper{Port: 9464, Namespaces: map[string]string{corev1.LabelMetadataName: "monitoring"}, Pods: prom}
	cfg := PodConfig{Image: "i", RunnerMetrics: RunnerMetrics{Port: 9464, Token: scrapeToken}}
	runner := runnerPod(cfg, attemptRef{tr, 1}, nil)
	db := dbServicePod(cfg, attemptRef{tr, 1})
	class, tmpl := slotClassOf(cfg, slotTrial(), nil, "c")
	slot := slotPod(tmpl, "ns", "c-slot-abc", class.Hash, testCampaign)
	manager := DefaultManagerPeer("sys").Labels

	type from struct {
		ns     string
		labels map[string]string
	}
	cases := []struct {
		name string
		from from
		to   *corev1.Pod
		port int32
		on   bool // admitted with the scraper
		off  bool // admitted without
	}{
		{"prometheus to a runner's metrics", from{"monitoring", prom}, runner, 9464, true, false},
		{"prometheus to a slot's metrics", from{"monitoring", prom}, slot, 9464, true, false},
		{"prometheus to a runner's gRPC", from{"monitoring", prom}, runner, RunnerPort, false, false},
		{"prometheus to a slot's gRPC", from{"monitoring", prom}, slot, RunnerPort, false, false},
		{"prometheus to the DB service", from{"monitoring", prom}, db, DBServicePort, false, false},
		{"prometheus to the DB service on the metrics port", from{"monitoring", prom}, db, 9464, false, false},
		{"another pod of monitoring to a runner's metrics", from{"monitoring", map[string]string{"app": "x"}}, runner, 9464, false, false},
		{"prometheus labels in another namespace", from{"ns", prom}, runner, 9464, false, false},
		{"another slot's pod to a slot's metrics", from{"ns", slot.Labels}, slot, 9464, false, false},
		{"the manager to a runner's gRPC", from{"sys", manager}, runner, RunnerPort, true, true},
		{"the manager to a slot's gRPC", from{"sys", manager}, slot, RunnerPort, true, true},
	}
	for _, on := range []bool{true, false} {
		mgr := DefaultManagerPeer("sys")
		if on {
			mgr.Scraper = scraper
		}
		nps := []*networkingv1.NetworkPolicy{NetworkPolicy(tr, mgr), RunnersPolicy("ns", mgr), SlotNetworkPolicy("ns", testCampaign, mgr)}
		for _, tc := range cases {
			want := tc.off
			if on {
				want = tc.on
			}
			if got := admittedByAll(t, nps, tc.to, tc.from.ns, tc.from.labels, tc.port); got != want {
				t.Errorf("scraper %t: %s admitted %t, want %t", on, tc.name, got, want)
			}
		}
	}

	// Off, the namespace's policy is what it was before metrics: egress only.
	np := RunnersPolicy("ns", DefaultManagerPeer("sys"))
	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}) || np.Spec.Ingress != nil {
		t.Errorf("without a scraper: types %v ingress %+v", np.Spec.PolicyTypes, np.Spec.Ingress)
	}
	// A scraper with no selector would be an empty peer (the whole
	// namespace): no rule instead.
	mgr := DefaultManagerPeer("sys")
	mgr.Scraper = MetricsScraper{Port: 9464}
	if np := RunnersPolicy("ns", mgr); np.Spec.Ingress != nil || len(np.Spec.PolicyTypes) != 1 {
		t.Errorf("selector-less scraper: types %v ingress %+v", np.Spec.PolicyTypes, np.Spec.Ingress)
	}
	if np := SlotNetworkPolicy("ns", testCampaign, mgr); len(np.Spec.Ingress) != 1 {
		t.Errorf("selector-less scraper: slot ingress %+v", np.Spec.Ingress)
	}
	// Pods alone: the runner's own namespace, as a peer without a
	// namespace selector means.
	mgr.Scraper = MetricsScraper{Port: 9464, Pods: prom}
	nps := []*networkingv1.NetworkPolicy{NetworkPolicy(tr, mgr), RunnersPolicy("ns", mgr)}
	if !admittedByAll(t, nps, runner, "ns", prom, 9464) || admittedByAll(t, nps, runner, "monitoring", prom, 9464) {
		t.Error("a pod-only scraper selector: want its pods of the runner's namespace, and no other namespace's")
	}
}

// A PodConfig printed (an error, a debug log) never shows the token.
func TestRunnerMetricsPrintsNoToken(t *testing.T) {
	cfg := PodConfig{Image: "img", RunnerMetrics: RunnerMetrics{Port: 9464, Token: scrapeToken}}
	for _, format := range []string{"%v", "%+v", "%s", "%#v"} {
		got := fmt.Sprintf(format, cfg)
		if strings.Contains(got, scrapeToken) || !strings.Contains(got, "9464") {
			t.Errorf("Sprintf(%q) = %s", format, got)
		}
	}
}

// A Campaign's slot policy an earlier manager wrote without the scraper is
// brought to this manager's spec when it makes the Campaign's next slot; one
// already right is not written again.
func TestSlotPolicyIsRefreshedForTheScraper(t *testing.T) {
	ctx := context.Background()
	old := SlotNetworkPolicy("ns", testCampaign, DefaultManagerPeer("sys"))
	var updates int
	c := fake.NewClientBuilder().WithScheme(slotScheme(t)).WithObjects(old).WithInterceptorFuncs(interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			updates++
			return c.Update(ctx, obj, opts...)
		},
	}).Build()
	mgr := DefaultManagerPeer("sys")
	mgr.Scraper = MetricsScraper{Port: 9464, Pods: map[string]string{"app.kubernetes.io/name": "prometheus"}}
	cfg := PodConfig{Image: "img", RunnerMetrics: RunnerMetrics{Port: 9464, Token: scrapeToken}}
	class, tmpl := slotClassOf(cfg, slotTrial(), nil, "c")
	make1 := func(r *TrialReconciler, n int) {
		t.Helper()
		res := r.Slots.claim(class, trialKey(n), fmt.Sprintf("t%d-1", n), slotPolicy{Cap: 4}, allReady)
		if err := r.createSlot(ctx, "ns", res.View.Name, &slotMake{Template: tmpl, Campaign: testCampaign, Class: class}); err != nil {
			t.Fatal(err)
		}
	}
	r := &TrialReconciler{Client: c, APIReader: c, Slots: newSlotRegistry(), ManagerPeer: mgr, Pods: cfg}
	make1(r, 1)
	got := &networkingv1.NetworkPolicy{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: "ns", Name: SlotPolicyName("c")}, got); err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.Ingress) != 2 || got.Spec.Ingress[1].Ports[0].Port.IntVal != 9464 || updates != 1 {
		t.Fatalf("after the first slot: %d updates, ingress %+v; want one update adding the scraper's rule", updates, got.Spec.Ingress)
	}
	// A new process (restart) with the same settings: nothing to write.
	r = &TrialReconciler{Client: c, APIReader: c, Slots: newSlotRegistry(), ManagerPeer: mgr, Pods: cfg}
	make1(r, 2)
	if updates != 1 {
		t.Errorf("a policy already right was written again: %d updates", updates)
	}
}
