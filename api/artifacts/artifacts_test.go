package artifacts

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
)

func TestSegment(t *testing.T) {
	cases := map[string]string{
		"shop_orders_02": "shop_orders_02",
		"../../etc":      ".._.._etc",
		"a/b":            "a_b",
		"..":             "_",
		".":              "_",
		"":               "_",
		"tâche 1":        "t_che_1",
	}
	for in, want := range cases {
		if got := Segment(in); got != want {
			t.Errorf("Segment(%q) = %q, want %q", in, got, want)
		}
	}
	if d := Dir("/r", "../x", 3); d != "/r/trials/.._x/3" {
		t.Errorf("Dir = %q", d)
	}
}

func sample() *Attempt {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	return &Attempt{
		TrialID: "t:0", TaskID: "t", TrialIndex: 0, AttemptNumber: 1,
		Outcome: "Passed", TerminationReason: "agent_done", Turns: 1, StartTime: at, EndTime: at.Add(2 * time.Second),
		Messages: []Message{{Message: task.Message{Role: "system", Content: "p"}, Timestamp: at}},
		ToolCalls: []task.RecordedToolCall{
			{CallID: "a", ToolName: "x", Status: task.ToolCallSuccess, LatencySeconds: 0.5, Arguments: json.RawMessage(`{"k":1}`)},
			{CallID: "b", ToolName: "x", Status: task.ToolCallTimeout, LatencySeconds: 1.5, Arguments: json.RawMessage(`{}`)},
		},
		Grade: &runnerpb.Grade{Score: 0, Components: &runnerpb.GradeComponents{StateChecks: 0, TranscriptRules: -1, LlmJudge: -1, CustomChecks: -1},
			Reasons: "State: 1 modified", StateDiffJson: "not json",
			CustomChecks: []*runnerpb.CustomCheckResult{{CheckName: "c", Status: "failed"}}},
		GradedBy: "runner",
	}
}

func TestGradeDoc(t *testing.T) {
	a := sample()
	g, err := gradeDoc(a)
	if err != nil {
		t.Fatal(err)
	}
	if g.StateDiff != nil || g.StateDiffJSON != "not json" {
		t.Fatalf("a non-JSON diff must be kept verbatim: %+v", g)
	}
	b, err := yaml.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	// Nested results keep their zero fields (message "", score 0): a check
	// without a verdict must not look like a failed one or vice versa.
	for _, want := range []string{"score: 0\n", "binary_pass: false\n", "state_checks: 0\n", "- check_name: c\n", "  status: failed\n", "  score: 0\n", "  message: \"\"\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("grade.yaml lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "transcript_rules") {
		t.Errorf("unevaluated component written:\n%s", s)
	}
	a.Grade.StateDiffJson = `{"modified":[{"table":"orders"}]}`
	g, _ = gradeDoc(a)
	if string(g.StateDiff) != a.Grade.StateDiffJson || g.StateDiffJSON != "" {
		t.Fatalf("JSON diff not decoded: %+v", g)
	}
}

func TestMetricsToolUsage(t *testing.T) {
	m := metricsDoc(sample())
	if len(m.ToolUsage) != 1 || m.ToolUsage[0] != (toolUsage{ToolName: "x", CallCount: 2, SuccessCount: 1, ErrorCount: 1, TotalDurationS: 2}) {
		t.Fatalf("tool usage = %+v", m.ToolUsage)
	}
	if m.Latency.TotalS != 2 {
		t.Fatalf("total = %g", m.Latency.TotalS)
	}
}

// TestMetricsReadsBackWhatWriteWrote holds the report's reading type to the
// file the host writes: every key written decodes strictly into Metrics,
// with the values it was written from.
func TestMetricsReadsBackWhatWriteWrote(t *testing.T) {
	a := sample()
	a.AgentUsage = Usage{Calls: 2, PromptTokens: 10, CompletionTokens: 5, ReasoningTokens: 1, CostUSD: 0.25}
	a.JudgeUsage = Usage{Calls: 1, PromptTokens: 3, CostUSD: 0.5}
	dir, err := Write(t.TempDir(), a)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	var got Metrics
	if err := yaml.UnmarshalStrict(data, &got); err != nil {
		t.Fatalf("metrics.yaml does not decode strictly into Metrics: %v\n%s", err, data)
	}
	if want := metricsDoc(a); !reflect.DeepEqual(got, want) {
		t.Fatalf("read back\n%+v\nwant\n%+v", got, want)
	}
	if got.Tokens.TotalTokens != 18 || got.Tokens.TotalCostUSD != 0.75 {
		t.Fatalf("totals = %d tokens, %g USD", got.Tokens.TotalTokens, got.Tokens.TotalCostUSD)
	}
}

func TestWriteRefusesBadInputAndWritesAtomically(t *testing.T) {
	if _, err := Write("", sample()); err == nil || err.Error() != "write artifacts: empty root directory" {
		t.Fatalf("empty root: %v", err)
	}
	if _, err := Write(t.TempDir(), nil); err == nil || err.Error() != "write artifacts: nil attempt" {
		t.Fatalf("nil attempt: %v", err)
	}
	// A root that is a file: MkdirAll fails and says where.
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(f, sample()); err == nil || !strings.Contains(err.Error(), `write artifacts of trial "t:0"`) {
		t.Fatalf("file root: %v", err)
	}
	root := t.TempDir()
	dir, err := Write(root, sample())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{TrajectoryFile, GradeFile, MetricsFile} {
		for _, d := range []string{dir, AttemptDir(root, "t", 0, 1)} {
			if _, err := os.Stat(filepath.Join(d, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A later attempt without a grade removes the top-level grade.yaml but
	// keeps attempt 1's.
	a := sample()
	a.AttemptNumber, a.Grade, a.Outcome = 2, nil, "InfraFailed"
	if _, err := Write(root, a); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, GradeFile)); !os.IsNotExist(err) {
		t.Fatalf("stale grade.yaml at the top level: %v", err)
	}
	if _, err := os.Stat(filepath.Join(AttemptDir(root, "t", 0, 1), GradeFile)); err != nil {
		t.Fatalf("attempt 1's grade.yaml is gone: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Fatalf("temporary file %s left behind", e.Name())
		}
	}
}

func TestWriteFileAtomicReplaces(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f.yaml")
	for _, content := range []string{"one\n", "two\n"} {
		if err := WriteFileAtomic(p, []byte(content)); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil || string(b) != content {
			t.Fatalf("read %q, %v; want %q", b, err, content)
		}
	}
	if err := WriteFileAtomic(filepath.Join(t.TempDir(), "missing", "f"), nil); err == nil || !strings.HasPrefix(err.Error(), "write ") {
		t.Fatalf("missing dir: %v", err)
	}
}
