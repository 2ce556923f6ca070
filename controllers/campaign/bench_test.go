package campaign_test

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/test/envtest"
)

// BenchmarkCampaign1000 runs a 1,000-trial campaign (the oracle on the shop
// task, maxParallel 100) through envtest with the in-process pod simulator
// and reports: time to completion and trials/s; the manager's API requests
// per trial (every request its rest.Config sent, reads and writes); the
// process's CPU seconds per trial and peak RSS (VmHWM: manager, pod
// simulator, the in-process runners and DB services; the shop MCP servers
// are child processes, counted in cpu_children_s). Baselines from the same
// run: a 20-trial campaign at maxParallel 20 (trials_per_s_ratio =
// 1000-trial throughput / 20-trial throughput) and the resident set before
// the manager started (rss_baseline_MiB).
func BenchmarkCampaign1000(b *testing.B) {
	if why := envtest.AssetsMissing(); why != "" {
		b.Skip(why)
	}
	logf.SetLogger(logr.Discard())
	const trials, parallel = 1000, 100
	rssBase := procStatusMiB(b, "VmRSS")
	s, err := startStack(stackOptions{simWorkers: 16, maxTrials: parallel, statusInterval: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := s.stop(); err != nil {
			b.Error(err)
		}
	}()
	base := runBenchCampaign(b, s, 20, 20)
	baseRate := 20 / base.Seconds()

	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		reads0, writes0 := s.api.Reads.Load(), s.api.Writes.Load()
		self0, child0 := cpuSeconds(syscall.RUSAGE_SELF), cpuSeconds(syscall.RUSAGE_CHILDREN)
		d := runBenchCampaign(b, s, trials, parallel)
		reads, writes := s.api.Reads.Load()-reads0, s.api.Writes.Load()-writes0
		rate := trials / d.Seconds()
		b.ReportMetric(d.Seconds(), "completion_s")
		b.ReportMetric(rate, "trials_per_s")
		b.ReportMetric(rate/baseRate, "trials_per_s_ratio")
		b.ReportMetric(baseRate, "baseline_trials_per_s")
		b.ReportMetric(float64(reads+writes)/trials, "api_requests_per_trial")
		b.ReportMetric(float64(writes)/trials, "api_writes_per_trial")
		b.ReportMetric((cpuSeconds(syscall.RUSAGE_SELF)-self0)/trials*1000, "cpu_ms_per_trial")
		b.ReportMetric(cpuSeconds(syscall.RUSAGE_CHILDREN)-child0, "cpu_children_s")
	}
	b.StopTimer()
	b.ReportMetric(procStatusMiB(b, "VmHWM"), "rss_peak_MiB")
	b.ReportMetric(rssBase, "rss_baseline_MiB")
}

// runBenchCampaign runs an oracle campaign of n trials of the shop task and
// returns the time from its creation to its Completed condition.
func runBenchCampaign(b *testing.B, s *stack, n, parallel int32) time.Duration {
	b.Helper()
	ns, err := s.namespace(bg)
	if err != nil {
		b.Fatal(err)
	}
	task, err := buildShopTask(ns, "shop", "bench")
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Client.Create(bg, task); err != nil {
		b.Fatal(err)
	}
	c := newCampaign(ns, "bench", n, parallel, "shop").Agent("oracle", envtest.Oracle()).Obj()
	start := time.Now()
	if err := s.Client.Create(bg, c); err != nil {
		b.Fatal(err)
	}
	deadline := start.Add(30 * time.Minute)
	for {
		cur := &evalv1.Campaign{}
		if err := s.Client.Get(bg, client.ObjectKeyFromObject(c), cur); err != nil {
			b.Fatal(err)
		}
		if cond := meta.FindStatusCondition(cur.Status.Conditions, evalv1.CampaignCompleted); cond != nil && cond.Status == metav1.ConditionTrue {
			d := time.Since(start)
			if cur.Status.Counts.Passed != n || cur.Status.Counts.Total != n {
				b.Fatalf("campaign of %d completed with %+v", n, cur.Status.Counts)
			}
			return d
		}
		if time.Now().After(deadline) {
			b.Fatalf("campaign of %d not completed: %s", n, cur.Status.Progress)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func cpuSeconds(who int) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// procStatusMiB reads a kB field of /proc/self/status in MiB.
func procStatusMiB(b *testing.B, field string) float64 {
	b.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb / 1024
		}
	}
	b.Fatal(fmt.Errorf("%s not in /proc/self/status", field))
	return 0
}
