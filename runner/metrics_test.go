package runner_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/runner"
	"tolokaforge.io/operator/runner/grading"
)

// scrapeRunner reads h over HTTP as Prometheus would, with the bearer token
// when given; it returns the status and the parsed families.
func scrapeRunner(t *testing.T, h http.Handler, token string) (int, map[string]*dto.MetricFamily) {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, nil
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse the scrape: %v", err)
	}
	return resp.StatusCode, fams
}

// metricValue is a counter's value or a histogram's count for the series
// with exactly labels; NaN when there is none.
func metricValue(fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
next:
	for _, m := range fams[name].GetMetric() {
		if len(m.GetLabel()) != len(labels) {
			continue
		}
		for _, l := range m.GetLabel() {
			if labels[l.GetName()] != l.GetValue() {
				continue next
			}
		}
		if hg := m.GetHistogram(); hg != nil {
			return float64(hg.GetSampleCount())
		}
		return m.GetCounter().GetValue()
	}
	return math.NaN()
}

func TestRunnerMetricsCountToolCallsAndGrading(t *testing.T) {
	pg := &probeGrader{}
	pg.set(func(context.Context, grading.Env, grading.Request) (*runnerpb.Grade, error) {
		return &runnerpb.Grade{BinaryPass: true, Score: 1}, nil
	})
	h := startRunner(t, nil, withGrader(pg))
	h.mustRegister(t, "m1", baseTask([]any{tool("calculator")}, []any{tool("calculator")}, nil))
	h.mustExec(t, "m1", call{tool: "calculator", args: `{"expression":"1+1"}`, callID: "c1"})
	h.mustExec(t, "m1", call{tool: "calculator", args: `{"expression":"2+2"}`, callID: "c2", executor: "user"})
	// A replay of c1 is answered from the record, not run: not counted.
	h.mustExec(t, "m1", call{tool: "calculator", args: `{"expression":"1+1"}`, callID: "c1"})
	if r := h.exec(t, "m1", call{tool: "calculator", args: `{"nope":1}`, callID: "c3"}); r.GetStatus() != runnerpb.ExecutionStatus_EXECUTION_STATUS_INVALID_ARGUMENTS {
		t.Fatalf("bad arguments: status %s", r.GetStatus())
	}
	// Names a model invents, and an executor nobody defines, make no series of their own.
	for i, c := range []call{{tool: "made_up_1", args: `{}`, callID: "c4"}, {tool: "made_up_2", args: `{}`, callID: "c5"},
		{tool: "calculator", args: `{"expression":"1"}`, callID: "c6", executor: "robot"}} {
		if r := h.exec(t, "m1", c); r.GetStatus() == runnerpb.ExecutionStatus_EXECUTION_STATUS_SUCCESS {
			t.Fatalf("call %d succeeded", i)
		}
	}
	if r := grade(t, h, &runnerpb.GradeTrialRequest{TrialId: "m1", LlmMessagesJson: "[]"}); !r.GetSuccess() {
		t.Fatalf("grade: %s", r.GetError())
	}
	pg.set(func(context.Context, grading.Env, grading.Request) (*runnerpb.Grade, error) {
		return nil, errors.New("Grading error: broken")
	})
	if r := grade(t, h, &runnerpb.GradeTrialRequest{TrialId: "m1", LlmMessagesJson: "[]"}); r.GetSuccess() {
		t.Fatal("the failing grader's GradeTrial succeeded")
	}

	code, fams := scrapeRunner(t, h.srv.MetricsHandler(), "")
	if code != http.StatusOK {
		t.Fatalf("scrape answered %d", code)
	}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"tolokaforge_runner_tool_calls_total", map[string]string{"tool": "calculator", "executor": "agent", "status": "success"}, 1},
		{"tolokaforge_runner_tool_calls_total", map[string]string{"tool": "calculator", "executor": "user", "status": "success"}, 1},
		{"tolokaforge_runner_tool_calls_total", map[string]string{"tool": "calculator", "executor": "agent", "status": "invalid_arguments"}, 1},
		{"tolokaforge_runner_tool_calls_total", map[string]string{"tool": "unknown", "executor": "agent", "status": "tool_not_found"}, 2},
		{"tolokaforge_runner_tool_calls_total", map[string]string{"tool": "unknown", "executor": "invalid", "status": "invalid_arguments"}, 1},
		{"tolokaforge_runner_tool_call_duration_seconds", map[string]string{"tool": "calculator"}, 3},
		{"tolokaforge_runner_tool_call_duration_seconds", map[string]string{"tool": "unknown"}, 3},
		{"tolokaforge_runner_grading_duration_seconds", map[string]string{"outcome": "ok"}, 1},
		{"tolokaforge_runner_grading_duration_seconds", map[string]string{"outcome": "error"}, 1},
		{"tolokaforge_runner_python_host_restarts_total", map[string]string{}, 0},
	} {
		if got := metricValue(fams, tc.name, tc.labels); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
	if fams["go_goroutines"] == nil || fams["process_cpu_seconds_total"] == nil {
		t.Error("the Go and process collectors are not served")
	}
}

// TestRunnerMetricsNeedTheAuthToken: with a credential, a scrape is
// authenticated like every RunnerService call.
func TestRunnerMetricsNeedTheAuthToken(t *testing.T) {
	srv, err := runner.New(runner.Config{AuthToken: "s3cret", WorkDir: t.TempDir(), Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		token string
		want  int
	}{{"", http.StatusUnauthorized}, {"wrong", http.StatusUnauthorized}, {"s3cret", http.StatusOK}} {
		if code, _ := scrapeRunner(t, srv.MetricsHandler(), tc.token); code != tc.want {
			t.Errorf("scrape with token %q answered %d, want %d", tc.token, code, tc.want)
		}
	}
}
