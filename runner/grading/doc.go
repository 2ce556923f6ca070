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
//     path, replay.go; the state diff, diff.go), JSONPath, DB probes, transcript rules;
//  4. the ledger: every populated scored key evaluated or skipped with a reason
//     (ledger.go);
//  5. the fold by combine_method (fold.go) and the reasons (reasons.go).
//
// Every error Grade returns has, as its Error(), exactly the GradeTrialResponse.error
// text of its table row; the runner forwards it verbatim.
//
// trace_checks, llm_judge and custom_checks have no evaluator yet: registry.go holds a
// placeholder for each that files only the spec's recorded skips, so a pack populating
// them otherwise fails through the ledger, naming the keys.
//
// This package imports the standard library, api/task, api/runnerpb, dbservice/client,
// api/canonical, logr and github.com/theory/jsonpath. It never imports the runner.
package grading
