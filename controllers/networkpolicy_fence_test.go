package controllers

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// A trial whose NetworkPolicy cannot be created gets no pods: unfenced pods
// would take traffic from anyone in the cluster.
func TestNoPodsWithoutTheNetworkPolicy(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	refused := errors.New(`networkpolicies.networking.k8s.io is forbidden: admission webhook "policy.example" denied the request`)
	c := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*networkingv1.NetworkPolicy); ok {
				return refused
			}
			return cl.Create(ctx, obj, opts...)
		},
	}).Build()
	rec := events.NewFakeRecorder(10)
	r := &TrialReconciler{Client: c, Recorder: rec, Pods: PodConfig{Image: "i"}, Pool: NewPool(1, nil, logr.Discard()), Log: logr.Discard()}
	tr := running(1)
	p := &plan{EnsureNP: true, CreatePod: []string{evalv1.RoleDBService, evalv1.RoleRunner}}

	err := r.execute(context.Background(), tr, p)
	if err == nil || !errors.Is(err, refused) {
		t.Fatalf("execute = %v, want the policy's refusal", err)
	}
	var pods corev1.PodList
	if err := c.List(context.Background(), &pods); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 0 {
		t.Fatalf("%d pods created without their network policy", len(pods.Items))
	}
	var secrets corev1.SecretList
	if err := c.List(context.Background(), &secrets); err != nil {
		t.Fatal(err)
	}
	if len(secrets.Items) != 0 {
		t.Fatalf("a credential Secret was created for pods that will not exist: %d", len(secrets.Items))
	}
	select {
	case e := <-rec.Events:
		want := "Warning NetworkPolicyUnavailable create network policy " + NetworkPolicyName(tr.Name) + ": " + refused.Error() + "; no pods are created without it"
		if !strings.HasPrefix(e, want) {
			t.Fatalf("event %q\nwant prefix %q", e, want)
		}
	default:
		t.Fatal("no event says why the pods are missing")
	}
}
