package result_test

import (
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"tolokaforge.io/operator/api/result"
	"tolokaforge.io/operator/api/runnerpb"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// The Trial status's grade (moved with result.Summary from controllers).

func TestGradeSummaryKeepsNotEvaluatedAbsent(t *testing.T) {
	g := &runnerpb.Grade{
		BinaryPass: false, Score: 0.4,
		Reasons:       "State: hash mismatch (orders: 1 added) | Transcript: all 3 rules passed",
		StateDiffJson: `{"tables":{},"summary":"hash mismatch (orders: 1 added)","diff_lines":["-a","+b"]}`,
		Components: &runnerpb.GradeComponents{
			StateChecks: 0, TranscriptRules: 1, LlmJudge: -1, CustomChecks: -1, TraceChecks: ptr.To(0.5),
		},
	}
	want := &evalv1.GradeSummary{
		Score: 0.4, BinaryPass: false, Attempt: 2,
		Reasons:     "State: hash mismatch (orders: 1 added) | Transcript: all 3 rules passed",
		DiffSummary: "hash mismatch (orders: 1 added)",
		Components: evalv1.GradeComponents{
			StateChecks: ptr.To(0.0), TranscriptRules: ptr.To(1.0), TraceChecks: ptr.To(0.5),
		},
	}
	if diff := cmp.Diff(want, result.Summary(g, 2)); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
	// trace_checks has explicit presence: unset is absent, not 0.
	g.Components.TraceChecks = nil
	if s := result.Summary(g, 2); s.Components.TraceChecks != nil {
		t.Errorf("absent trace_checks became %v", *s.Components.TraceChecks)
	}
	if result.Summary(nil, 1) != nil {
		t.Error("nil grade gave a summary")
	}
	nan := result.Summary(&runnerpb.Grade{Score: math.NaN()}, 1)
	if nan.Score != 0 {
		t.Errorf("NaN score = %v", nan.Score)
	}
}

func TestGradeSummaryCarriesTheJudgeOutcome(t *testing.T) {
	for _, c := range []struct {
		status runnerpb.JudgeStatus
		want   evalv1.JudgeStatus
	}{
		{runnerpb.JudgeStatus_JUDGE_STATUS_UNSPECIFIED, ""},
		{runnerpb.JudgeStatus_JUDGE_STATUS_COMPLETED, evalv1.JudgeCompleted},
		{runnerpb.JudgeStatus_JUDGE_STATUS_ERRORED, evalv1.JudgeErrored},
	} {
		if got := result.Summary(&runnerpb.Grade{JudgeStatus: c.status}, 1).JudgeStatus; got != c.want {
			t.Errorf("%v: judgeStatus = %q, want %q", c.status, got, c.want)
		}
	}
}

func TestDiffSummary(t *testing.T) {
	for in, want := range map[string]string{
		"":                         "",
		`{"summary":"x: 1 added"}`: "x: 1 added",
		`{"tables":{}}`:            "",
		`not json`:                 "",
		`["summary"]`:              "",
		`{"summary":42}`:           "",
	} {
		if got := result.Summary(&runnerpb.Grade{StateDiffJson: in}, 1).DiffSummary; got != want {
			t.Errorf("diff summary of %q = %q, want %q", in, got, want)
		}
	}
}

func TestTruncateKeepsUTF8(t *testing.T) {
	s := strings.Repeat("é", 10) // 2 bytes each
	got := result.Truncate(s, 5)
	if !utf8.ValidString(got) || got != "éé…" {
		t.Errorf("truncate = %q", got)
	}
	if result.Truncate("short", 10) != "short" {
		t.Error("short string changed")
	}
}
