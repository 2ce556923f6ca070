package kueueenv_test

import (
	"context"
	"os"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"tolokaforge.io/operator/test/envtest/controlplane"
	"tolokaforge.io/operator/test/kueueenv"
)

// TestKueueStarts: Kueue starts against envtest, its webhooks answer (a
// ClusterQueue is defaulted and validated through them) and its controllers
// run (the ClusterQueue turns Active).
func TestKueueStarts(t *testing.T) {
	why := kueueenv.Missing()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		why = "KUBEBUILDER_ASSETS is not set (export KUBEBUILDER_ASSETS=$(hack/build-envtest.sh))"
	}
	if why != "" {
		if os.Getenv("CI") != "" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	cp, err := controlplane.Start(controlplane.Options{CRDs: true, APIServerFlags: kueueenv.APIServerFlags})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	k, err := kueueenv.Start(ctx, cp.Environment, cp.Config, kueueenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kueue ready in %s", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kueue log tail:\n%s", k.LogTail(60))
		}
		if err := k.Stop(false); err != nil {
			t.Errorf("stop kueue: %v", err)
		}
	})

	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := kueue.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cp.Config, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, kueueenv.ResourceFlavor("default")); err != nil {
		t.Fatalf("create flavor: %v", err)
	}
	cq := kueueenv.ClusterQueue("cq", "default", kueueenv.Quota{CPU: "1", Memory: "1Gi", EphemeralStorage: "1Gi"})
	if err := c.Create(ctx, cq); err != nil {
		t.Fatalf("create cluster queue: %v", err)
	}
	if cq.Spec.QueueingStrategy != kueue.BestEffortFIFO {
		t.Errorf("queueingStrategy = %q: Kueue's defaulting webhook did not run", cq.Spec.QueueingStrategy)
	}
	bad := kueueenv.ClusterQueue("bad", "default", kueueenv.Quota{CPU: "1", Memory: "1Gi", EphemeralStorage: "1Gi"})
	bad.Spec.ResourceGroups[0].Flavors[0].Resources = bad.Spec.ResourceGroups[0].Flavors[0].Resources[:1]
	if err := c.Create(ctx, bad); err == nil {
		t.Error("a ClusterQueue whose flavor misses covered resources was accepted: Kueue's validating webhook did not run")
	}
	for {
		got := &kueue.ClusterQueue{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(cq), got); err != nil {
			t.Fatal(err)
		}
		if meta.IsStatusConditionTrue(got.Status.Conditions, kueue.ClusterQueueActive) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("ClusterQueue never Active: %+v", got.Status.Conditions)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
