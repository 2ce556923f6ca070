package controllers

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// policyWrites counts NetworkPolicy creates and updates by name.
type policyWrites struct {
	mu      sync.Mutex
	creates map[string]int
	updates map[string]int
}

func newPolicyClient(t *testing.T, objs ...client.Object) (client.WithWatch, *policyWrites) {
	return newPolicyClientWith(t, nil, objs...)
}

func newPolicyClientWith(t *testing.T, build func(*fake.ClientBuilder), objs ...client.Object) (client.WithWatch, *policyWrites) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := evalv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	w := &policyWrites{creates: map[string]int{}, updates: map[string]int{}}
	b := fake.NewClientBuilder()
	if build != nil {
		build(b)
	}
	count := func(m map[string]int, obj client.Object) {
		if _, ok := obj.(*networkingv1.NetworkPolicy); ok {
			w.mu.Lock()
			m[obj.GetNamespace()+"/"+obj.GetName()]++
			w.mu.Unlock()
		}
	}
	c := b.WithScheme(scheme).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			count(w.creates, obj)
			return cl.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			count(w.updates, obj)
			return cl.Update(ctx, obj, opts...)
		},
	}).Build()
	return c, w
}

// staleCache is a client whose reads never see a NetworkPolicy, as the
// manager's cache right after a create.
type staleCache struct {
	client.Client
	reads atomic.Int32
}

func (s *staleCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*networkingv1.NetworkPolicy); ok {
		s.reads.Add(1)
		return apierrors.NewNotFound(schema.GroupResource{Group: "networking.k8s.io", Resource: "networkpolicies"}, key.Name)
	}
	return s.Client.Get(ctx, key, obj, opts...)
}

// The first trials of a namespace start together, and the manager's cache
// has not seen the namespace's runner policy when the next trial asks: it is
// created once per namespace, not once per trial, and every trial gets its
// own isolation policy.
func TestRunnersPolicyIsWrittenOncePerNamespace(t *testing.T) {
	api, writes := newPolicyClient(t)
	r := &TrialReconciler{Client: &staleCache{Client: api}, APIReader: api, Recorder: events.NewFakeRecorder(100),
		Pods: PodConfig{Image: "i"}, Pool: NewPool(1, nil, logr.Discard()), Log: logr.Discard(),
		ManagerPeer: DefaultManagerPeer("tolokaforge-system"), runners: &runnersMemo{written: map[string]bool{}}}
	var wg sync.WaitGroup
	errs := make(chan error, 30)
	for i := range 30 {
		wg.Go(func() {
			tr := testTrial()
			tr.Namespace = []string{"a", "b", "c"}[i%3]
			tr.Name, tr.UID = fmt.Sprintf("t%d", i), types.UID(fmt.Sprintf("uid-%d", i))
			if err := r.ensureNetworkPolicies(context.Background(), tr, nil); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, ns := range []string{"a", "b", "c"} {
		if n := writes.creates[ns+"/"+RunnersPolicyName]; n != 1 {
			t.Errorf("namespace %s: %s created %d times, want once", ns, RunnersPolicyName, n)
		}
	}
	for i := range 30 {
		name := []string{"a", "b", "c"}[i%3] + "/" + NetworkPolicyName(fmt.Sprintf("t%d", i))
		if writes.creates[name] != 1 {
			t.Errorf("%s created %d times, want once", name, writes.creates[name])
		}
	}
	if len(writes.updates) != 0 {
		t.Errorf("updates %v, want none", writes.updates)
	}

	// Deleted behind the manager's back: the next trial brings it back.
	if err := api.Delete(context.Background(), &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: RunnersPolicyName}}); err != nil {
		t.Fatal(err)
	}
	tr := testTrial()
	tr.Namespace = "a"
	if err := r.ensureNetworkPolicies(context.Background(), tr, nil); err != nil {
		t.Fatal(err)
	}
	if n := writes.creates["a/"+RunnersPolicyName]; n != 2 {
		t.Errorf("after its deletion %s was created %d times in all, want 2", RunnersPolicyName, n)
	}
}

// A runner policy another manager wrote (no gateway port) is not what this
// manager's runners need (port 8090): the trial is not fenced until it is
// brought to this manager's spec, with one update.
func TestStaleRunnersPolicyIsUpdated(t *testing.T) {
	old := RunnersPolicy("ns", DefaultManagerPeer("tolokaforge-system"))
	api, writes := newPolicyClient(t, old)
	mgr := DefaultManagerPeer("tolokaforge-system")
	mgr.GatewayPort = 8090
	r := &TrialReconciler{Client: api, APIReader: api, Recorder: events.NewFakeRecorder(10),
		Pods: PodConfig{Image: "i"}, Pool: NewPool(1, nil, logr.Discard()), Log: logr.Discard(), ManagerPeer: mgr}
	tr := testTrial()
	if err := api.Create(context.Background(), NetworkPolicy(tr, mgr)); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if ok, err := r.hasNetworkPolicies(ctx, tr, nil); err != nil || ok {
		t.Fatalf("hasNetworkPolicies with a stale runner policy = %v, %v; want false", ok, err)
	}
	if err := r.ensureNetworkPolicies(ctx, tr, nil); err != nil {
		t.Fatal(err)
	}
	var got networkingv1.NetworkPolicy
	if err := api.Get(ctx, types.NamespacedName{Namespace: "ns", Name: RunnersPolicyName}, &got); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(got.Spec, RunnersPolicy("ns", mgr).Spec) {
		t.Errorf("spec after ensure: %+v", got.Spec)
	}
	if writes.updates["ns/"+RunnersPolicyName] != 1 || writes.creates["ns/"+RunnersPolicyName] != 0 {
		t.Errorf("creates %v updates %v, want one update", writes.creates, writes.updates)
	}
	if ok, err := r.hasNetworkPolicies(ctx, tr, nil); err != nil || !ok {
		t.Fatalf("hasNetworkPolicies after the update = %v, %v; want true", ok, err)
	}
}

// A deleted Trial takes its own policy (and one of an older release) with
// it; the namespace's runner policy serves the other trials and stays.
func TestDeletedTrialLeavesTheRunnersPolicy(t *testing.T) {
	tr := testTrial()
	mgr := DefaultManagerPeer("tolokaforge-system")
	legacy := NetworkPolicy(tr, mgr)
	legacy.Name = legacyRunnerEgressPolicyName(tr.Name)
	api, _ := newPolicyClientWith(t, func(b *fake.ClientBuilder) {
		b.WithIndex(&corev1.Pod{}, podOwnerIndex, func(client.Object) []string { return nil })
	}, NetworkPolicy(tr, mgr), legacy, RunnersPolicy("ns", mgr))
	r := &TrialReconciler{Client: api, APIReader: api, Recorder: events.NewFakeRecorder(10),
		Pods: PodConfig{Image: "i"}, Pool: NewPool(1, nil, logr.Discard()), Log: logr.Discard(), ManagerPeer: mgr}
	if _, err := r.reconcileGone(context.Background(), client.ObjectKeyFromObject(tr)); err != nil {
		t.Fatal(err)
	}
	var left networkingv1.NetworkPolicyList
	if err := api.List(context.Background(), &left); err != nil {
		t.Fatal(err)
	}
	if len(left.Items) != 1 || left.Items[0].Name != RunnersPolicyName {
		var names []string
		for _, np := range left.Items {
			names = append(names, np.Name)
		}
		t.Fatalf("policies left: %v, want only %s", names, RunnersPolicyName)
	}
}
