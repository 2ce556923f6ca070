package release

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"tolokaforge.io/operator/controllers"
	"tolokaforge.io/operator/dbservice"
	"tolokaforge.io/operator/runner"
)

// dashboardFile is the chart's Grafana dashboard (metrics.dashboard).
const dashboardFile = "config/helm/tolokaforge/files/dashboards/tolokaforge.json"

// registered reports whether reg holds a series named name, whatever its
// labels: a probe of that name with other labels and help is refused when
// it does (client_golang keeps one label set per name in a registry).
func registered(t *testing.T, reg prometheus.Registerer, name string) bool {
	t.Helper()
	probe := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: "dashboard test probe"}, []string{"dashboard_test_probe"})
	err := reg.Register(probe)
	if err == nil {
		reg.Unregister(probe)
		return false
	}
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		t.Fatalf("probe %s collides with a collector of the same description: %v", name, err)
	}
	return strings.Contains(err.Error(), "same fully-qualified name")
}

// codeRegistries are the registries the code serves: the manager's
// (controller-runtime's, with the operator's and the model calls' series),
// a runner's and a DB service's.
func codeRegistries() map[string]prometheus.Registerer {
	controllers.DefaultMetrics()
	return map[string]prometheus.Registerer{
		"manager":   crmetrics.Registry,
		"runner":    runner.NewMetricsRegistry(),
		"dbservice": dbservice.NewMetricsRegistry(),
	}
}

// servedBy names the registries holding a series of name (a histogram's
// _bucket, _sum and _count are its name's).
func servedBy(t *testing.T, regs map[string]prometheus.Registerer, name string) []string {
	t.Helper()
	var by []string
	for what, reg := range regs {
		base := name
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(name, suf); ok && registered(t, reg, b) {
				base = b
			}
		}
		if registered(t, reg, base) {
			by = append(by, what)
		}
	}
	slices.Sort(by)
	return by
}

var (
	promString   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`)
	promMatchers = regexp.MustCompile(`\{[^}]*\}|\[[^\]]*\]`)
	promGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promIdent    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	promKeywords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true, "inf": true, "nan": true}
)

// metricNames are the series a PromQL expression reads: its identifiers
// that are no function (followed by "("), keyword, label or duration.
func metricNames(expr string) []string {
	e := promString.ReplaceAllString(expr, `""`)
	e = promMatchers.ReplaceAllString(e, " ")
	e = promGrouping.ReplaceAllString(e, " ")
	var names []string
	for _, loc := range promIdent.FindAllStringIndex(e, -1) {
		id := e[loc[0]:loc[1]]
		if promKeywords[strings.ToLower(id)] || strings.HasPrefix(strings.TrimSpace(e[loc[1]:]), "(") {
			continue
		}
		if loc[0] > 0 && (e[loc[0]-1] >= '0' && e[loc[0]-1] <= '9' || e[loc[0]-1] == '.') {
			continue // the exponent or tail of a number
		}
		names = append(names, id)
	}
	return names
}

// dashboardExprs are the PromQL expressions of every panel's targets,
// nested rows included, by panel title.
func dashboardExprs(t *testing.T, raw []byte) map[string][]string {
	t.Helper()
	type panel struct {
		Title   string  `json:"title"`
		Type    string  `json:"type"`
		Panels  []panel `json:"panels"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	}
	var d struct {
		Title  string  `json:"title"`
		UID    string  `json:"uid"`
		Panels []panel `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if d.Title == "" || d.UID == "" || len(d.Panels) == 0 {
		t.Fatalf("%s: title %q uid %q, %d panels", dashboardFile, d.Title, d.UID, len(d.Panels))
	}
	out := map[string][]string{}
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			walk(p.Panels)
			for _, tg := range p.Targets {
				out[p.Title] = append(out[p.Title], tg.Expr)
			}
		}
	}
	walk(d.Panels)
	return out
}

func TestMetricNamesOfAnExpression(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`sum by (reason) (rate(tolokaforge_trials_completed_total[$__rate_interval]))`, []string{"tolokaforge_trials_completed_total"}},
		{`histogram_quantile(0.95, sum by (le, tool) (rate(a_bucket{outcome="ok", x!~"a(b)"}[5m])))`, []string{"a_bucket"}},
		{`sum(rate(a_total[1m])) * 3600 / on(job) group_left b_info or c`, []string{"a_total", "b_info", "c"}},
		{`max(x) > 1e3 and y offset 5m`, []string{"x", "y"}},
	} {
		if got := metricNames(tc.expr); !slices.Equal(got, tc.want) {
			t.Errorf("metricNames(%q) = %v, want %v", tc.expr, got, tc.want)
		}
	}
}

// TestDashboardReadsServedSeries: the dashboard parses, and every series
// its queries read is one the code registers (the manager's, a runner's or
// a DB service's registry), so a renamed series fails here instead of
// leaving a panel empty; and the panels cover what issue 37 asks to watch.
func TestDashboardReadsServedSeries(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), dashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	regs := codeRegistries()
	for _, name := range []string{"tolokaforge_no_such_series_total", "gen_ai_client_operation_duration"} {
		if by := servedBy(t, regs, name); len(by) != 0 {
			t.Fatalf("the check finds %s in %v: it would pass anything", name, by)
		}
	}
	read := map[string]bool{}
	for title, exprs := range dashboardExprs(t, raw) {
		for _, e := range exprs {
			names := metricNames(e)
			if len(names) == 0 {
				t.Errorf("panel %q: %q reads no series", title, e)
			}
			for _, n := range names {
				read[n] = true
				if by := servedBy(t, regs, n); len(by) == 0 {
					t.Errorf("panel %q reads %s, which no registry of the code holds", title, n)
				}
			}
		}
	}
	for _, want := range []string{
		"tolokaforge_trials_started_total", "tolokaforge_trials_completed_total", "tolokaforge_attempts_total",
		"tolokaforge_driver_pool_capacity", "tolokaforge_driver_pool_running", "tolokaforge_driver_pool_queued",
		"tolokaforge_llm_requests_total", "gen_ai_client_operation_duration_seconds_bucket", "gen_ai_client_token_usage_total",
		"tolokaforge_llm_cost_usd_total", "tolokaforge_llm_retries_total", "tolokaforge_llm_ratelimit_wait_seconds_bucket",
		"tolokaforge_runner_tool_calls_total", "tolokaforge_runner_tool_call_duration_seconds_bucket",
		"tolokaforge_runner_grading_duration_seconds_bucket", "tolokaforge_runner_python_host_restarts_total",
		"dbservice_http_requests_total",
	} {
		if !read[want] {
			t.Errorf("no panel reads %s", want)
		}
	}
	// The model-call series are the manager's and the runner's (its judge);
	// a runner series must not be found in the manager's registry only.
	if by := servedBy(t, regs, "gen_ai_client_token_usage_total"); !slices.Equal(by, []string{"manager", "runner"}) {
		t.Errorf("gen_ai_client_token_usage_total served by %v, want manager and runner", by)
	}
	if by := servedBy(t, regs, "tolokaforge_runner_tool_calls_total"); !slices.Equal(by, []string{"runner"}) {
		t.Errorf("tolokaforge_runner_tool_calls_total served by %v, want runner", by)
	}
}
