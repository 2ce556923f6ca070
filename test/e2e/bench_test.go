package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/test/nodecluster"
)

// Sizes of the benchmark. The issue asks for a 100-Trial Campaign; here
// Trials run at about 0.3/s, so 100 plus the bare Trials take 8 minutes, and
// CI runs 40 (E2E_BENCH_TRIALS=100 runs the size). The bare Trials
// (two fifths as many) are created by this client keeping benchParallel in
// flight, the Campaign's maxParallel, so the two rates differ by what the
// Campaign controller costs, not by parallelism.
const (
	benchParallel    = 8
	managerNamespace = "tolokaforge-system"
)

var (
	benchCampaignTrials = 40
	benchBareTrials     = 16
)

// benchSizes reads E2E_BENCH_TRIALS, the Campaign's size.
func benchSizes() error {
	v := os.Getenv("E2E_BENCH_TRIALS")
	if v == "" {
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < benchParallel {
		return fmt.Errorf("E2E_BENCH_TRIALS=%q: want a whole number of Trials, at least %d", v, benchParallel)
	}
	benchCampaignTrials, benchBareTrials = n, max(benchParallel, n*2/5)
	return nil
}

// benchmarkSpecs registers the benchmark inside the suite's Ordered
// container (after the install and the namespace grant it needs): top-level
// containers are run in a random order.
func benchmarkSpecs() {
	It("measures the operator on real nodes: a Campaign against bare Trials", func() {
		Expect(benchSizes()).To(Succeed())
		ctx := context.Background()
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		Expect(err).NotTo(HaveOccurred())
		cs, err := kubernetes.NewForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		probe := newBenchProbe(cs)
		stop := make(chan struct{})
		defer close(stop)
		Expect(probe.start(ctx, stop)).To(Succeed())

		// Bare Trials first: the Campaign's finished Trials then cannot slow
		// the bare ones' lists, and the Campaign meets the same cluster state
		// the bare Trials left.
		var tmpl evalv1.Trial
		Expect(yaml.Unmarshal([]byte(sample("eval_v1alpha1_trial_oracle.yaml")), &tmpl)).To(Succeed())
		waitNoTrialPods(ctx)
		before := probe.snapshot(ctx)
		bareNames := runBareTrials(ctx, tmpl)
		bare := probe.phase(ctx, before, bareNames)

		// The same Campaign on per-Trial pods, then on warm slots.
		campaign := runBenchCampaign(ctx, probe, "bench", &evalv1.SlotPolicy{Mode: evalv1.SlotsDisabled})
		slotted := runBenchCampaign(ctx, probe, "bench-slots", &evalv1.SlotPolicy{Mode: evalv1.SlotsEnabled})

		table := benchTable(campaign, bare, probe.managerMemory()) + slotTable(slotted, campaign)
		GinkgoWriter.Print(table)
		if out := os.Getenv("E2E_BENCH_OUT"); out != "" {
			Expect(os.WriteFile(out, []byte(table), 0o644)).To(Succeed())
		}
		js := slotBenchJSON(slotted, campaign)
		GinkgoWriter.Printf("%s\n", js)
		if out := os.Getenv("E2E_BENCH_JSON"); out != "" {
			Expect(os.WriteFile(out, js, 0o644)).To(Succeed())
		}
		// The figures must have been measured, not defaulted: a probe that
		// found no cgroup or no process would print zeros.
		// One pod per role per attempt: a retried attempt adds pods.
		Expect(len(campaign.podReady[evalv1.RoleRunner])).To(BeNumerically(">=", benchCampaignTrials))
		Expect(len(campaign.podReady[evalv1.RoleDBService])).To(BeNumerically(">=", benchCampaignTrials))
		Expect(campaign.cpu["manager"]).To(BeNumerically(">", 0))
		Expect(campaign.cpu["runner+dbservice pods"]).To(BeNumerically(">", 0))
		Expect(campaign.writes).To(BeNumerically(">", 0))
		Expect(slotted.podReady[slotRole]).NotTo(BeEmpty(), "no slot pod was seen Ready")
		Expect(len(slotted.podReady[slotRole])).To(BeNumerically("<=", benchParallel), "more slot pods than maxParallel")
		Expect(slotted.start.count).To(BeNumerically(">=", benchCampaignTrials), "attempt starts the manager timed")
		Expect(campaign.start.count).To(BeNumerically(">=", benchCampaignTrials), "attempt starts the manager timed")
		// What slots are for: fewer writes per Trial than pods of its own.
		Expect(slotted.writes / float64(slotted.trials)).To(BeNumerically("<", campaign.writes/float64(campaign.trials)))
	})
}

// runBenchCampaign runs the benchmark's oracle Campaign named name (on
// slots when slots is set) and measures it.
func runBenchCampaign(ctx context.Context, probe *benchProbe, name string, slots *evalv1.SlotPolicy) benchPhase {
	GinkgoHelper()
	c := oracleCampaign(ns, name, int32(benchCampaignTrials), int32(benchParallel), slots, "shop-orders-02")
	// Each phase starts on a quiet node: the pods of the one before are
	// gone (their teardown is kubelet's and containerd's work, which would
	// be charged to this phase and slow its pods' start).
	waitNoTrialPods(ctx)
	before := probe.snapshot(ctx)
	Expect(k8s.Create(ctx, c)).To(Succeed())
	Eventually(func() string {
		var got evalv1.Campaign
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(c), &got); err != nil {
			return err.Error()
		}
		n := got.Status.Counts
		return fmt.Sprintf("passed=%d failed=%d infra=%d invalid=%d", n.Passed, n.Failed, n.InfraFailed, n.Invalid)
	}).WithTimeout(time.Duration(benchCampaignTrials) * 12 * time.Second).WithPolling(250 * time.Millisecond).
		Should(Equal(fmt.Sprintf("passed=%d failed=0 infra=0 invalid=0", benchCampaignTrials)))
	var trials evalv1.TrialList
	Expect(k8s.List(ctx, &trials, client.InNamespace(ns), client.MatchingLabels{evalv1.LabelCampaign: c.Name})).To(Succeed())
	Expect(trials.Items).To(HaveLen(benchCampaignTrials))
	names := make([]string, 0, len(trials.Items))
	for _, t := range trials.Items {
		names = append(names, t.Name)
	}
	ph := probe.phase(ctx, before, names)
	ph.campaign = name
	probe.slotPods(&ph, name)
	return ph
}

