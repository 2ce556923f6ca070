package manager

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"tolokaforge.io/operator/controllers"
)

// The runner-metrics options reach every runner pod (PodConfig) and the
// runner NetworkPolicies (ManagerPeer.Scraper); off, neither changes.
func TestRunnerMetricsOptions(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("scrape-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o, err := (Options{Image: "i", ManagerNamespace: "sys", RunnerMetricsPort: 9464, RunnerMetricsTokenFile: tok,
		RunnerMetricsScraperNamespaces: "kubernetes.io/metadata.name=monitoring", RunnerMetricsScraperPods: "app.kubernetes.io/name=prometheus,release=kps"}).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := podConfig(o).RunnerMetrics, (controllers.RunnerMetrics{Port: 9464, Token: "scrape-0123456789"}); got != want {
		t.Errorf("pod config runner metrics = %+v, want %+v", got, want)
	}
	want := controllers.MetricsScraper{Port: 9464, Namespaces: map[string]string{"kubernetes.io/metadata.name": "monitoring"},
		Pods: map[string]string{"app.kubernetes.io/name": "prometheus", "release": "kps"}}
	if got := managerPeer(o).Scraper; !reflect.DeepEqual(got, want) {
		t.Errorf("scraper = %+v, want %+v", got, want)
	}

	off, err := (Options{Image: "i", ManagerNamespace: "sys"}).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if m := podConfig(off).RunnerMetrics; m != (controllers.RunnerMetrics{}) {
		t.Errorf("off: pod config runner metrics = %+v", m)
	}
	if s := managerPeer(off).Scraper; !reflect.DeepEqual(s, controllers.MetricsScraper{}) {
		t.Errorf("off: scraper = %+v", s)
	}
}

func TestRunnerMetricsOptionsRefuseBadInput(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("scrape-0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ns := "kubernetes.io/metadata.name=monitoring"
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"token file without a port", Options{RunnerMetricsTokenFile: tok}, "manager: --runner-metrics-token-file and --runner-metrics-scraper-* need --runner-metrics-port"},
		{"selector without a port", Options{RunnerMetricsScraperPods: "a=b"}, "need --runner-metrics-port"},
		{"negative port", Options{RunnerMetricsPort: -1, RunnerMetricsTokenFile: tok, RunnerMetricsScraperNamespaces: ns}, "manager: --runner-metrics-port must be 0 (off) or 1-65535, got -1"},
		{"port too large", Options{RunnerMetricsPort: 70000, RunnerMetricsTokenFile: tok, RunnerMetricsScraperNamespaces: ns}, "must be 0 (off) or 1-65535, got 70000"},
		{"the gRPC port", Options{RunnerMetricsPort: 50051, RunnerMetricsTokenFile: tok, RunnerMetricsScraperNamespaces: ns}, "manager: --runner-metrics-port 50051 is taken in runner pods"},
		{"the DB service's port", Options{RunnerMetricsPort: 8000, RunnerMetricsTokenFile: tok, RunnerMetricsScraperNamespaces: ns}, "manager: --runner-metrics-port 8000 is taken in runner pods"},
		{"no token file", Options{RunnerMetricsPort: 9464, RunnerMetricsScraperNamespaces: ns}, "manager: --runner-metrics-port needs --runner-metrics-token-file"},
		{"absent token file", Options{RunnerMetricsPort: 9464, RunnerMetricsTokenFile: filepath.Join(dir, "absent"), RunnerMetricsScraperNamespaces: ns}, "manager: --runner-metrics-token-file: authn: read token file"},
		{"empty token file", Options{RunnerMetricsPort: 9464, RunnerMetricsTokenFile: empty, RunnerMetricsScraperNamespaces: ns}, "is empty"},
		{"no selector", Options{RunnerMetricsPort: 9464, RunnerMetricsTokenFile: tok}, "manager: --runner-metrics-port needs --runner-metrics-scraper-namespace-selector or --runner-metrics-scraper-pod-selector"},
		{"a selector that is no k=v", Options{RunnerMetricsPort: 9464, RunnerMetricsTokenFile: tok, RunnerMetricsScraperPods: "prometheus"}, `manager: --runner-metrics-scraper-pod-selector "prometheus": want k=v[,k=v]`},
		{"a set-based selector", Options{RunnerMetricsPort: 9464, RunnerMetricsTokenFile: tok, RunnerMetricsScraperNamespaces: "name in (a,b)"}, `manager: --runner-metrics-scraper-namespace-selector "name in (a,b)"`},
		{"an invalid label value", Options{RunnerMetricsPort: 9464, RunnerMetricsTokenFile: tok, RunnerMetricsScraperPods: "app=not a label"}, `--runner-metrics-scraper-pod-selector`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Image = "i"
			_, err := tc.o.withDefaults()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "scrape-0123456789") {
				t.Errorf("the error holds the token: %v", err)
			}
		})
	}
}
