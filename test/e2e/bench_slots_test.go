package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// slotRole is the benchmark's name for slot pods (they carry no role label:
// one pod holds the runner and the DB service).
const slotRole = "slot"

// attemptStartMetric is the manager's histogram of attempt starts.
const attemptStartMetric = "tolokaforge_attempt_start_seconds"

// histogram is a cumulative Prometheus histogram: upper bounds and the
// count at or below each, summed over the manager pods.
type histogram struct {
	bounds []float64
	cum    []float64
	count  float64
}

func (h histogram) minus(o histogram) histogram {
	out := histogram{bounds: h.bounds, cum: make([]float64, len(h.cum)), count: h.count - o.count}
	for i := range h.cum {
		out.cum[i] = h.cum[i]
		if i < len(o.cum) {
			out.cum[i] -= o.cum[i]
		}
	}
	return out
}

// quantile interpolates linearly within the bucket holding q of the
// observations, as PromQL's histogram_quantile does; NaN without any.
func (h histogram) quantile(q float64) float64 {
	if h.count <= 0 {
		return math.NaN()
	}
	rank := q * h.count
	lower, below := 0.0, 0.0
	for i, b := range h.bounds {
		if h.cum[i] >= rank {
			if math.IsInf(b, 1) {
				return lower
			}
			in := h.cum[i] - below
			if in <= 0 {
				return b
			}
			return lower + (b-lower)*(rank-below)/in
		}
		lower, below = b, h.cum[i]
	}
	return lower
}

// parseHistogram sums the named histogram over every exposition in texts.
func parseHistogram(name string, texts ...string) (histogram, error) {
	var h histogram
	byBound := map[float64]float64{}
	for _, text := range texts {
		parser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
		if err != nil {
			return h, fmt.Errorf("parse metrics: %w", err)
		}
		f, ok := fams[name]
		if !ok || f.GetType() != dto.MetricType_HISTOGRAM {
			continue
		}
		for _, m := range f.GetMetric() {
			hm := m.GetHistogram()
			h.count += float64(hm.GetSampleCount())
			for _, b := range hm.GetBucket() {
				byBound[b.GetUpperBound()] += float64(b.GetCumulativeCount())
			}
			byBound[math.Inf(1)] += float64(hm.GetSampleCount())
		}
	}
	for b := range byBound {
		h.bounds = append(h.bounds, b)
	}
	sort.Float64s(h.bounds)
	for _, b := range h.bounds {
		h.cum = append(h.cum, byBound[b])
	}
	return h, nil
}

// attemptStarts reads the manager pods' attempt-start histograms through
// the API server's pod proxy (the metrics port is plain HTTP in the
// cluster). A manager pod that does not answer is left out: the benchmark
// runs after the failover specs, with both replicas up.
func (p *benchProbe) attemptStarts(ctx context.Context) histogram {
	GinkgoHelper()
	pods, err := p.cs.CoreV1().Pods(managerNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: evalv1.LabelComponent + "=manager"})
	Expect(err).NotTo(HaveOccurred())
	var texts []string
	for _, pod := range pods.Items {
		port := ""
		for _, c := range pod.Spec.Containers {
			for _, cp := range c.Ports {
				if cp.Name == "metrics" {
					port = strconv.Itoa(int(cp.ContainerPort))
				}
			}
		}
		if port == "" || pod.Status.PodIP == "" || pod.DeletionTimestamp != nil {
			continue
		}
		raw, err := p.cs.CoreV1().Pods(managerNamespace).ProxyGet("http", pod.Name, port, "/metrics", nil).DoRaw(ctx)
		if err != nil {
			GinkgoWriter.Printf("metrics of manager pod %s: %v\n", pod.Name, err)
			continue
		}
		texts = append(texts, string(raw))
	}
	h, err := parseHistogram(attemptStartMetric, texts...)
	Expect(err).NotTo(HaveOccurred())
	return h
}

// slotPods adds the Campaign's slot pods' create-to-Ready times to ph.
func (p *benchProbe) slotPods(ph *benchPhase, campaign string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, bp := range p.pods {
		if bp.component == slotRole && bp.campaign == campaign && !bp.ready.IsZero() {
			ph.podReady[slotRole] = append(ph.podReady[slotRole], bp.ready.Sub(bp.added))
		}
	}
}

// The goals of issue 36 for slots against per-Trial pods in the same run.
const (
	goalRateRatio     = 3.0
	goalWritesPerTr   = 8.0
	goalEventsPerTr   = 3.0
	goalStartP50Slots = 0.5
)

// benchFigures is one placement's figures in bin/e2e-bench.json.
type benchFigures struct {
	Trials           int                `json:"trials"`
	MaxParallel      int                `json:"max_parallel"`
	WallS            float64            `json:"wall_s"`
	TrialsPerS       float64            `json:"trials_per_s"`
	APIWritesPerTr   float64            `json:"api_writes_per_trial"`
	EventsPerTrial   float64            `json:"events_per_trial"`
	StartP50S        float64            `json:"start_p50_s"`
	StartP95S        float64            `json:"start_p95_s"`
	PodsReady        int                `json:"pods_ready"`
	CPUMsPerTrial    map[string]float64 `json:"cpu_ms_per_trial"`
	WritesByResource map[string]float64 `json:"writes_per_trial_by_resource"`
}

