package campaign_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/test/envtest"
)

// BenchmarkCampaign1000 runs a 1,000-trial campaign (the oracle on the shop
// task, maxParallel 100) through envtest with the in-process pod simulator,
// and, in the same run and stack as its baseline, the same number of bare
// oracle Trials of the same task: half before the campaign and half after,
// so a load drifting on the shared machine weighs on both sides alike; at
// most 100 unfinished at once, as maxParallel keeps the campaign (the next
// is created as one completes; all at once would start 2,000 pods whose
// attempts wait for the manager's 100 drivers).
//
// Reported: campaign_trial_ratio (campaign trials/s over bare trials/s; the
// issue's target is >= 0.9), trials_per_s and completion_s of the campaign,
// bare_trials_per_s; the manager's API writes per trial for each (every
// POST/PUT/PATCH/DELETE its rest.Config sent; the per-kind breakdown is
// logged) and its requests per trial; the process's CPU ms per trial and
// peak RSS (VmHWM: manager, pod simulator, the in-process runners and DB
// services; the shop MCP servers are child processes, counted in
// cpu_children_s) during the campaign (bare_rss_peak_MiB: up to the end of
// the first bare half; bare_cpu_ms_per_trial); campaign reconciles per
// trial; progress_writes_per_trial, the Trial status writes made for live
// progress alone (0 for Trials shorter than the 15 s progress interval);
// the resident set before the manager started
// (rss_baseline_MiB). As in BenchmarkOracleTrials, pods are probed every
// second after readiness and the tool servers are the small mcpstandin
// binary, not the re-executed test binary. BENCH_BARE_TRIALS=n runs n bare
// Trials instead (the ratio then compares rates of different sizes).
// BENCH_APISERVER_PPROF=FILE writes a CPU profile of kube-apiserver taken
// during the campaign (its /debug/pprof, through the admin rest config) to
// FILE: a third of the CPU a trial costs here is the API server's.
func BenchmarkCampaign1000(b *testing.B) {
	if why := envtest.AssetsMissing(); why != "" {
		b.Skip(why)
	}
	logf.SetLogger(logr.Discard())
	const trials, parallel = 1000, 100
	bare := int32(trials)
	if v := os.Getenv("BENCH_BARE_TRIALS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("BENCH_BARE_TRIALS=%q: want a positive integer", v)
		}
		bare = int32(n)
	}
	rssBase := procStatusMiB(b, "VmRSS")
	s, err := startStack(stackOptions{simWorkers: 16, maxTrials: parallel, statusInterval: time.Second, probeInterval: time.Second, smallMCP: true})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := s.stop(); err != nil {
			b.Error(err)
		}
	}()

	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// The bare Trials run in two halves around the campaign, so a load
		// that drifts during the run weighs on both sides alike.
		first := bare / 2
		w0 := s.api.Writes.Load()
		kinds0 := s.api.WritesByKind()
		bself0 := cpuSeconds(syscall.RUSAGE_SELF)
		bd1 := runBareTrials(b, s, first, parallel)
		bareCPU := cpuSeconds(syscall.RUSAGE_SELF) - bself0
		bareWrites := s.api.Writes.Load() - w0
		bareKinds := diffKinds(kinds0, s.api.WritesByKind())
		b.ReportMetric(procStatusMiB(b, "VmHWM"), "bare_rss_peak_MiB")
		// The campaign's own peak: clear_refs 5 resets VmHWM to the current
		// resident set.
		if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
			b.Logf("reset the peak RSS: %v; rss_peak_MiB covers the bare Trials too", err)
		}

		reads0, writes0 := s.api.Reads.Load(), s.api.Writes.Load()
		kinds0 = s.api.WritesByKind()
		rec0 := reconciles(b, "campaign")
		profiled := profileAPIServer(b, s.Config, os.Getenv("BENCH_APISERVER_PPROF"), 60*time.Second)
		self0, child0 := cpuSeconds(syscall.RUSAGE_SELF), cpuSeconds(syscall.RUSAGE_CHILDREN)
		progress0 := progressWrites(b)
		d := runBenchCampaign(b, s, trials, parallel, nil)
		progress := progressWrites(b) - progress0
		if err := <-profiled; err != nil {
			b.Error(err)
		}
		reads, writes := s.api.Reads.Load()-reads0, s.api.Writes.Load()-writes0
		cpu, children := cpuSeconds(syscall.RUSAGE_SELF)-self0, cpuSeconds(syscall.RUSAGE_CHILDREN)-child0
		campaignReconciles := reconciles(b, "campaign") - rec0
		logWrites(b, "campaign", diffKinds(kinds0, s.api.WritesByKind()), trials)
		logLatencies(b)
		peak := procStatusMiB(b, "VmHWM")

		w0, kinds0, bself0 = s.api.Writes.Load(), s.api.WritesByKind(), cpuSeconds(syscall.RUSAGE_SELF)
		bd2 := runBareTrials(b, s, bare-first, parallel)
		bareCPU += cpuSeconds(syscall.RUSAGE_SELF) - bself0
		bareWrites += s.api.Writes.Load() - w0
		for k, v := range diffKinds(kinds0, s.api.WritesByKind()) {
			bareKinds[k] += v
		}
		logWrites(b, "bare Trials", bareKinds, float64(bare))
		bareRate := float64(bare) / (bd1 + bd2).Seconds()
		rate := trials / d.Seconds()
		b.Logf("bare Trials: %d at %.2f/s before the campaign, %d at %.2f/s after", first, float64(first)/bd1.Seconds(), bare-first, float64(bare-first)/bd2.Seconds())
		b.ReportMetric(d.Seconds(), "completion_s")
		b.ReportMetric(rate, "trials_per_s")
		b.ReportMetric(rate/bareRate, "campaign_trial_ratio")
		b.ReportMetric(bareRate, "bare_trials_per_s")
		b.ReportMetric(float64(bare), "bare_trials")
		b.ReportMetric(float64(bareWrites)/float64(bare), "bare_api_writes_per_trial")
		b.ReportMetric(bareCPU/float64(bare)*1000, "bare_cpu_ms_per_trial")
		b.ReportMetric(peak, "rss_peak_MiB")
		b.ReportMetric(float64(reads+writes)/trials, "api_requests_per_trial")
		b.ReportMetric(float64(writes)/trials, "api_writes_per_trial")
		b.ReportMetric(cpu/trials*1000, "cpu_ms_per_trial")
		b.ReportMetric(children, "cpu_children_s")
		b.ReportMetric(campaignReconciles/trials, "campaign_reconciles_per_trial")
		b.ReportMetric(progress/trials, "progress_writes_per_trial")
	}
	b.StopTimer()
	b.ReportMetric(rssBase, "rss_baseline_MiB")
}

