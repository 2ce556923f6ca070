package dbservice

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics live in a registry of the server's own, so several servers in one process
// (tests, `trial run`) never collide on the global registry.
type metrics struct {
	registry *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	ops      *prometheus.CounterVec
	hashTime prometheus.Histogram
}

// newMetrics reads its gauges when scraped: activeTrials counts the trials
// held, stateBytes the bytes charged to them (kept exact on every change, so
// a scrape costs an atomic load, never a walk of the states).
func newMetrics(activeTrials, stateBytes func() float64) *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dbservice_http_requests_total",
			Help: "HTTP requests by route pattern and status code.",
		}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "dbservice_http_request_duration_seconds",
			Help:    "HTTP request latency by route pattern.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
		}, []string{"route"}),
		ops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dbservice_patch_operations_total",
			Help: "PATCH operations applied, by op.",
		}, []string{"op"}),
		hashTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "dbservice_state_hash_duration_seconds",
			Help:    "Time to compute the full and stable hashes of a new state version.",
			Buckets: prometheus.ExponentialBuckets(0.00005, 4, 10),
		}),
	}
	m.registry.MustRegister(
		m.requests, m.latency, m.ops, m.hashTime,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "dbservice_active_trials",
			Help: "Trials currently held in memory.",
		}, activeTrials),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "dbservice_state_bytes",
			Help: "Canonical record bytes the live trials hold: each one's current and initial state and its snapshots " +
				"(a state kept by several of them once), the figure max_total_bytes limits.",
		}, stateBytes),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}