// runBareTrials creates benchBareTrials copies of the oracle sample, keeping
// benchParallel unfinished, and returns their names once all Passed.
func runBareTrials(ctx context.Context, tmpl evalv1.Trial) []string {
	GinkgoHelper()
	var names []string
	running := map[string]bool{}
	next := 0
	Eventually(func() error {
		for name := range running {
			var t evalv1.Trial
			if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &t); err != nil {
				return err
			}
			switch t.Status.Phase {
			case evalv1.PhasePassed:
				delete(running, name)
			case evalv1.PhaseFailed, evalv1.PhaseGradingFailed, evalv1.PhaseInfraFailed, evalv1.PhaseInvalid, evalv1.PhaseProtocolSkew:
				return StopTrying(fmt.Sprintf("bare Trial %s ended %s: %+v", name, t.Status.Phase, t.Status.Attempts))
			}
		}
		for next < benchBareTrials && len(running) < benchParallel {
			t := &evalv1.Trial{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-bare-%03d", next), Namespace: ns},
				Spec:       *tmpl.Spec.DeepCopy(),
			}
			t.Spec.TrialIndex = int32(next)
			if err := k8s.Create(ctx, t); err != nil {
				return StopTrying("create " + t.Name + ": " + err.Error())
			}
			running[t.Name] = true
			names = append(names, t.Name)
			next++
		}
		if len(running) > 0 {
			return fmt.Errorf("%d bare Trials unfinished", len(running))
		}
		return nil
	}).WithTimeout(time.Duration(benchBareTrials) * 12 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	return names
}

// benchProbe watches the trial namespace's pods (when each was first seen
// and first seen Ready), samples every pod cgroup's cpuacct.usage while it
// exists (a pod's cgroup is removed with it), and reads process and API
// server counters at phase boundaries.
type benchProbe struct {
	cs       *kubernetes.Clientset
	cpuRoot  string // cpuacct hierarchy's kubepods
	memRoot  string
	procs    map[string]nodecluster.Proc
	clockTck float64

	mu    sync.Mutex
	pods  map[types.UID]*benchPod
	usage map[types.UID]uint64 // last cpuacct.usage seen, ns
}

type benchPod struct {
	role, trial   string
	added, ready  time.Time
	managerPodUID bool
	// campaign and component are a slot pod's (it names no trial).
	campaign, component string
}

type benchSnap struct {
	at      time.Time
	ticks   map[string]uint64 // node process -> utime+stime
	usage   map[types.UID]uint64
	kubeAll uint64
	writes  map[string]float64 // resource -> POST/PUT/PATCH/DELETE
	starts  histogram          // the managers' tolokaforge_attempt_start_seconds
}