// BenchmarkCampaignSlots runs the same oracle campaign (the shop task,
// BENCH_SLOTS_TRIALS Trials, default 40; maxParallel 10) twice in one
// stack: on per-attempt pods, then on warm slots (docs/warm-slots.md), and
// reports for each the manager's API writes and events per Trial, the pod
// simulator's status writes per Trial (what kubelet would write) and
// Trials/s. Issue 36's goal for slots: <= 8 API writes and <= 3 events per
// Trial.
func BenchmarkCampaignSlots(b *testing.B) {
	if why := envtest.AssetsMissing(); why != "" {
		b.Skip(why)
	}
	logf.SetLogger(logr.Discard())
	n, parallel := int32(40), int32(10)
	if v := os.Getenv("BENCH_SLOTS_TRIALS"); v != "" {
		m, err := strconv.Atoi(v)
		if err != nil || m < 1 || m > 1000 {
			b.Fatalf("BENCH_SLOTS_TRIALS=%q: want 1 to 1000", v)
		}
		n = int32(m)
	}
	s, err := startStack(stackOptions{simWorkers: 8, maxTrials: int(parallel), probeInterval: time.Second, smallMCP: true})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := s.stop(); err != nil {
			b.Error(err)
		}
	}()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, mode := range []string{"pods", "slots"} {
			slots := evalv1.SlotsDisabled
			if mode == "slots" {
				slots = evalv1.SlotsEnabled
			}
			mutate := func(c *evalv1.Campaign) { c.Spec.Slots = &evalv1.SlotPolicy{Mode: slots} }
			kinds0, sim0 := s.api.WritesByKind(), s.Sim.StatusWrites()
			d := runBenchCampaignWith(b, s, n, parallel, nil, mutate)
			kinds := diffKinds(kinds0, s.api.WritesByKind())
			var writes, events int64
			for k, v := range kinds {
				writes += v
				if strings.HasSuffix(k, " events") {
					events += v
				}
			}
			logWrites(b, mode, kinds, float64(n))
			b.ReportMetric(float64(writes)/float64(n), mode+"_api_writes_per_trial")
			b.ReportMetric(float64(events)/float64(n), mode+"_events_per_trial")
			b.ReportMetric(float64(s.Sim.StatusWrites()-sim0)/float64(n), mode+"_pod_status_writes_per_trial")
			b.ReportMetric(float64(n)/d.Seconds(), mode+"_trials_per_s")
		}
	}
}

