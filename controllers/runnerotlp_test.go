package controllers

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

const otlpEndpoint = "http://otel-collector.observability.svc:4317"

// envOf is a pod's container's environment, by name and value ("" for one
// from the downward API).
func envOf(t *testing.T, pod *corev1.Pod, container string) []string {
	t.Helper()
	i := slices.IndexFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == container })
	if i < 0 {
		t.Fatalf("pod %s has no container %s", pod.Name, container)
	}
	var out []string
	for _, e := range pod.Spec.Containers[i].Env {
		out = append(out, e.Name+"="+e.Value)
	}
	return out
}

// With RunnerOTLPEndpoint, the runner container of every runner pod the
// manager makes (an attempt's, a slot's) gets it as
// OTEL_EXPORTER_OTLP_ENDPOINT; off, its environment is what it was. The DB
// service never gets it.
func TestRunnerPodsExportSpans(t *testing.T) {
	for _, tc := range []struct {
		name     string
		endpoint string
		want     []string
	}{
		{"off", "", []string{"POD_IP="}},
		{"on", otlpEndpoint, []string{"POD_IP=", "OTEL_EXPORTER_OTLP_ENDPOINT=" + otlpEndpoint}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := PodConfig{Image: "img", GatewayURL: "http://gw:8090/v1", RunnerOTLPEndpoint: tc.endpoint}
			class, tmpl := slotClassOf(cfg, slotTrial(), nil, "c")
			slot := slotPod(tmpl, "ns", "c-slot-abc", class.Hash, testCampaign)
			if got := envOf(t, runnerPod(cfg, attemptRef{testTrial(), 1}, nil), evalv1.RoleRunner); !slices.Equal(got, tc.want) {
				t.Errorf("attempt runner env %q, want %q", got, tc.want)
			}
			if got := envOf(t, slot, evalv1.RoleRunner); !slices.Equal(got, tc.want) {
				t.Errorf("slot runner env %q, want %q", got, tc.want)
			}
			if got := envOf(t, dbServicePod(cfg, attemptRef{testTrial(), 1}), evalv1.RoleDBService); !slices.Equal(got, []string{"POD_IP="}) {
				t.Errorf("DB service env %q", got)
			}
			if got := envOf(t, slot, evalv1.RoleDBService); !slices.Equal(got, []string{"POD_IP="}) {
				t.Errorf("slot DB service env %q", got)
			}
		})
	}
	// Off is today's pod exactly: the field unset changes nothing else.
	base := PodConfig{Image: "img", GatewayURL: "http://gw:8090/v1", RunnerMetrics: RunnerMetrics{Port: 9464, Token: scrapeToken}}
	on := base
	on.RunnerOTLPEndpoint = otlpEndpoint
	offPod, onPod := runnerPod(base, attemptRef{testTrial(), 1}, nil), runnerPod(on, attemptRef{testTrial(), 1}, nil)
	onPod.Spec.Containers[0].Env = onPod.Spec.Containers[0].Env[:1]
	if !reflect.DeepEqual(offPod, onPod) {
		t.Error("the endpoint changes more of the runner pod than its environment")
	}
	// A slot made without the endpoint exports nothing: it must not run a
	// Trial of a manager that has one, nor one of another endpoint.
	off, _ := slotClassOf(base, slotTrial(), nil, "c")
	a, _ := slotClassOf(on, slotTrial(), nil, "c")
	on.RunnerOTLPEndpoint = "http://other:4317"
	b, _ := slotClassOf(on, slotTrial(), nil, "c")
	if off.Hash == a.Hash || a.Hash == b.Hash {
		t.Errorf("slot classes off %s, on %s, other endpoint %s: want three", off.Hash, a.Hash, b.Hash)
	}
}

