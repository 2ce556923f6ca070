package runner

import "github.com/prometheus/client_golang/prometheus"

// NewMetricsRegistry is the registry of series a new runner serves at
// /metrics, served by nothing: for checks of what reads the runner's series
// by name (the Helm chart's Grafana dashboard, test/release), so a renamed
// series fails there rather than leaving an empty panel.
func NewMetricsRegistry() *prometheus.Registry { return newMetrics().reg }