// profileAPIServer starts a CPU profile of the API server for d, written to
// path; the channel gets its outcome. No path: nothing, at once.
func profileAPIServer(b *testing.B, cfg *rest.Config, path string, d time.Duration) <-chan error {
	b.Helper()
	done := make(chan error, 1)
	if path == "" {
		done <- nil
		return done
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		url := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", strings.TrimSuffix(cfg.Host, "/"), int(d.Seconds()))
		resp, err := hc.Get(url)
		if err != nil {
			done <- fmt.Errorf("profile kube-apiserver: %w", err)
			return
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("%s: %s", resp.Status, body)
		}
		if err == nil {
			err = os.WriteFile(path, body, 0o644)
		}
		if err != nil {
			done <- fmt.Errorf("profile kube-apiserver: %w", err)
			return
		}
		b.Logf("kube-apiserver CPU profile (%s during the campaign): %s", d, path)
		done <- nil
	}()
	return done
}

// logLatencies logs the mean of the latency histograms that say where a
// trial's wall time goes (every run so far: bare Trials and campaign):
// controller-runtime's reconcile and workqueue times per controller and the
// pool's registration and grading.
func logLatencies(b *testing.B) {
	b.Helper()
	mfs, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		b.Fatal(err)
	}
	var lines []string
	for _, mf := range mfs {
		switch mf.GetName() {
		case "controller_runtime_reconcile_time_seconds", "workqueue_queue_duration_seconds", "workqueue_work_duration_seconds",
			"tolokaforge_registration_duration_seconds", "tolokaforge_grading_duration_seconds":
		default:
			continue
		}
		for _, m := range mf.GetMetric() {
			h := m.GetHistogram()
			if h.GetSampleCount() == 0 {
				continue
			}
			var who []string
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" || l.GetName() == "name" {
					who = append(who, l.GetValue())
				}
			}
			lines = append(lines, fmt.Sprintf("%s%v: n=%d mean=%.1fms", mf.GetName(), who, h.GetSampleCount(), h.GetSampleSum()/float64(h.GetSampleCount())*1000))
		}
	}
	sort.Strings(lines)
	b.Logf("latencies:\n  %s", strings.Join(lines, "\n  "))
}