// benchPhase is one measured phase: the figures per Trial.
type benchPhase struct {
	trials    int
	wall      time.Duration
	podReady  map[string][]time.Duration // role -> create-to-Ready
	cpu       map[string]time.Duration   // what -> total over the phase
	writes    float64
	writesRes map[string]float64
	// campaign is the Campaign measured ("" for the bare Trials).
	campaign string
	// start is the phase's tolokaforge_attempt_start_seconds: from an
	// attempt's start in the manager to RegisterTrial answered.
	start histogram
}

func newBenchProbe(cs *kubernetes.Clientset) *benchProbe {
	p := &benchProbe{cs: cs, pods: map[types.UID]*benchPod{}, usage: map[types.UID]uint64{}, clockTck: 100}
	for _, d := range []string{"/sys/fs/cgroup/cpu,cpuacct/kubepods", "/sys/fs/cgroup/cpuacct/kubepods"} {
		if _, err := os.Stat(d); err == nil {
			p.cpuRoot = d
			break
		}
	}
	p.memRoot = "/sys/fs/cgroup/memory/kubepods"
	if out, err := exec.Command("getconf", "CLK_TCK").Output(); err == nil {
		if v, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64); err == nil && v > 0 {
			p.clockTck = v
		}
	}
	return p
}

func (p *benchProbe) start(ctx context.Context, stop chan struct{}) error {
	if p.cpuRoot == "" {
		return fmt.Errorf("no kubepods cpuacct cgroup under /sys/fs/cgroup (cgroup v1, cgroupfs driver expected)")
	}
	dir := os.Getenv("E2E_CLUSTER_DIR")
	if dir == "" {
		return fmt.Errorf("E2E_CLUSTER_DIR is not set: the benchmark reads the node processes' ids from the cluster's state.json")
	}
	st, err := nodecluster.LoadState(dir)
	if err != nil {
		return err
	}
	p.procs = map[string]nodecluster.Proc{}
	for _, pr := range st.Procs {
		p.procs[pr.Name] = pr
	}
	for _, name := range []string{"kube-apiserver", "kubelet", "containerd", "etcd"} {
		if _, ok := p.procs[name]; !ok {
			return fmt.Errorf("cluster state %s names no %s process", dir, name)
		}
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o interface{}) { p.observe(o) },
		UpdateFunc: func(_, o interface{}) { p.observe(o) },
	}
	for _, namespace := range []string{ns, managerNamespace} {
		f := informers.NewSharedInformerFactoryWithOptions(p.cs, 0, informers.WithNamespace(namespace))
		inf := f.Core().V1().Pods().Informer()
		if _, err := inf.AddEventHandler(handler); err != nil {
			return err
		}
		f.Start(stop)
		if !cache.WaitForCacheSync(stop, inf.HasSynced) {
			return fmt.Errorf("pod informer of %s did not sync", namespace)
		}
	}
	go func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				p.sample()
			}
		}
	}()
	return nil
}

func (p *benchProbe) observe(o interface{}) {
	pod, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	bp := p.pods[pod.UID]
	if bp == nil {
		bp = &benchPod{role: pod.Labels[evalv1.LabelRole], trial: pod.Labels[evalv1.LabelTrial], added: now,
			managerPodUID: pod.Namespace == managerNamespace,
			campaign:      pod.Labels[evalv1.LabelCampaign], component: pod.Labels[evalv1.LabelComponent]}
		p.pods[pod.UID] = bp
	}
	if bp.ready.IsZero() {
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				bp.ready = now
			}
		}
	}
}

// podCgroups maps each pod's UID to its cgroup directory under root
// (kubepods/pod<uid> for Guaranteed, kubepods/<qos>/pod<uid> otherwise).
func podCgroups(root string) map[types.UID]string {
	out := map[types.UID]string{}
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		for _, e := range ents {
			if !e.IsDir() {
				continue
			}
			if strings.HasPrefix(e.Name(), "pod") {
				out[types.UID(strings.TrimPrefix(e.Name(), "pod"))] = filepath.Join(dir, e.Name())
			} else if depth == 0 {
				walk(filepath.Join(dir, e.Name()), 1)
			}
		}
	}
	walk(root, 0)
	return out
}

func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
}

