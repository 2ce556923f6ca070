package cli

import (
	"io"
	"testing"
)

// The runner-metrics flags fill the manager's options (manager.Options
// validates them: controllers/manager); by default runner metrics are off.
func TestManagerRunnerMetricsFlags(t *testing.T) {
	f, err := parseManagerFlags([]string{"--image=i"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o := f.Options; o.RunnerMetricsPort != 0 || o.RunnerMetricsTokenFile != "" || o.RunnerMetricsScraperNamespaces != "" || o.RunnerMetricsScraperPods != "" {
		t.Errorf("defaults: port %d token file %q selectors %q %q", o.RunnerMetricsPort, o.RunnerMetricsTokenFile, o.RunnerMetricsScraperNamespaces, o.RunnerMetricsScraperPods)
	}
	f, err = parseManagerFlags([]string{"--image=i", "--runner-metrics-port=9464", "--runner-metrics-token-file=/var/run/tolokaforge/metrics-reader/token",
		"--runner-metrics-scraper-namespace-selector=kubernetes.io/metadata.name=monitoring", "--runner-metrics-scraper-pod-selector=app.kubernetes.io/name=prometheus"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o := f.Options; o.RunnerMetricsPort != 9464 || o.RunnerMetricsTokenFile != "/var/run/tolokaforge/metrics-reader/token" ||
		o.RunnerMetricsScraperNamespaces != "kubernetes.io/metadata.name=monitoring" || o.RunnerMetricsScraperPods != "app.kubernetes.io/name=prometheus" {
		t.Errorf("options: port %d token file %q selectors %q %q", o.RunnerMetricsPort, o.RunnerMetricsTokenFile, o.RunnerMetricsScraperNamespaces, o.RunnerMetricsScraperPods)
	}
	if _, err := parseManagerFlags([]string{"--image=i", "--runner-metrics-port=lots"}, io.Discard); err == nil {
		t.Error("a port that is no number was accepted")
	}
}