// reconciles is controller-runtime's count of the named controller's
// reconciles so far, whatever their result.
func reconciles(b *testing.B, controller string) float64 {
	b.Helper()
	mfs, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		b.Fatal(err)
	}
	var n float64
	for _, mf := range mfs {
		if mf.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == controller {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return n
}

// BenchmarkCampaignScale runs one 10,000-trial oracle campaign (the shop
// task under 10 names, 1,000 trials each; maxParallel 100) and prints the resident set at every 1,000 trials finished and the
// growth over the previous 1,000. It runs only with BENCH_SCALE=1 (make
// bench-scale): it takes most of an hour on two cores.
// BENCH_HEAP_PPROF=PREFIX writes heap profiles (after a GC) to
// PREFIX-1000.pprof at the first 1,000 trials and PREFIX-end.pprof once
// the campaign has completed, with every Trial still there; pprof
// -diff_base says what the growth is made of.
func BenchmarkCampaignScale(b *testing.B) {
	if os.Getenv("BENCH_SCALE") == "" {
		b.Skip("set BENCH_SCALE=1 (make bench-scale) to run the 10,000-trial campaign")
	}
	if why := envtest.AssetsMissing(); why != "" {
		b.Skip(why)
	}
	logf.SetLogger(logr.Discard())
	const trials, parallel, step = 10000, 100, 1000
	s, err := startStack(stackOptions{simWorkers: 16, maxTrials: parallel, statusInterval: time.Second, probeInterval: time.Second, smallMCP: true})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := s.stop(); err != nil {
			b.Error(err)
		}
	}()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rss0 := procStatusMiB(b, "VmRSS")
		fmt.Printf("rss at 0 trials: %.1f MiB\n", rss0)
		prev, next := rss0, int32(step)
		var growth []float64
		w0 := s.api.Writes.Load()
		d := runBenchCampaign(b, s, trials, parallel, func(done int32) {
			for done >= next {
				if prefix := os.Getenv("BENCH_HEAP_PPROF"); prefix != "" && next == step {
					writeHeapProfile(b, fmt.Sprintf("%s-%d.pprof", prefix, step))
				}
				rss := procStatusMiB(b, "VmRSS")
				fmt.Printf("rss at %d trials: %.1f MiB (%+.1f MiB over the last %d)\n", next, rss, rss-prev, step)
				growth = append(growth, rss-prev)
				prev, next = rss, next+step
			}
		})
		if prefix := os.Getenv("BENCH_HEAP_PPROF"); prefix != "" {
			writeHeapProfile(b, prefix+"-end.pprof")
		}
		b.ReportMetric(trials/d.Seconds(), "trials_per_s")
		b.ReportMetric(float64(s.api.Writes.Load()-w0)/trials, "api_writes_per_trial")
		b.ReportMetric((prev-rss0)/float64(len(growth)), "rss_growth_MiB_per_1000")
		if len(growth) > 1 {
			// The first thousand fills the caches; the rest is the leak rate.
			b.ReportMetric((prev-rss0-growth[0])/float64(len(growth)-1), "rss_growth_MiB_per_1000_after_first")
		}
	}
	b.StopTimer()
	b.ReportMetric(procStatusMiB(b, "VmHWM"), "rss_peak_MiB")
}

// writeHeapProfile writes the in-use heap, after a collection, to path.
func writeHeapProfile(b *testing.B, path string) {
	b.Helper()
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Fatal(err)
	}
	b.Logf("heap profile with every Trial still there: %s", path)
}