func (p *benchProbe) sample() {
	for uid, dir := range podCgroups(p.cpuRoot) {
		v, err := readUint(filepath.Join(dir, "cpuacct.usage"))
		if err != nil {
			continue
		}
		p.mu.Lock()
		if v > p.usage[uid] {
			p.usage[uid] = v
		}
		p.mu.Unlock()
	}
}

// procTicks is utime+stime of pid (fields 14 and 15 of /proc/PID/stat,
// counted after the parenthesised command name, which may hold spaces).
func procTicks(pr nodecluster.Proc) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pr.PID))
	if err != nil {
		return 0, fmt.Errorf("%s (pid %d): %w", pr.Name, pr.PID, err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("%s (pid %d): short /proc stat %q", pr.Name, pr.PID, s)
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("%s (pid %d): bad utime/stime in %q", pr.Name, pr.PID, s)
	}
	return u + st, nil
}

// apiWrites sums apiserver_request_total of the writing verbs by resource.
func (p *benchProbe) apiWrites(ctx context.Context) map[string]float64 {
	GinkgoHelper()
	raw, err := p.cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	Expect(err).NotTo(HaveOccurred(), "GET /metrics of the API server")
	return parseAPIWrites(string(raw))
}

func parseAPIWrites(metrics string) map[string]float64 {
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(metrics))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		end := strings.LastIndexByte(line, '}')
		if end < 0 {
			continue
		}
		labels := map[string]string{}
		for _, kv := range strings.Split(line[len("apiserver_request_total{"):end], ",") {
			k, v, ok := strings.Cut(kv, "=")
			if ok {
				labels[k] = strings.Trim(v, `"`)
			}
		}
		switch labels["verb"] {
		case "POST", "PUT", "PATCH", "DELETE":
		default:
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(line[end+1:]), 64)
		if err != nil {
			continue
		}
		res := labels["resource"]
		if labels["subresource"] != "" {
			res += "/" + labels["subresource"]
		}
		out[res] += v
	}
	return out
}

func (p *benchProbe) snapshot(ctx context.Context) benchSnap {
	GinkgoHelper()
	p.sample()
	s := benchSnap{at: time.Now(), ticks: map[string]uint64{}, usage: map[types.UID]uint64{}}
	for name, pr := range p.procs {
		t, err := procTicks(pr)
		Expect(err).NotTo(HaveOccurred())
		s.ticks[name] = t
	}
	p.mu.Lock()
	for uid, v := range p.usage {
		s.usage[uid] = v
	}
	p.mu.Unlock()
	all, err := readUint(filepath.Join(p.cpuRoot, "cpuacct.usage"))
	Expect(err).NotTo(HaveOccurred())
	s.kubeAll = all
	s.writes = p.apiWrites(ctx)
	s.starts = p.attemptStarts(ctx)
	return s
}

// phase closes a phase begun at before, whose Trials are trials.
func (p *benchProbe) phase(ctx context.Context, before benchSnap, trials []string) benchPhase {
	GinkgoHelper()
	after := p.snapshot(ctx)
	in := map[string]bool{}
	for _, t := range trials {
		in[t] = true
	}
	ph := benchPhase{trials: len(trials), wall: after.at.Sub(before.at), podReady: map[string][]time.Duration{},
		cpu: map[string]time.Duration{}, writesRes: map[string]float64{}}
	for name := range p.procs {
		ph.cpu[name] = time.Duration(float64(after.ticks[name]-before.ticks[name]) / p.clockTck * float64(time.Second))
	}
	p.mu.Lock()
	var manager uint64
	for uid, bp := range p.pods {
		switch {
		case bp.managerPodUID:
			manager += after.usage[uid] - before.usage[uid]
		case in[bp.trial]:
			ph.cpu[bp.role+" pods"] += time.Duration(after.usage[uid])
			if !bp.ready.IsZero() {
				ph.podReady[bp.role] = append(ph.podReady[bp.role], bp.ready.Sub(bp.added))
			}
		}
	}
	p.mu.Unlock()
	ph.cpu["manager"] = time.Duration(manager)
	// Exact for the pods together: a cgroup v1 cpuacct parent is charged
	// with its children's time, also after they are removed, whereas the
	// per-role figures lose what a pod used after its last 200 ms sample.
	ph.cpu["runner+dbservice pods"] = time.Duration(after.kubeAll-before.kubeAll) - time.Duration(manager)
	for res, v := range after.writes {
		if d := v - before.writes[res]; d > 0 {
			ph.writesRes[res] = d
			ph.writes += d
		}
	}
	ph.start = after.starts.minus(before.starts)
	return ph
}

