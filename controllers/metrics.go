package controllers

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"tolokaforge.io/operator/api/llm"
)

// Metrics are the operator's own series beside controller-runtime's, on the
// same registry (served on --metrics-bind-address).
type Metrics struct {
	TrialsStarted   prometheus.Counter
	TrialsCompleted *prometheus.CounterVec // reason
	Attempts        *prometheus.CounterVec // outcome, reason
	PoolCapacity    prometheus.Gauge
	PoolRunning     prometheus.Gauge
	PoolQueued      prometheus.Gauge
	Registration    prometheus.Histogram
	Grading         prometheus.Histogram
	// AttemptStart is what a Trial waits before its agent may act: from the
	// attempt's start in this manager (for a new Trial's first attempt, its
	// first reconcile) to the runner's answer to RegisterTrial, so pods'
	// scheduling and start, or a warm slot's claim, and registration.
	AttemptStart prometheus.Histogram
	// ProgressWrites counts Trial status writes made for live progress
	// alone (the writes live progress adds).
	ProgressWrites prometheus.Counter
}

var (
	metricsOnce sync.Once
	metrics     *Metrics
)

// latencyBuckets span a loopback RPC to a slow golden replay.
var latencyBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}

// startBuckets resolve a warm slot's claim (tens of ms) to a cold pod's
// image pull; fine around 0.5 s, the warm-slot goal.
var startBuckets = []float64{0.025, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 1.5, 2, 3, 5, 7.5, 10, 15, 20, 30, 60, 120, 300}

// DefaultMetrics returns the process-wide metrics, registered on
// controller-runtime's registry once (a test may start several managers).
func DefaultMetrics() *Metrics {
	metricsOnce.Do(func() {
		metrics = newMetrics()
		crmetrics.Registry.MustRegister(
			metrics.TrialsStarted, metrics.TrialsCompleted, metrics.Attempts,
			metrics.PoolCapacity, metrics.PoolRunning, metrics.PoolQueued,
			metrics.Registration, metrics.Grading, metrics.AttemptStart, metrics.ProgressWrites,
		)
		// The chat calls of every actor (and of the judge through the gateway).
		crmetrics.Registry.MustRegister(llm.DefaultMetrics.Collectors()...)
	})
	return metrics
}

func newMetrics() *Metrics {
	return &Metrics{
		TrialsStarted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tolokaforge_trials_started_total",
			Help: "Trials whose first attempt started.",
		}),
		TrialsCompleted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tolokaforge_trials_completed_total",
			Help: "Trials that reached a final outcome, by Completed reason.",
		}, []string{"reason"}),
		Attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tolokaforge_attempts_total",
			Help: "Ended attempts by outcome and reason.",
		}, []string{"outcome", "reason"}),
		PoolCapacity: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tolokaforge_driver_pool_capacity",
			Help: "Drivers that may run at once (--max-concurrent-trials).",
		}),
		PoolRunning: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tolokaforge_driver_pool_running",
			Help: "Drivers currently running an attempt.",
		}),
		PoolQueued: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tolokaforge_driver_pool_queued",
			Help: "Ready attempts waiting for a free driver.",
		}),
		ProgressWrites: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tolokaforge_trial_progress_writes_total",
			Help: "Trial status writes made only to update the running attempt's progress (at most one per Trial per progress interval).",
		}),
		Registration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tolokaforge_registration_duration_seconds",
			Help:    "RegisterTrial round trips.",
			Buckets: latencyBuckets,
		}),
		Grading: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tolokaforge_grading_duration_seconds",
			Help:    "GradeTrial round trips.",
			Buckets: latencyBuckets,
		}),
		AttemptStart: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tolokaforge_attempt_start_seconds",
			Help:    "From an attempt's start in this manager (a new Trial's first reconcile) to RegisterTrial answered: pods or a slot, and registration.",
			Buckets: startBuckets,
		}),
	}
}
