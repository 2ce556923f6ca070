// Package grading implements GradeTrial's grading algorithm (spec: runner-protocol.md,
// "The Runner executes this grading algorithm", the GradeTrial error table, the
// accounted-keys ledger, the component segments and the recorded skips; the grading
// block's keys are in grading-config.md).
//
// Grade runs in a fixed order, and nothing before the hash step touches the trial's
// database:
//
//  0. the request: termination_reason against the enum, grading_components against the
//     component names, the transcript through api/task's wire decoder joined with the
//     runner's tool-call record into one timeline by call_id (timeline.go);
//  1. golden-action resolution against the registered agent tools (resolve.go);
//  2. the pre-flight refusals of the error table (preflight.go);
//  3. the component phase: evaluators behind one interface, one file each (eval_*.go),
//     registered by component in registry.go — hash (golden replay with restore on every
//     path, replay.go; the state diff, diff.go), JSONPath, DB probes, transcript rules,
//     trace checks, the LLM judge and custom checks;
//  4. the ledger: every populated scored key evaluated or skipped with a reason
//     (ledger.go);
//  5. the fold by combine_method (fold.go) and the reasons (reasons.go).
//
// Every error Grade returns has, as its Error(), exactly the GradeTrialResponse.error
// text of its table row; the runner forwards it verbatim.
//
// trace_checks (eval_trace.go; the constraint kinds in trace_kinds.go, event selection
// in trace_select.go) scores temporal constraints over the timeline: each route is the
// weighted mean of its decided scored constraints, and a failed gate fails the trial
// whatever the score. custom_checks (eval_custom.go) runs CEL expressions over db,
// timeline, termination_reason and task, compiled by api/task's function that validated
// them at RegisterTrial, each under a cost limit and a timeout (WithCELLimits); a check
// that errors fails the RPC under fail_on_error (the default), otherwise it leaves the
// component unscored.
//
// The LLM rubric judge (eval_judge.go, judge_prompt.go) calls its model through api/llm,
// the project's one OpenAI-compatible client, behind the small JudgeModel interface.
// One judge call is one billed provider round trip (api/llm retries refused tries inside
// it and bills the answered one once). Its key is never read from the environment:
// TrialSpec.judge.api_key_env keeps its wire name but names a file in the runner's
// secrets directory (--secrets-dir, DefaultSecretsDir), where the operator mounts the
// Trial's judge Secret read-only with only that key. Decisions the spec leaves open: no
// read-only judge tools yet (llm_judge.tools is refused at validation and at
// RegisterTrial, since nothing can yet guarantee a tool is read-only); an invalid answer
// is not asked again (max_calls >= 1 is therefore never the limit); a graded criterion
// with a bar is met when its score reaches the bar, without one the judge's own met
// decides; a binary criterion's met must agree with its 0/1 score.
//
// grading_method: test_execution (testexec.go) dispatches after step 0: the verifier
// runs in the trial's work directory in its own process group with a minimal
// environment, a timeout (timeout_s, default 300 s) and a kept-output cap. A reward file
// left before the run is removed first, so only the verifier's verdict counts; a reward
// file it writes must hold a number in [0, 1] and is the score (garbage fails the RPC
// naming the file and the content); with no reward file, exit code 0 scores 1.0 and any
// other 0.0. A verifier that cannot start, times out or dies by a signal fails the RPC:
// its verdict is unknown, not 0.0.
//
// Imports: api/canonical, api/llm, api/runnerpb, api/task, dbservice/client, runner/proc
// (the verifier's limits), the standard library, cel.dev/cel-go,
// github.com/go-logr/logr and github.com/theory/jsonpath. It never imports the runner.
package grading