func figures(ph benchPhase, pods int) benchFigures {
	n := float64(ph.trials)
	f := benchFigures{
		Trials: ph.trials, MaxParallel: benchParallel, WallS: round(ph.wall.Seconds(), 1),
		TrialsPerS: round(n/ph.wall.Seconds(), 3), APIWritesPerTr: round(ph.writes/n, 2),
		EventsPerTrial: round(ph.writesRes["events"]/n, 2),
		StartP50S:      round(ph.start.quantile(0.5), 3), StartP95S: round(ph.start.quantile(0.95), 3),
		PodsReady: pods, CPUMsPerTrial: map[string]float64{}, WritesByResource: map[string]float64{},
	}
	for _, what := range []string{"kube-apiserver", "etcd", "kubelet", "containerd", "kube-router", "manager"} {
		f.CPUMsPerTrial[what] = round(float64(ph.cpu[what].Milliseconds())/n, 1)
	}
	f.CPUMsPerTrial["trial_pods"] = round(float64(ph.cpu["runner+dbservice pods"].Milliseconds())/n, 1)
	for res, v := range ph.writesRes {
		f.WritesByResource[res] = round(v/n, 2)
	}
	return f
}

func round(v float64, places int) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return -1
	}
	p := math.Pow(10, float64(places))
	return math.Round(v*p) / p
}

// slotBenchJSON is bin/e2e-bench.json: the same Campaign on slots and on
// per-Trial pods, the goals and whether this run met them.
func slotBenchJSON(slots, pods benchPhase) []byte {
	s := figures(slots, len(slots.podReady[slotRole]))
	p := figures(pods, len(pods.podReady[evalv1.RoleRunner])+len(pods.podReady[evalv1.RoleDBService]))
	ratio := round(s.TrialsPerS/p.TrialsPerS, 2)
	out := map[string]any{
		"campaign":               fmt.Sprintf("%d oracle Trials of shop-orders-02, maxParallel %d (E2E_BENCH_TRIALS sets the size)", slots.trials, benchParallel),
		"slots":                  s,
		"pods":                   p,
		"slots_over_pods_rate":   ratio,
		"goals":                  map[string]float64{"slots_over_pods_rate_min": goalRateRatio, "api_writes_per_trial_max": goalWritesPerTr, "events_per_trial_max": goalEventsPerTr, "start_p50_s_max": goalStartP50Slots},
		"goals_met":              map[string]bool{"rate": ratio >= goalRateRatio, "api_writes": s.APIWritesPerTr <= goalWritesPerTr, "events": s.EventsPerTrial <= goalEventsPerTr, "start_p50": s.StartP50S >= 0 && s.StartP50S <= goalStartP50Slots},
		"start_is_measured_from": "an attempt's start in the manager (a new Trial's first reconcile) to RegisterTrial answered (" + attemptStartMetric + ", interpolated within its buckets)",
	}
	b, err := json.MarshalIndent(out, "", "  ")
	Expect(err).NotTo(HaveOccurred())
	return append(b, '\n')
}

// slotTable is the text benchmark's slots section.
func slotTable(s, p benchPhase) string {
	var sb strings.Builder
	w := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	rate := func(ph benchPhase) float64 { return float64(ph.trials) / ph.wall.Seconds() }
	per := func(ph benchPhase, v float64) float64 { return v / float64(ph.trials) }
	fmt.Fprintf(w, "\tslots (%d Trials)\tper-Trial pods (%d)\tslots / pods\t\n", s.trials, p.trials)
	fmt.Fprintf(w, "Trials/s\t%.2f\t%.2f\t%.2f\t\n", rate(s), rate(p), rate(s)/rate(p))
	fmt.Fprintf(w, "API writes/Trial\t%.1f\t%.1f\t%.2f\t\n", per(s, s.writes), per(p, p.writes), per(s, s.writes)/per(p, p.writes))
	fmt.Fprintf(w, "events/Trial\t%.1f\t%.1f\t\t\n", per(s, s.writesRes["events"]), per(p, p.writesRes["events"]))
	for _, q := range []float64{0.5, 0.95} {
		fmt.Fprintf(w, "start p%.0f (attempt start to registered)\t%s\t%s\t\t\n", q*100,
			secs(s.start.quantile(q)), secs(p.start.quantile(q)))
	}
	fmt.Fprintf(w, "pods Ready\t%d slot\t%d runner, %d DB\t\t\n", len(s.podReady[slotRole]),
		len(p.podReady[evalv1.RoleRunner]), len(p.podReady[evalv1.RoleDBService]))
	for _, what := range []string{"manager", "runner+dbservice pods", "kube-apiserver", "etcd", "kubelet", "containerd", "kube-router"} {
		sv, pv := float64(s.cpu[what].Milliseconds())/float64(s.trials), float64(p.cpu[what].Milliseconds())/float64(p.trials)
		ratio := ""
		if pv > 0 {
			ratio = fmt.Sprintf("%.2f", sv/pv)
		}
		fmt.Fprintf(w, "CPU ms/Trial %s\t%.0f\t%.0f\t%s\t\n", what, sv, pv, ratio)
	}
	_ = w.Flush()
	return "\nwarm slots against per-Trial pods (the same Campaign; bin/e2e-bench.json)\n" + sb.String()
}

func secs(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return (time.Duration(v * float64(time.Second))).Round(time.Millisecond).String()
}

// waitNoTrialPods waits until the namespace holds no Trial's pod and no
// slot pod.
func waitNoTrialPods(ctx context.Context) {
	GinkgoHelper()
	Eventually(func() []string {
		var left []string
		var pods corev1.PodList
		_ = k8s.List(ctx, &pods, client.InNamespace(ns))
		for _, p := range pods.Items {
			if p.Labels[evalv1.LabelTrial] != "" || p.Labels[evalv1.LabelSlotClass] != "" {
				left = append(left, p.Name)
			}
		}
		return left
	}).WithTimeout(3*time.Minute).WithPolling(time.Second).Should(BeEmpty(), "pods of the previous phase")
}
