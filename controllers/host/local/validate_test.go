package local

import (
	"testing"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"

	"tolokaforge.io/operator/api/runnerpb"
)

func TestJudge(t *testing.T) {
	comp := func(state float64) *runnerpb.GradeComponents {
		return &runnerpb.GradeComponents{StateChecks: state, TranscriptRules: -1, LlmJudge: -1, CustomChecks: -1}
	}
	reasons := "State: hash match | JSONPath: all 7 checks passed | Transcript: 5 of 9 rules failed: x"
	cases := []struct {
		name    string
		outcome evalv1.AttemptOutcome
		grade   *runnerpb.Grade
		strict  bool
		pass    bool
		why     string
	}{
		{"state 1, score 1", evalv1.OutcomePassed, &runnerpb.Grade{Score: 1, Components: comp(1)}, false, true, "golden path verified"},
		{"state 1, transcript below", evalv1.OutcomePassed, &runnerpb.Grade{Score: 0.8333, Components: comp(1), Reasons: reasons}, false, true,
			"golden path verified; components a golden replay cannot exercise (transcript, judge) scored below 1: Transcript: 5 of 9 rules failed: x"},
		{"strict wants the whole grade", evalv1.OutcomePassed, &runnerpb.Grade{Score: 0.8333, Components: comp(1), Reasons: reasons}, true, false,
			"--strict: the grade is below 1.0: " + reasons},
		{"state below 1", evalv1.OutcomePassed, &runnerpb.Grade{Score: 0.6, Components: comp(0.4), Reasons: "State: hash mismatch"}, false, false,
			"the golden path does not reach the expected state: State: hash mismatch"},
		{"no state checks", evalv1.OutcomePassed, &runnerpb.Grade{Score: 1, Components: comp(-1), Reasons: "Transcript: all 1 rules passed"}, false, false,
			"the golden path decides nothing: the task has no state checks to replay it against; reasons: Transcript: all 1 rules passed"},
		{"no grade", evalv1.OutcomeInvalid, nil, false, false, "the oracle's trial ended Invalid (InvalidTask): tool x is unknown"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := judge(Verdict{}, tc.outcome, "InvalidTask", "tool x is unknown", tc.grade, tc.strict)
			if v.Pass != tc.pass || v.Why != tc.why {
				t.Fatalf("pass=%v why=%q\nwant pass=%v why=%q", v.Pass, v.Why, tc.pass, tc.why)
			}
		})
	}
}
