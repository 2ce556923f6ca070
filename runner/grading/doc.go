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
//     runner's tool-call record into one timeline by call_id (runner/grading/timeline);
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
// The LLM rubric judge (eval_judge.go here: when it runs, the ledger, the weight share
// that makes its failure fail the RPC) calls its model through runner/grading/judge:
// the prompt, the small Model interface and its api/llm implementation, the key file
// in the runner's secrets directory (never the environment) and the answer's
// validation against the rubric.
//
// grading_method: test_execution (testexec.go) dispatches after step 0: the verifier
// runs through runner/grading/testexec (its own process group, a minimal environment,
// a timeout, the tool rlimits, a kept-output cap; the reward file or else the exit code
// is the score); here it becomes a Grade with every component not evaluated. A
// verifier that cannot start, times out or dies by a signal fails the RPC: its verdict
// is unknown, not 0.0.
//
// Layout: this package keeps the algorithm (grader.go, preflight.go, resolve.go,
// ledger.go, fold.go, reasons.go), the evaluator registry and the evaluators
// themselves (eval_*.go, with the state checks' replay.go, diff.go, unified.go,
// compare.go, pathglob.go and the trace checks' trace_select.go and trace_kinds.go).
// Its subpackages never import it: runner/grading/timeline (the joined timeline),
// runner/grading/judge (the rubric judge), runner/grading/testexec (the verifier run)
// and runner/grading/gradefmt (the score rounding and formats they all share).
//
// Imports: api/canonical, api/llm, api/runnerpb, api/task, dbservice/client,
// runner/grading/gradefmt, runner/grading/judge, runner/grading/testexec,
// runner/grading/timeline, runner/proc (the verifier's limits), the standard library,
// cel.dev/cel-go, github.com/go-logr/logr and github.com/theory/jsonpath. It never
// imports the runner.
package grading
