package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// otlpJSON is the part of an OTLP JSON trace file the test reads.
type otlpJSON struct {
	ResourceSpans []struct {
		Resource struct {
			Attributes []struct {
				Key   string `json:"key"`
				Value struct {
					StringValue string `json:"stringValue"`
				} `json:"value"`
			} `json:"attributes"`
		} `json:"resource"`
		ScopeSpans []struct {
			Spans []otlpSpan `json:"spans"`
		} `json:"scopeSpans"`
	} `json:"resourceSpans"`
}

type otlpSpan struct {
	TraceID      string `json:"traceId"`
	SpanID       string `json:"spanId"`
	ParentSpanID string `json:"parentSpanId"`
	Name         string `json:"name"`
}

// TestRunTraceWritesTheAttemptsTrace: --trace writes the attempt's spans
// as OTLP JSON beside trajectory.yaml (and in the attempt's own directory):
// one trace, the trajectory's, one root "attempt" span, the turns under it,
// the tool calls under their turn, and the grading components under the
// runner's GradeTrial span under "grade". Without --trace nothing is traced.
func TestRunTraceWritesTheAttemptsTrace(t *testing.T) {
	var out bytes.Buffer
	dir := t.TempDir()
	if err := runTrial(ctxT(t), []string{"run", "--task", shopTaskPath, "--out", dir, "--trace"}, trialTestEnv(t, &out)); err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	trial := filepath.Join(onlyRun(t, dir), "trials", "shop_orders_02", "0")
	traj, err := os.ReadFile(filepath.Join(trial, "trajectory.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^trace_id: ([0-9a-f]{32})$`).FindSubmatch(traj)
	if m == nil {
		t.Fatalf("trajectory.yaml has no trace_id:\n%s", traj)
	}
	id := string(m[1])
	if want := "trace " + id + ": " + filepath.Join(trial, "trace.json") + "\n"; !strings.Contains(out.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, out.String())
	}
	raw, err := os.ReadFile(filepath.Join(trial, "trace.json"))
	if err != nil {
		t.Fatal(err)
	}
	if own, err := os.ReadFile(filepath.Join(trial, "attempts", "1", "trace.json")); err != nil || !bytes.Equal(own, raw) {
		t.Errorf("the attempt's own trace.json differs or is missing: %v", err)
	}
	var doc otlpJSON
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("trace.json is no OTLP JSON: %v", err)
	}
	byID := map[string]otlpSpan{}
	byName := map[string][]otlpSpan{}
	var services []string
	for _, rs := range doc.ResourceSpans {
		for _, a := range rs.Resource.Attributes {
			if a.Key == "service.name" {
				services = append(services, a.Value.StringValue)
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				if s.TraceID != id {
					t.Errorf("span %q is of trace %s, want %s", s.Name, s.TraceID, id)
				}
				byID[s.SpanID] = s
				byName[s.Name] = append(byName[s.Name], s)
			}
		}
	}
	if len(services) == 0 || services[0] != "tolokaforge-trial-run" {
		t.Errorf("service names %v", services)
	}
	var roots []string
	for _, s := range byID {
		if s.ParentSpanID == "" {
			roots = append(roots, s.Name)
		} else if _, ok := byID[s.ParentSpanID]; !ok {
			t.Errorf("span %q's parent %s is not in the file", s.Name, s.ParentSpanID)
		}
	}
	if len(roots) != 1 || roots[0] != "attempt" {
		t.Fatalf("roots %v, want the one attempt span", roots)
	}
	parent := func(s otlpSpan) string { return byID[s.ParentSpanID].Name }
	// ancestors of s by name, nearest first.
	ancestors := func(s otlpSpan) []string {
		var out []string
		for s.ParentSpanID != "" {
			s = byID[s.ParentSpanID]
			out = append(out, s.Name)
		}
		return out
	}
	for _, tc := range []struct{ span, parent string }{
		{"turn", "attempt"},
		{"execute_tool place_order", "turn"},
		{"execute_tool confirm_payment", "turn"},
		{"grade", "attempt"},
		{"grading hash", "tolokaforge.runner.RunnerService/GradeTrial"},
		{"grading golden_replay", "grading hash"},
		{"grading jsonpath", "tolokaforge.runner.RunnerService/GradeTrial"},
		{"grading transcript_rules", "tolokaforge.runner.RunnerService/GradeTrial"},
	} {
		spans := byName[tc.span]
		if len(spans) == 0 {
			t.Errorf("no %q span", tc.span)
			continue
		}
		for _, s := range spans {
			if got := parent(s); got != tc.parent {
				t.Errorf("%q's parent is %q, want %q", tc.span, got, tc.parent)
			}
		}
	}
	if a := ancestors(byName["grading hash"][0]); len(a) < 3 || a[1] != "grade" || a[len(a)-1] != "attempt" {
		t.Errorf("grading hash's ancestors %v, want GradeTrial under grade under attempt", a)
	}

	// Resumed without --trace (the first attempt marked an infrastructure
	// failure, which a resume runs again): the second attempt is untraced,
	// and the first one's trace goes from beside the new trajectory.
	out.Reset()
	runID := filepath.Base(onlyRun(t, dir))
	marked := regexp.MustCompile(`(?m)^outcome: \w+$`).ReplaceAll(traj, []byte("outcome: InfraFailed"))
	if bytes.Equal(marked, traj) {
		t.Fatal("trajectory.yaml has no top-level outcome to mark")
	}
	if err := os.WriteFile(filepath.Join(trial, "trajectory.yaml"), marked, 0o600); err != nil {
		t.Fatal(err)
	}
	_ = runTrial(ctxT(t), []string{"run", "--task", shopTaskPath, "--out", dir, "--resume", runID}, trialTestEnv(t, &out))
	if traj, err := os.ReadFile(filepath.Join(trial, "trajectory.yaml")); err != nil || bytes.Contains(traj, []byte("trace_id")) {
		t.Errorf("untraced attempt's trajectory.yaml (%v):\n%s\n%s", err, traj, out.String())
	}
	if _, err := os.Stat(filepath.Join(trial, "trace.json")); !os.IsNotExist(err) {
		t.Errorf("trace.json beside an untraced attempt: %v\n%s", err, out.String())
	}
	if _, err := os.Stat(filepath.Join(trial, "attempts", "2", "trajectory.yaml")); err != nil {
		t.Errorf("no second attempt: %v\n%s", err, out.String())
	}
	if _, err := os.Stat(filepath.Join(trial, "attempts", "1", "trace.json")); err != nil {
		t.Errorf("the traced attempt's own trace.json went: %v", err)
	}
}
