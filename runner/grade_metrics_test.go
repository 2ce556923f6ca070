package runner_test

import (
	"math"
	"net/http"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/runner"
	"tolokaforge.io/operator/runner/grading"
)

// TestGradingComponentsAreTimedCountedAndTraced: a grade by state checks
// (hash with a golden replay) and transcript rules times each component,
// the replay inside the hash's span; test_execution verifiers that pass,
// fail, time out and leave a broken reward are counted by outcome; all of
// it read over HTTP as Prometheus scrapes it.
func TestGradingComponentsAreTimedCountedAndTraced(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	h := startRunner(t, nil, withGrader(grading.New()), func(c *runner.Config) { c.TracerProvider = tp })

	doc := baseTask([]any{tool("db_insert", "category", "write")}, nil, obj{"items": []any{obj{"id": "i-1", "name": "first"}}})
	doc["grading"] = obj{"weights": obj{"state_checks": 0.5, "transcript_rules": 0.5},
		"state_checks":     obj{"hash_enabled": true, "golden_actions": []any{}},
		"transcript_rules": obj{"must_contain": []any{"done"}}}
	h.mustRegister(t, "sc", doc)
	exp.Reset()
	if r := grade(t, h, &runnerpb.GradeTrialRequest{TrialId: "sc", TerminationReason: "agent_done",
		LlmMessagesJson: `[{"role":"user","content":"hi"},{"role":"assistant","content":"done"}]`}); !r.GetSuccess() || r.GetGrade().GetScore() != 1 {
		t.Fatalf("grade: %v %s", r.GetGrade(), r.GetError())
	}
	spans := map[string]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		spans[s.Name] = s
	}
	server, ok := spans["tolokaforge.runner.RunnerService/GradeTrial"]
	if !ok {
		t.Fatalf("no GradeTrial server span among %v", names(exp.GetSpans()))
	}
	for _, tc := range []struct{ span, parent string }{
		{"grading hash", server.Name},
		{"grading golden_replay", "grading hash"},
		{"grading jsonpath", server.Name},
		{"grading db_probes", server.Name},
		{"grading transcript_rules", server.Name},
		{"grading custom_checks", server.Name},
	} {
		s, ok := spans[tc.span]
		if !ok {
			t.Errorf("no %q span among %v", tc.span, names(exp.GetSpans()))
			continue
		}
		if p := spans[tc.parent]; s.Parent.SpanID() != p.SpanContext.SpanID() || s.SpanContext.TraceID() != server.SpanContext.TraceID() {
			t.Errorf("%q's parent is %s, want %q's %s", tc.span, s.Parent.SpanID(), tc.parent, p.SpanContext.SpanID())
		}
	}

	for name, want := range map[string]bool{"grading hash": true, "grading llm_judge": false} {
		got, found := false, false
		for _, a := range spans[name].Attributes {
			if a.Key == grading.AttrRan {
				got, found = a.Value.AsBool(), true
			}
		}
		if !found || got != want {
			t.Errorf("%q: %s = %v (set: %v), want %v", name, grading.AttrRan, got, found, want)
		}
	}

	verifier := func(id, script string, timeout float64) {
		td := baseTask([]any{tool("write_file")}, nil, nil)
		td["grading"] = obj{"grading_method": "test_execution",
			"test_execution": obj{"command": []any{"sh", "-c", script}, "reward_file": "reward.txt", "timeout_s": timeout}}
		h.mustRegister(t, id, td)
		grade(t, h, &runnerpb.GradeTrialRequest{TrialId: id, TerminationReason: "agent_done"})
	}
	verifier("pass", "echo 1 > reward.txt", 10)
	verifier("fail", "echo 0 > reward.txt", 10)
	verifier("fail2", "exit 3", 10)
	verifier("slow", "sleep 5", 0.2)
	verifier("broken", "echo not-a-number > reward.txt", 10)

	code, fams := scrapeRunner(t, h.srv.MetricsHandler(), "")
	if code != http.StatusOK {
		t.Fatalf("scrape answered %d", code)
	}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"tolokaforge_runner_grading_component_duration_seconds", map[string]string{"component": "hash", "outcome": "ok"}, 1},
		{"tolokaforge_runner_grading_component_duration_seconds", map[string]string{"component": "golden_replay", "outcome": "ok"}, 1},
		{"tolokaforge_runner_grading_component_duration_seconds", map[string]string{"component": "transcript_rules", "outcome": "ok"}, 1},
		// Configured by no trial: considered (a span) but not timed.
		{"tolokaforge_runner_grading_component_duration_seconds", map[string]string{"component": "llm_judge", "outcome": "ok"}, math.NaN()},
		{"tolokaforge_runner_grading_component_duration_seconds", map[string]string{"component": "test_execution", "outcome": "ok"}, 3},
		{"tolokaforge_runner_grading_component_duration_seconds", map[string]string{"component": "test_execution", "outcome": "error"}, 2},
		{"tolokaforge_runner_verifier_runs_total", map[string]string{"outcome": "passed"}, 1},
		{"tolokaforge_runner_verifier_runs_total", map[string]string{"outcome": "failed"}, 2},
		{"tolokaforge_runner_verifier_runs_total", map[string]string{"outcome": "timeout"}, 1},
		{"tolokaforge_runner_verifier_runs_total", map[string]string{"outcome": "error"}, 1},
		{"tolokaforge_runner_grading_duration_seconds", map[string]string{"outcome": "ok"}, 4},
		{"tolokaforge_runner_grading_duration_seconds", map[string]string{"outcome": "error"}, 2},
	} {
		if got := metricValue(fams, tc.name, tc.labels); got != tc.want && !(math.IsNaN(got) && math.IsNaN(tc.want)) {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
	// Every series carries a known component: nothing from the task leaks into a label.
	known := map[string]bool{}
	for _, u := range grading.Units() {
		known[u] = true
	}
	for _, m := range fams["tolokaforge_runner_grading_component_duration_seconds"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "component" && !known[l.GetValue()] {
				t.Errorf("component %q is no grading unit", l.GetValue())
			}
		}
	}
}

func names(spans tracetest.SpanStubs) string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return strings.Join(out, ", ")
}
