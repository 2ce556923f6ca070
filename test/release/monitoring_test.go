package release

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"
)

// TestChartMonitoring renders the chart's metrics values: off (the
// default), nothing of them is rendered; on, the manager runs the runners'
// metrics with the scraper's token file and selectors, and the
// ServiceMonitor, PodMonitor, token Secret and dashboard ConfigMap are
// there as Prometheus and Grafana read them.
func TestChartMonitoring(t *testing.T) {
	if testing.Short() {
		t.Skip("installs helm into bin/")
	}
	root := repoRoot(t)
	_, helm := ensureTools(t, root)
	chartDir := filepath.Join(root, "config", "helm", "tolokaforge")
	render := func(args ...string) map[string]object {
		t.Helper()
		r := mustRun(t, 2*time.Minute, root, nil, helm, append([]string{"template", releaseName, chartDir, "--namespace", releaseNamespace}, args...)...)
		return byKey(t, "helm template "+strings.Join(args, " "), decodeAll(t, "helm template", []byte(r.stdout)))
	}
	metricsArgs := func(objs map[string]object) []string {
		var out []string
		for _, a := range managerContainer(t, []object{objs["Deployment/"+releaseNamespace+"/tolokaforge-manager"]})["args"].([]any) {
			if s := a.(string); strings.HasPrefix(s, "--runner-metrics") {
				out = append(out, s)
			}
		}
		return out
	}

	off := render()
	for k := range off {
		if strings.HasPrefix(k, "ServiceMonitor/") || strings.HasPrefix(k, "PodMonitor/") || strings.HasPrefix(k, "ConfigMap/") || strings.HasPrefix(k, "Secret/") {
			t.Errorf("default render has %s", k)
		}
	}
	if a := metricsArgs(off); a != nil {
		t.Errorf("default render: manager args %v", a)
	}

	on := render("--set", "metrics.runners.enabled=true,metrics.podMonitor.enabled=true,metrics.serviceMonitor.enabled=true,metrics.dashboard.enabled=true",
		"--set", "metrics.podMonitor.labels.release=kps", "--set", "trialNamespaces={team-a,team-b}",
		"--set", "metrics.runners.scraper.podSelector.release=kps")
	wantArgs := []string{"--runner-metrics-port=9464", "--runner-metrics-token-file=/var/run/tolokaforge/metrics-reader/token",
		"--runner-metrics-scraper-namespace-selector=kubernetes.io/metadata.name=monitoring",
		"--runner-metrics-scraper-pod-selector=app.kubernetes.io/name=prometheus,release=kps"}
	got := metricsArgs(on)
	if !slices.Equal(got, wantArgs) {
		t.Errorf("manager metrics args %v, want %v", got, wantArgs)
	}
	// Every flag is one the manager has (docs/cli is its generated
	// reference), and the selectors parse as it parses them.
	ref, err := os.ReadFile(filepath.Join(root, "docs", "cli", "tolokaforge_manager.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range got {
		flag, val, _ := strings.Cut(a, "=")
		if !regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(flag) + `\s`).Match(ref) {
			t.Errorf("the manager has no flag %s", flag)
		}
		if strings.HasSuffix(flag, "-selector") {
			if _, err := labels.ConvertSelectorToLabelsMap(val); err != nil {
				t.Errorf("%s: %v", a, err)
			}
		}
	}
	dep := on["Deployment/"+releaseNamespace+"/tolokaforge-manager"]
	c := managerContainer(t, []object{dep})
	if !slices.ContainsFunc(c["volumeMounts"].([]any), func(m any) bool {
		mm := m.(object)
		return mm["name"] == "metrics-reader" && mm["mountPath"] == "/var/run/tolokaforge/metrics-reader" && mm["readOnly"] == true
	}) {
		t.Errorf("manager mounts %v", c["volumeMounts"])
	}
	vols := dig(t, dep, "spec", "template", "spec", "volumes").([]any)
	if !slices.ContainsFunc(vols, func(v any) bool {
		vv := v.(object)
		s, _ := vv["secret"].(object)
		return vv["name"] == "metrics-reader" && s != nil && s["secretName"] == "tolokaforge-metrics-reader"
	}) {
		t.Errorf("manager volumes %v", vols)
	}

	sec := on["Secret/"+releaseNamespace+"/tolokaforge-metrics-reader"]
	if sec == nil {
		t.Fatal("no tolokaforge-metrics-reader Secret")
	}
	tok, err := base64.StdEncoding.DecodeString(dig(t, sec, "data", "token").(string))
	if err != nil || len(tok) < 32 || strings.ContainsAny(string(tok), " \t\r\n") {
		t.Errorf("token of %d bytes (%v), want one word of at least 32", len(tok), err)
	}

	sm := on["ServiceMonitor/"+releaseNamespace+"/tolokaforge-manager"]
	if sm == nil || sm["apiVersion"] != "monitoring.coreos.com/v1" {
		t.Fatalf("ServiceMonitor %v", sm)
	}
	svc := on["Service/"+releaseNamespace+"/tolokaforge-manager-metrics"]
	if !reflect.DeepEqual(dig(t, sm, "spec", "selector", "matchLabels"), dig(t, svc, "spec", "selector")) ||
		dig(t, sm, "spec", "endpoints", 0, "port") != dig(t, svc, "spec", "ports", 0, "name") {
		t.Errorf("ServiceMonitor %v does not select the metrics Service %v", sm["spec"], svc["spec"])
	}

	pm := on["PodMonitor/"+releaseNamespace+"/tolokaforge-runners"]
	if pm == nil || pm["apiVersion"] != "monitoring.coreos.com/v1" || dig(t, pm, "metadata", "labels", "release") != "kps" {
		t.Fatalf("PodMonitor %v", pm)
	}
	ep := dig(t, pm, "spec", "podMetricsEndpoints", 0).(object)
	if ep["port"] != "metrics" || ep["path"] != "/metrics" || dig(t, ep, "authorization", "type") != "Bearer" ||
		dig(t, ep, "authorization", "credentials", "name") != "tolokaforge-metrics-reader" || dig(t, ep, "authorization", "credentials", "key") != "token" {
		t.Errorf("PodMonitor endpoint %v", ep)
	}
	if ns := dig(t, pm, "spec", "namespaceSelector", "matchNames"); !reflect.DeepEqual(ns, []any{"team-a", "team-b"}) {
		t.Errorf("PodMonitor namespaces %v", ns)
	}
	// The runner pods' labels (controllers.podLabels, slotLabels).
	sel := dig(t, pm, "spec", "selector").(object)
	if !reflect.DeepEqual(sel["matchLabels"], object{"app.kubernetes.io/managed-by": "tolokaforge"}) ||
		!reflect.DeepEqual(dig(t, sel, "matchExpressions", 0, "values"), []any{"runner", "slot"}) {
		t.Errorf("PodMonitor selector %v", sel)
	}

	cm := on["ConfigMap/"+releaseNamespace+"/tolokaforge-dashboard"]
	if cm == nil || dig(t, cm, "metadata", "labels", "grafana_dashboard") != "1" {
		t.Fatalf("dashboard ConfigMap %v", cm)
	}
	want, err := os.ReadFile(filepath.Join(root, dashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	if got := dig(t, cm, "data", "tolokaforge.json").(string); got != strings.TrimRight(string(want), "\n") {
		t.Errorf("dashboard ConfigMap holds %d bytes, want the %d of %s", len(got), len(want), dashboardFile)
	}

	// The chart's own Secret is left out for one of the user's.
	mine := render("--set", "metrics.runners.enabled=true,metrics.podMonitor.enabled=true,metrics.runners.existingSecret=my-token")
	if _, ok := mine["Secret/"+releaseNamespace+"/tolokaforge-metrics-reader"]; ok {
		t.Error("existingSecret set: the chart still makes its Secret")
	}
	if n := dig(t, mine["PodMonitor/"+releaseNamespace+"/tolokaforge-runners"], "spec", "podMetricsEndpoints", 0, "authorization", "credentials", "name"); n != "my-token" {
		t.Errorf("PodMonitor credentials from %v, want my-token", n)
	}

	// Values that cannot work are refused by name.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--set", "metrics.podMonitor.enabled=true"}, "metrics.podMonitor.enabled needs metrics.runners.enabled"},
		{[]string{"--set", "metrics.runners.enabled=true,metrics.runners.scraper.namespaceSelector=null,metrics.runners.scraper.podSelector=null"}, "needs metrics.runners.scraper.namespaceSelector or podSelector"},
	} {
		r := run(t, 2*time.Minute, root, nil, helm, append([]string{"template", releaseName, chartDir, "--namespace", releaseNamespace}, tc.args...)...)
		if r.code == 0 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("helm template %v: exit %d, stderr %q; want a refusal saying %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}