// diffKinds is after - before, per kind.
func diffKinds(before, after map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// logWrites logs writes per trial by kind.
func logWrites(b *testing.B, what string, kinds map[string]int64, trials float64) {
	b.Helper()
	var parts []string
	for k, v := range kinds {
		parts = append(parts, fmt.Sprintf("%s=%.2f", k, float64(v)/trials))
	}
	sort.Strings(parts)
	b.Logf("%s: API writes per trial: %s", what, strings.Join(parts, " "))
}

// runBareTrials runs n oracle Trials of the shop task (no campaign), at
// most parallel of them unfinished at once, as the campaign's maxParallel
// does (a Trial is created as another completes), and returns the time
// until the last completed; every one must pass.
func runBareTrials(b *testing.B, s *stack, n, parallel int32) time.Duration {
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
	var list evalv1.TrialList
	if err := s.Client.List(bg, &list, client.InNamespace(ns)); err != nil {
		b.Fatal(err)
	}
	rv := list.ResourceVersion

	start := time.Now()
	work := make(chan int32, n)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range work {
				tr := envtest.MakeTrial(fmt.Sprintf("t%05d", i), ns).Task("shop").Agent(envtest.Oracle()).Retry(2, 100*time.Millisecond).Obj()
				if err := s.Client.Create(bg, tr); err != nil {
					errs <- err
				}
			}
		})
	}
	defer func() {
		close(work)
		wg.Wait()
	}()
	var created int32
	for ; created < min(parallel, n); created++ {
		work <- created
	}
	done := map[string]bool{}
	// seen records a Trial's state; a completion frees a slot for the next.
	seen := func(t *evalv1.Trial) {
		c := meta.FindStatusCondition(t.Status.Conditions, evalv1.TrialCompleted)
		if c == nil || c.Status != metav1.ConditionTrue || done[t.Name] {
			return
		}
		if c.Reason != "Passed" {
			b.Fatalf("trial %s ended %s: %s", t.Name, c.Reason, c.Message)
		}
		done[t.Name] = true
		if created < n {
			work <- created
			created++
		}
	}
	deadline := time.After(30 * time.Minute)
	for int32(len(done)) < n {
		// A watch, not polling; the API server may close a watch (a slow
		// reader), so it is reopened after a list catches up.
		w, err := s.Client.Watch(bg, &evalv1.TrialList{}, client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
		if err != nil {
			b.Fatal(err)
		}
	events:
		for int32(len(done)) < n {
			select {
			case err := <-errs:
				w.Stop()
				b.Fatal(err)
			case ev, ok := <-w.ResultChan():
				if !ok {
					break events
				}
				if t, isTrial := ev.Object.(*evalv1.Trial); isTrial {
					rv = t.ResourceVersion
					seen(t)
				}
			case <-deadline:
				w.Stop()
				b.Fatalf("%d of %d bare trials completed in 30 minutes", len(done), n)
			}
		}
		w.Stop()
		if int32(len(done)) < n {
			var list evalv1.TrialList
			if err := s.Client.List(bg, &list, client.InNamespace(ns)); err != nil {
				b.Fatal(err)
			}
			for i := range list.Items {
				seen(&list.Items[i])
			}
			rv = list.ResourceVersion
		}
	}
	return time.Since(start)
}

// runBenchCampaign runs an oracle campaign of n trials of the shop task and
// returns the time from its creation to its Completed condition. Above
// 1,000 trials (the most trialsPerTask allows) the shop task is there
// under n/1,000 names, 1,000 trials each.
// progress, if set, is called with the number of finished Trials at every
// poll.
func runBenchCampaign(b *testing.B, s *stack, n, parallel int32, progress func(finished int32)) time.Duration {
	b.Helper()
	// Per-attempt pods, as the bare Trials it is compared with (slots are
	// BenchmarkCampaignSlots'): the difference is the Campaign controller's.
	return runBenchCampaignWith(b, s, n, parallel, progress, func(c *evalv1.Campaign) {
		c.Spec.Slots = &evalv1.SlotPolicy{Mode: evalv1.SlotsDisabled}
	})
}

// runBenchCampaignWith is runBenchCampaign with the Campaign adjusted by
// mutate before it is created.
func runBenchCampaignWith(b *testing.B, s *stack, n, parallel int32, progress func(finished int32), mutate func(*evalv1.Campaign)) time.Duration {
	b.Helper()
	ns, err := s.namespace(bg)
	if err != nil {
		b.Fatal(err)
	}
	tasks, k := int32(1), n
	if n > 1000 {
		if n%1000 != 0 {
			b.Fatalf("a campaign of %d trials: above 1,000 it must be a multiple of 1,000", n)
		}
		tasks, k = n/1000, 1000
	}
	var names []string
	for i := range tasks {
		name := "shop"
		if tasks > 1 {
			name = fmt.Sprintf("shop-%d", i)
		}
		task, err := buildShopTask(ns, name, "bench")
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Client.Create(bg, task); err != nil {
			b.Fatal(err)
		}
		names = append(names, name)
	}
	c := newCampaign(ns, "bench", k, parallel, names...).Agent("oracle", envtest.Oracle()).Obj()
	if mutate != nil {
		mutate(c)
	}
	start := time.Now()
	if err := s.Client.Create(bg, c); err != nil {
		b.Fatal(err)
	}
	deadline := start.Add(30*time.Minute + time.Duration(n)*300*time.Millisecond)
	for {
		cur := &evalv1.Campaign{}
		if err := s.Client.Get(bg, client.ObjectKeyFromObject(c), cur); err != nil {
			b.Fatal(err)
		}
		if progress != nil {
			c := cur.Status.Counts
			progress(c.Passed + c.Failed + c.InfraFailed + c.Invalid)
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
