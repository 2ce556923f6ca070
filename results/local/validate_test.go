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
	all := func(state, transcript, judge, custom, trace float64) *runnerpb.GradeComponents {
		return &runnerpb.GradeComponents{StateChecks: state, TranscriptRules: transcript, LlmJudge: judge, CustomChecks: custom, TraceChecks: &trace}
	}
	state := []string{"state_checks"}
	every := []string{"state_checks", "transcript_rules", "trace_checks", "llm_judge", "custom_checks"}
	reasons := "State: hash match | JSONPath: all 7 checks passed | Transcript: 5 of 9 rules failed: x"
	cases := []struct {
		name       string
		outcome    evalv1.AttemptOutcome
		message    string
		grade      *runnerpb.Grade
		strict     bool
		configured []string
		noGolden   bool
		pass       bool
		why        string
	}{
		{"state 1, score 1", evalv1.OutcomePassed, "", &runnerpb.Grade{Score: 1, Components: comp(1)}, false, state, false, true,
			"golden path verified; every configured component graded: state_checks=1"},
		{"every component grades, transcript below 1", evalv1.OutcomeFailed, "", &runnerpb.Grade{Score: 0.8333, Components: all(1, 0.5, 1, 1, 1), Reasons: reasons}, false, every, false, true,
			"golden path verified; every configured component graded: state_checks=1, transcript_rules=0.5, trace_checks=1, llm_judge=1, custom_checks=1; " +
				"below 1 on the oracle's transcript (only --strict requires 1): Transcript: 5 of 9 rules failed: x"},
		{"strict wants the whole grade", evalv1.OutcomePassed, "", &runnerpb.Grade{Score: 0.8333, Components: all(1, 0.5, 1, 1, 1), Reasons: reasons}, true, every, false, false,
			"--strict: the grade is below 1.0: " + reasons},
		{"state below 1", evalv1.OutcomePassed, "", &runnerpb.Grade{Score: 0.6, Components: comp(0.4), Reasons: "State: hash mismatch"}, false, state, false, false,
			"the golden path does not reach the expected state: State: hash mismatch"},
		{"no state checks", evalv1.OutcomePassed, "", &runnerpb.Grade{Score: 1, Components: comp(-1), Reasons: "Transcript: all 1 rules passed"}, false, nil, false, false,
			"the golden path decides nothing: the task has no state checks to replay it against; reasons: Transcript: all 1 rules passed"},
		{"judge errored without a share", evalv1.OutcomePassed, "", &runnerpb.Grade{Score: 1, Components: comp(1), JudgeStatus: runnerpb.JudgeStatus_JUDGE_STATUS_ERRORED,
			Reasons: "State: hash match | Judge: errored, no score"}, false, []string{"state_checks", "llm_judge"}, false, false,
			"configured components did not grade the oracle's transcript: llm_judge not scored (JUDGE_STATUS_ERRORED); reasons: State: hash match | Judge: errored, no score"},
		{"trace checks never scored", evalv1.OutcomePassed, "", &runnerpb.Grade{Score: 1, Components: comp(1), Reasons: "State: hash match"}, false, []string{"state_checks", "trace_checks"}, false, false,
			"configured components did not grade the oracle's transcript: trace_checks not scored (skipped or errored; see the reasons); reasons: State: hash match"},
		{"judge fails the RPC", evalv1.OutcomeGradingFailed, "Grading error: llm_judge: JUDGE_STATUS_ERRORED (no score): judge call failed", nil, false, every, false, false,
			"a grading component cannot grade the oracle's transcript (llm_judge): Grading error: llm_judge: JUDGE_STATUS_ERRORED (no score): judge call failed"},
		{"custom check suite fails", evalv1.OutcomeGradingFailed, "Grading error: Custom checks: the suite failed to run — check \"x\"", nil, false, every, false, false,
			"a grading component cannot grade the oracle's transcript (custom_checks): Grading error: Custom checks: the suite failed to run — check \"x\""},
		{"no grade", evalv1.OutcomeInvalid, "tool x is unknown", nil, false, state, false, false, "the oracle's trial ended Invalid (InvalidTask): tool x is unknown"},
		{"no golden path: graded, not solved", evalv1.OutcomeFailed, "", &runnerpb.Grade{Score: 0.1333, Components: all(0, 0.3333, -1, -1, -1), Reasons: "JSONPath: 0 of 2 checks passed"}, false, []string{"state_checks", "transcript_rules"}, true, true,
			"no golden path to verify (the task declares no golden_actions): the oracle's run registered, ran and was graded by every configured component (state_checks=0, transcript_rules=0.3333); it scored 0.1333 (only --strict requires 1): JSONPath: 0 of 2 checks passed"},
		{"no golden path, test_execution", evalv1.OutcomeFailed, "", &runnerpb.Grade{Score: 0, Components: comp(-1), Reasons: "Test execution: score=0"}, false, nil, true, true,
			"no golden path to verify (the task declares no golden_actions): the oracle's run registered, ran and was graded; it scored 0 (only --strict requires 1): Test execution: score=0"},
		{"no golden path, strict", evalv1.OutcomeFailed, "", &runnerpb.Grade{Score: 0, Components: comp(-1), Reasons: "Test execution: score=0"}, true, nil, true, false,
			"--strict: no golden path to verify and the oracle's run scored below 1.0: Test execution: score=0"},
		{"no golden path, a component did not grade", evalv1.OutcomePassed, "", &runnerpb.Grade{Score: 1, Components: comp(1), Reasons: "State: hash match"}, false, []string{"state_checks", "trace_checks"}, true, false,
			"configured components did not grade the oracle's transcript: trace_checks not scored (skipped or errored; see the reasons); reasons: State: hash match"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := judge(Verdict{}, tc.outcome, "InvalidTask", tc.message, tc.grade, tc.strict, tc.configured, !tc.noGolden)
			if v.Pass != tc.pass || v.Why != tc.why {
				t.Fatalf("pass=%v why=%q\nwant pass=%v why=%q", v.Pass, v.Why, tc.pass, tc.why)
			}
		})
	}
}
