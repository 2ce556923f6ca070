package manager

import (
	"context"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	kueuev1 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers"
)

func TestOptionsDefaults(t *testing.T) {
	if _, err := (Options{}).withDefaults(); err == nil || err.Error() != "manager: an image for the runner and dbservice pods is required (--image)" {
		t.Errorf("no image: %v", err)
	}
	if _, err := (Options{Image: "i", MaxConcurrentTrials: -1}).withDefaults(); err == nil {
		t.Error("negative pool accepted")
	}
	if o, err := (Options{Image: "i", HealthProbeBindAddress: "0"}).withDefaults(); err != nil || o.HealthProbeBindAddress != "" {
		t.Errorf("probe address \"0\" should disable: %q %v", o.HealthProbeBindAddress, err)
	}
	t.Setenv("POD_NAMESPACE", "ops")
	o, err := (Options{Image: "i"}).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if o.ManagerNamespace != "ops" || o.MaxConcurrentTrials != DefaultMaxConcurrentTrials || o.MetricsBindAddress != "0" ||
		o.Actors == nil || o.Dial == nil {
		t.Errorf("defaults = %+v", o)
	}
	t.Setenv("POD_NAMESPACE", "")
	if o, _ := (Options{Image: "i"}).withDefaults(); o.ManagerNamespace != DefaultManagerNamespace {
		t.Errorf("manager namespace = %q", o.ManagerNamespace)
	}
}

func TestRunRefusesNilConfig(t *testing.T) {
	if err := Run(context.Background(), nil, Options{Image: "i"}); err == nil || err.Error() != "manager: rest config is nil" {
		t.Errorf("err = %v", err)
	}
}

// The cache keeps no managedFields: the controllers never read them, and at
// campaign scale they are most of a cached Trial's memory.
func TestCacheStripsManagedFields(t *testing.T) {
	tr := &evalv1.Trial{ObjectMeta: metav1.ObjectMeta{Name: "t", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}}
	o := cacheOptions("", false)
	out, err := o.DefaultTransform(tr)
	if err != nil {
		t.Fatal(err)
	}
	if mf := out.(*evalv1.Trial).ManagedFields; mf != nil {
		t.Fatalf("managedFields kept in the cache: %v", mf)
	}
	if o.DefaultNamespaces != nil || len(o.ByObject) != 2 {
		t.Fatalf("cache options %+v: want every namespace, pods and policies by label", o)
	}
	if got := cacheOptions("evals", false).DefaultNamespaces; len(got) != 1 {
		t.Fatalf("namespaced manager caches %v", got)
	}
	// With Kueue's integration on, its Workloads are cached by the same
	// label: only our Trials', never a cluster's.
	withKueue := cacheOptions("", true).ByObject
	found := false
	for k, v := range withKueue {
		if _, ok := k.(*kueuev1.Workload); ok {
			found = true
			if v.Label == nil || v.Label.String() != evalv1.LabelManagedBy+"="+evalv1.ManagedByValue {
				t.Errorf("workloads cached by %v, want %s=%s", v.Label, evalv1.LabelManagedBy, evalv1.ManagedByValue)
			}
		}
	}
	if !found || len(withKueue) != 3 {
		t.Errorf("with Kueue, the cache options by object are %v: want pods, policies and workloads", withKueue)
	}
}

// A trial's own policy is cached without its spec (the controller needs its
// existence and UID); the namespace's runner policy keeps its spec, which
// the controller compares with its own; neither keeps managedFields.
func TestCacheStripsTrialPolicySpecs(t *testing.T) {
	tr := &evalv1.Trial{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "t1", UID: "u1"}}
	mgr := controllers.DefaultManagerPeer("tolokaforge-system")
	var transform cache.ByObject
	for k, v := range cacheOptions("", false).ByObject {
		if _, ok := k.(*networkingv1.NetworkPolicy); ok {
			transform = v
		}
	}
	if transform.Transform == nil {
		t.Fatal("no transform for NetworkPolicies")
	}
	own := controllers.NetworkPolicy(tr, mgr)
	own.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "tolokaforge"}}
	out, err := transform.Transform(own)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*networkingv1.NetworkPolicy)
	if got.Name != controllers.NetworkPolicyName("t1") || got.ManagedFields != nil ||
		len(got.Spec.Ingress) != 0 || len(got.Spec.Egress) != 0 || len(got.Spec.PodSelector.MatchLabels) != 0 {
		t.Fatalf("trial policy in the cache: name %s, managedFields %v, spec %+v", got.Name, got.ManagedFields, got.Spec)
	}

	ns := controllers.RunnersPolicy("ns", mgr)
	want := ns.Spec.DeepCopy()
	ns.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "tolokaforge"}}
	out, err = transform.Transform(ns)
	if err != nil {
		t.Fatal(err)
	}
	got = out.(*networkingv1.NetworkPolicy)
	if got.ManagedFields != nil || !equality.Semantic.DeepEqual(got.Spec, *want) {
		t.Fatalf("namespace policy in the cache: managedFields %v, spec %+v, want %+v", got.ManagedFields, got.Spec, *want)
	}
}

// TestPodConfigCarriesBothImages: the Python image and interpreter the flags
// name reach every attempt's pods.
func TestPodConfigCarriesBothImages(t *testing.T) {
	got := podConfig(Options{Image: "tf:v1", PythonImage: "tf:v1-python", Python: "/usr/bin/python3", Entrypoint: "/tolokaforge", GatewayURL: "http://gw/v1"})
	want := controllers.PodConfig{Image: "tf:v1", PythonImage: "tf:v1-python", Python: "/usr/bin/python3", Entrypoint: "/tolokaforge", GatewayURL: "http://gw/v1"}
	if got != want {
		t.Errorf("podConfig = %+v, want %+v", got, want)
	}
}

// kueueEnabled: off and on need no API server; a mode that is none of
// auto, on, off is refused by name. (auto asks the API server: the envtest
// suites without Kueue run it, and would fail to cache Workloads if it said on.)
func TestKueueEnabled(t *testing.T) {
	for _, tc := range []struct {
		mode    KueueMode
		want    bool
		wantErr string
	}{
		{mode: KueueOff, want: false},
		{mode: KueueOn, want: true},
		{mode: "sometimes", wantErr: `manager: kueue mode "sometimes": want auto, on or off`},
	} {
		got, err := kueueEnabled(&rest.Config{Host: "https://127.0.0.1:1"}, tc.mode)
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("kueueEnabled(%q) error %v, want %q", tc.mode, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("kueueEnabled(%q) = %v, %v; want %v", tc.mode, got, err, tc.want)
		}
	}
}
