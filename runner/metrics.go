package runner

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"tolokaforge.io/operator/api/llm"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/api/telemetry"
	"tolokaforge.io/operator/runner/grading"
)

// metrics are one runner's Prometheus series on a registry of its own (a
// process may hold several runners: the tests, results/local), served by
// MetricsHandler. Labels are bounded by the pack's tool set and the code,
// never by trial or call.
type metrics struct {
	reg          *prometheus.Registry
	toolCalls    *prometheus.CounterVec   // tool, executor, status
	toolDuration *prometheus.HistogramVec // tool
	grading      *prometheus.HistogramVec // outcome
	units        *prometheus.HistogramVec // component, outcome
	verifier     *prometheus.CounterVec   // outcome
	pyRestarts   prometheus.Counter
}

// toolBuckets span a builtin (~50µs) to a slow terminal command.
var toolBuckets = []float64{0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120}

// gradeBuckets span state checks alone to a judge and a verifier.
var gradeBuckets = []float64{0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900}

// Tool status values beside the recorded ones (task.ToolCallStatus).
const statusInfra = "infra_error" // the DB service failed under the call; not recorded

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tolokaforge_runner_tool_calls_total",
			Help: "Executed tool calls by tool, executor and status (success, error, timeout, invalid_arguments, tool_not_found, infra_error).",
		}, []string{"tool", "executor", "status"}),
		toolDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tolokaforge_runner_tool_call_duration_seconds",
			Help:    "Duration of executed tool calls by tool (a replayed call_id is not counted).",
			Buckets: toolBuckets,
		}, []string{"tool"}),
		grading: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tolokaforge_runner_grading_duration_seconds",
			Help:    "GradeTrial's grading, all components together, by outcome (ok, error).",
			Buckets: gradeBuckets,
		}, []string{"outcome"}),
		units: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "tolokaforge_runner_grading_component_duration_seconds",
			Help: "Each grading component's evaluation by component (hash, jsonpath, db_probes, transcript_rules, trace_checks, llm_judge, " +
				"custom_checks, golden_replay (within hash), test_execution, environment_tests) and outcome (ok, error).",
			Buckets: gradeBuckets,
		}, []string{"component", "outcome"}),
		verifier: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tolokaforge_runner_verifier_runs_total",
			Help: "test_execution verifier runs (in the runner or the task's environment) by outcome (passed, failed, timeout, error).",
		}, []string{"outcome"}),
		pyRestarts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tolokaforge_runner_python_host_restarts_total",
			Help: "Python tool hosts started again after one broke or was closed mid-trial.",
		}),
	}
	m.reg.MustRegister(m.toolCalls, m.toolDuration, m.grading, m.units, m.verifier, m.pyRestarts,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// The judge's model calls (api/llm records them process-wide).
	m.reg.MustRegister(llm.DefaultMetrics.Collectors()...)
	return m
}

// toolUnknown labels calls of a tool the trial does not hold: the name is
// the model's, and a model inventing names must not invent series.
const toolUnknown = "unknown"

func (m *metrics) toolCall(tool, executor, status string, took time.Duration) {
	if status == string(task.ToolCallToolNotFound) || (executor != task.ExecutorAgent && executor != task.ExecutorUser) {
		tool = toolUnknown
	}
	if executor != task.ExecutorAgent && executor != task.ExecutorUser {
		executor = "invalid"
	}
	m.toolCalls.WithLabelValues(tool, executor, status).Inc()
	m.toolDuration.WithLabelValues(tool).Observe(took.Seconds())
}

// gradingUnit records one grading component's time; a name outside the
// grader's closed set (another Grader's) is "other", never a new series.
func (m *metrics) gradingUnit(unit string, took time.Duration, err error) {
	if !knownUnits[unit] {
		unit = "other"
	}
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	m.units.WithLabelValues(unit, outcome).Observe(took.Seconds())
}

func (m *metrics) verifierRan(outcome string) {
	switch outcome {
	case grading.VerifierPassed, grading.VerifierFailed, grading.VerifierTimeout, grading.VerifierError:
	default:
		outcome = grading.VerifierError
	}
	m.verifier.WithLabelValues(outcome).Inc()
}

var knownUnits = func() map[string]bool {
	out := map[string]bool{}
	for _, u := range grading.Units() {
		out[u] = true
	}
	return out
}()

func (m *metrics) graded(ok bool, took time.Duration) {
	outcome := "ok"
	if !ok {
		outcome = "error"
	}
	m.grading.WithLabelValues(outcome).Observe(took.Seconds())
}

// MetricsHandler serves the runner's series in the Prometheus text format.
// When the runner has an auth token or a metrics token, a scrape must carry
// one of them as its gRPC callers do ("Authorization: Bearer <token>").
func (s *Server) MetricsHandler() http.Handler {
	h := promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{})
	var accept [][]byte
	for _, tok := range []string{s.cfg.AuthToken, s.cfg.MetricsToken} {
		if tok != "" {
			accept = append(accept, []byte("Bearer "+tok))
		}
	}
	if len(accept) == 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		ok := 0
		for _, want := range accept {
			// Both compared, whichever matches, so the time taken does not
			// say which token came close.
			ok |= subtle.ConstantTimeCompare(got, want)
		}
		if ok != 1 {
			http.Error(w, "missing or wrong bearer token", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// serveMetrics serves h at /metrics on addr until stop is called.
func serveMetrics(addr string, h http.Handler, log logr.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-bind-address: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error(err, "metrics server stopped")
		}
	}()
	log.Info("serving metrics", "address", ln.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

// flushTraces sends the spans still batched, bounded so a dead collector
// cannot hold the exit.
func flushTraces(shutdown telemetry.Shutdown, log logr.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := shutdown(ctx); err != nil {
		log.Error(err, "flush traces")
	}
}
