package kueue_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/test/envtest"
	"tolokaforge.io/operator/test/kueueenv"
)

// BenchmarkCampaignKueueOverhead prints what admission through Kueue costs a
// Campaign: the same 200-Trial oracle Campaign, maxParallel 20, once without
// a queue label and once under a ClusterQueue with room for all of them, in
// one run against one control plane, one Kueue and one manager. The figure
// is the ratio of their rates (trials per second).
func BenchmarkCampaignKueueOverhead(b *testing.B) {
	why := envtest.AssetsMissing()
	if why == "" {
		why = kueueenv.Missing()
	}
	if why != "" {
		b.Skip(why)
	}
	logf.SetLogger(logr.Discard())
	const trials, parallel = 200, 20
	st, err := startStack(stackOptions{log: logr.Discard(), simWorkers: 16, maxTrials: parallel, probe: 200 * time.Millisecond, smallMCP: true})
	if err != nil {
		b.Fatal(err)
	}
	s = st
	defer func() {
		if err := st.stop(b.Failed()); err != nil {
			b.Error(err)
		}
	}()
	if err := st.Client.Create(bg, kueueenv.ResourceFlavor(flavor)); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		bare := runCampaign(b, st, fmt.Sprintf("bare-%d", i), trials, parallel, false)
		queued := runCampaign(b, st, fmt.Sprintf("queued-%d", i), trials, parallel, true)
		bareRate, queuedRate := float64(trials)/bare.Seconds(), float64(trials)/queued.Seconds()
		b.ReportMetric(bareRate, "bare_trials/s")
		b.ReportMetric(queuedRate, "kueue_trials/s")
		b.ReportMetric(queuedRate/bareRate, "kueue/bare_rate")
		fmt.Printf("%d-trial campaign, maxParallel %d: without Kueue %s (%.1f trials/s); under Kueue, ample quota, %s (%.1f trials/s); rate ratio %.2f\n",
			trials, parallel, bare.Round(time.Millisecond), bareRate, queued.Round(time.Millisecond), queuedRate, queuedRate/bareRate)
	}
}

// runCampaign runs one oracle Campaign of n Trials in a namespace of its own
// (under a ClusterQueue with room for all when queued) and returns how long
// it took from creation to every Trial completed.
func runCampaign(b *testing.B, st *stack, ns string, n, parallel int32, queued bool) time.Duration {
	b.Helper()
	if err := st.Client.Create(bg, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		b.Fatal(err)
	}
	if err := st.Client.Create(bg, envtest.ShopTask("shop", ns).Obj()); err != nil {
		b.Fatal(err)
	}
	c := envtest.MakeCampaign("eval", ns).Tasks("shop").TrialsPerTask(n).MaxParallel(parallel).Agent("oracle", envtest.Oracle()).Obj()
	c.Spec.UserSimulator = scriptedUser()
	if queued {
		if err := st.Client.Create(bg, kueueenv.ClusterQueue("cq-"+ns, flavor, quotaFor(int64(n)))); err != nil {
			b.Fatal(err)
		}
		if err := st.Client.Create(bg, kueueenv.LocalQueue(ns, "lq", "cq-"+ns)); err != nil {
			b.Fatal(err)
		}
		c.Labels = map[string]string{evalv1.LabelQueueName: "lq"}
	}
	start := time.Now()
	if err := st.Client.Create(bg, c); err != nil {
		b.Fatal(err)
	}
	deadline := start.Add(15 * time.Minute)
	for {
		got := &evalv1.Campaign{}
		if err := st.Client.Get(bg, types.NamespacedName{Namespace: ns, Name: "eval"}, got); err != nil {
			b.Fatal(err)
		}
		cnt := got.Status.Counts
		if cnt.Passed+cnt.Failed+cnt.InfraFailed+cnt.Invalid >= n || time.Now().After(deadline) {
			if cnt.Passed != n {
				b.Fatalf("campaign %s: counts %+v, want %d passed", ns, cnt, n)
			}
			return time.Since(start)
		}
		if os.Getenv("BENCH_VERBOSE") != "" {
			fmt.Printf("%s: %+v\n", ns, cnt)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
