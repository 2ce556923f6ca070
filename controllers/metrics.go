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

// DefaultMetrics returns the process-wide metrics, registered on
// controller-runtime's registry once (a test may start several managers).
func DefaultMetrics() *Metrics {
	metricsOnce.Do(func() {
		metrics = newMetrics()
		crmetrics.Registry.MustRegister(
			metrics.TrialsStarted, metrics.TrialsCompleted, metrics.Attempts,
			metrics.PoolCapacity, metrics.PoolRunning, metrics.PoolQueued,
			metrics.Registration, metrics.Grading, metrics.ProgressWrites,
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
	}
}