// managerMemory is each manager pod's memory cgroup at the end: the
// working set (usage less inactive file cache, what kubelet evicts on) and RSS.
func (p *benchProbe) managerMemory() []string {
	var out []string
	cgs := podCgroups(p.memRoot)
	p.mu.Lock()
	defer p.mu.Unlock()
	for uid, bp := range p.pods {
		if !bp.managerPodUID {
			continue
		}
		dir, ok := cgs[uid]
		if !ok {
			continue // a manager pod deleted earlier in the suite
		}
		usage, err := readUint(filepath.Join(dir, "memory.usage_in_bytes"))
		if err != nil {
			continue
		}
		stat := map[string]uint64{}
		b, _ := os.ReadFile(filepath.Join(dir, "memory.stat"))
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, " "); ok {
				stat[k], _ = strconv.ParseUint(v, 10, 64)
			}
		}
		ws := usage - min(usage, stat["total_inactive_file"])
		out = append(out, fmt.Sprintf("pod %s: working set %.1f MiB, rss %.1f MiB", uid, float64(ws)/(1<<20), float64(stat["total_rss"])/(1<<20)))
	}
	sort.Strings(out)
	return out
}

func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(q*float64(len(s))+0.5) - 1
	return s[max(0, min(i, len(s)-1))]
}

func benchTable(c, b benchPhase, mem []string) string {
	var sb strings.Builder
	w := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	rate := func(p benchPhase) float64 { return float64(p.trials) / p.wall.Seconds() }
	fmt.Fprintf(w, "\tCampaign (%d Trials)\tbare Trials (%d)\tCampaign / bare\t\n", c.trials, b.trials)
	fmt.Fprintf(w, "Trials/s\t%.2f\t%.2f\t%.2f\t\n", rate(c), rate(b), rate(c)/rate(b))
	fmt.Fprintf(w, "wall\t%s\t%s\t\t\n", c.wall.Round(100*time.Millisecond), b.wall.Round(100*time.Millisecond))
	for _, role := range []string{evalv1.RoleRunner, evalv1.RoleDBService} {
		// More pods than Trials: attempts that ended InfraFailed and were retried.
		fmt.Fprintf(w, "%s pods Ready\t%d\t%d\t\t\n", role, len(c.podReady[role]), len(b.podReady[role]))
		for _, q := range []float64{0.5, 0.95} {
			fmt.Fprintf(w, "%s pod create-to-Ready p%.0f\t%s\t%s\t\t\n", role, q*100,
				percentile(c.podReady[role], q).Round(time.Millisecond), percentile(b.podReady[role], q).Round(time.Millisecond))
		}
	}
	perTrial := func(p benchPhase, what string) float64 {
		return float64(p.cpu[what].Milliseconds()) / float64(p.trials)
	}
	for _, what := range []string{"manager", "runner pods", "dbservice pods", "runner+dbservice pods",
		"kube-apiserver", "etcd", "kubelet", "containerd", "kube-controller-manager", "kube-scheduler", "kube-proxy", "kube-router"} {
		cv, bv := perTrial(c, what), perTrial(b, what)
		ratio := ""
		if bv > 0 {
			ratio = fmt.Sprintf("%.2f", cv/bv)
		}
		fmt.Fprintf(w, "CPU ms/Trial %s\t%.0f\t%.0f\t%s\t\n", what, cv, bv, ratio)
	}
	fmt.Fprintf(w, "API writes/Trial\t%.1f\t%.1f\t%.2f\t\n", c.writes/float64(c.trials), b.writes/float64(b.trials),
		(c.writes/float64(c.trials))/(b.writes/float64(b.trials)))
	type rv struct {
		res string
		v   float64
	}
	var top []rv
	for r, v := range c.writesRes {
		top = append(top, rv{r, v})
	}
	sort.Slice(top, func(i, j int) bool { return top[i].v > top[j].v })
	for _, t := range top[:min(8, len(top))] {
		fmt.Fprintf(w, "  writes/Trial %s\t%.1f\t%.1f\t\t\n", t.res, t.v/float64(c.trials), b.writesRes[t.res]/float64(b.trials))
	}
	_ = w.Flush()
	sb.WriteString("manager memory at the end:\n")
	for _, m := range mem {
		sb.WriteString("  " + m + "\n")
	}
	return "\nbenchmark on real nodes (single node, 2 cores; CPU from cgroup cpuacct and /proc/PID/stat; writes: apiserver_request_total POST/PUT/PATCH/DELETE)\n" + sb.String()
}