// With a collector, the runner policies (the namespace's RunnersPolicy for
// an attempt's runner, the Campaign's for its slots) let runners reach its
// pods on its port, and nothing else new; without, no rule.
func TestRunnerPoliciesLetRunnersReachTheCollector(t *testing.T) {
	tr := testTrial()
	otel := map[string]string{"app.kubernetes.io/name": "opentelemetry-collector"}
	collector := OTLPCollector{Port: 4317, Namespaces: map[string]string{corev1.LabelMetadataName: "observability"}, Pods: otel}
	cfg := PodConfig{Image: "i", RunnerOTLPEndpoint: otlpEndpoint}
	runner := runnerPod(cfg, attemptRef{tr, 1}, nil)
	db := dbServicePod(cfg, attemptRef{tr, 1})
	class, tmpl := slotClassOf(cfg, slotTrial(), nil, "c")
	slot := slotPod(tmpl, "ns", "c-slot-abc", class.Hash, testCampaign)

	type to struct {
		ns     string
		labels map[string]string
	}
	cases := []struct {
		name string
		from *corev1.Pod
		to   to
		port int32
		on   bool // allowed with the collector
	}{
		{"a runner to the collector", runner, to{"observability", otel}, 4317, true},
		{"a slot to the collector", slot, to{"observability", otel}, 4317, true},
		{"a runner to the collector on another port", runner, to{"observability", otel}, 4318, false},
		{"a slot to the collector on another port", slot, to{"observability", otel}, 4318, false},
		{"a runner to another pod of the collector's namespace", runner, to{"observability", map[string]string{"app": "x"}}, 4317, false},
		{"a runner to the collector's labels in another namespace", runner, to{"ns", otel}, 4317, false},
		{"the DB service to the collector", db, to{"observability", otel}, 4317, false},
	}
	for _, on := range []bool{true, false} {
		mgr := DefaultManagerPeer("sys")
		mgr.GatewayPort = 8090
		if on {
			mgr.Collector = collector
		}
		nps := []*networkingv1.NetworkPolicy{NetworkPolicy(tr, mgr), RunnersPolicy("ns", mgr), SlotNetworkPolicy("ns", testCampaign, mgr)}
		for _, tc := range cases {
			if got := egressAllowed(t, nps, tc.from, tc.to.ns, tc.to.labels, corev1.ProtocolTCP, tc.port); got != (on && tc.on) {
				t.Errorf("collector %t: %s allowed %t, want %t", on, tc.name, got, on && tc.on)
			}
		}
		// What runners reached before still holds either way.
		if !egressAllowed(t, nps, runner, "sys", mgr.Labels, corev1.ProtocolTCP, 8090) || !egressAllowed(t, nps, slot, "sys", mgr.Labels, corev1.ProtocolTCP, 8090) {
			t.Errorf("collector %t: runners lost the gateway", on)
		}
	}

	// Off, and with a selector-less collector (which would be an empty
	// peer: the whole namespace), the policies are what they were.
	mgr := DefaultManagerPeer("sys")
	mgr.GatewayPort = 8090
	wantRunners, wantSlots := RunnersPolicy("ns", mgr), SlotNetworkPolicy("ns", testCampaign, mgr)
	if n := len(wantRunners.Spec.Egress); n != 2 {
		t.Errorf("off: RunnersPolicy has %d egress rules, want 2 (DNS, gateway)", n)
	}
	mgr.Collector = OTLPCollector{Port: 4317}
	if got := RunnersPolicy("ns", mgr); !reflect.DeepEqual(got, wantRunners) {
		t.Errorf("selector-less collector: RunnersPolicy egress %+v", got.Spec.Egress)
	}
	if got := SlotNetworkPolicy("ns", testCampaign, mgr); !reflect.DeepEqual(got, wantSlots) {
		t.Errorf("selector-less collector: slot policy egress %+v", got.Spec.Egress)
	}
	// Pods alone: the runner's own namespace, as a peer without a
	// namespace selector means.
	mgr.Collector = OTLPCollector{Port: 4317, Pods: otel}
	nps := []*networkingv1.NetworkPolicy{NetworkPolicy(tr, mgr), RunnersPolicy("ns", mgr)}
	if !egressAllowed(t, nps, runner, "ns", otel, corev1.ProtocolTCP, 4317) || egressAllowed(t, nps, runner, "observability", otel, corev1.ProtocolTCP, 4317) {
		t.Error("a pod-only collector selector: want its pods of the runner's namespace, and no other namespace's")
	}
}

// A Campaign's slot policy an earlier manager wrote without the collector
// gets its rule when this manager makes the Campaign's next slot.
func TestSlotPolicyIsRefreshedForTheCollector(t *testing.T) {
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
	mgr.Collector = OTLPCollector{Port: 4317, Pods: map[string]string{"app.kubernetes.io/name": "opentelemetry-collector"}}
	cfg := PodConfig{Image: "img", RunnerOTLPEndpoint: otlpEndpoint}
	class, tmpl := slotClassOf(cfg, slotTrial(), nil, "c")
	r := &TrialReconciler{Client: c, APIReader: c, Slots: newSlotRegistry(), ManagerPeer: mgr, Pods: cfg}
	res := r.Slots.claim(class, trialKey(1), "t1-1", slotPolicy{Cap: 4}, allReady)
	if err := r.createSlot(ctx, "ns", res.View.Name, &slotMake{Template: tmpl, Campaign: testCampaign, Class: class}); err != nil {
		t.Fatal(err)
	}
	got := &networkingv1.NetworkPolicy{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: "ns", Name: SlotPolicyName("c")}, got); err != nil {
		t.Fatal(err)
	}
	want := SlotNetworkPolicy("ns", testCampaign, mgr).Spec
	if updates != 1 || !reflect.DeepEqual(got.Spec.Egress, want.Egress) {
		t.Fatalf("%d updates, egress %s; want one update to %s", updates, fmt.Sprint(got.Spec.Egress), fmt.Sprint(want.Egress))
	}
	if n := len(old.Spec.Egress); len(got.Spec.Egress) != n+1 || got.Spec.Egress[n-1].Ports[0].Port.IntVal != 4317 {
		t.Errorf("egress %+v: want the old rules and the collector's on 4317", got.Spec.Egress)
	}
}
