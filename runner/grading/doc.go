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
// grading_method: test_execution (testexec.go, verifier_sandbox.go) dispatches after step
// 0. The verifier never runs from the agent's files, which the agent's tools write: each
// grade builds a sandbox under the runner's verifier directory (Env.VerifierSite, beside
// the file tools' root and out of their reach), copies the agent's files into it (links
// as links, never followed; no FIFOs or devices), then lays the task's test files over
// them as registered in initial_state.filesystem: tests/ is replaced whole, and so is
// every registered file the command names (its script). A test the agent rewrote,
// deleted or added, or a symlink in their place, is the task's again; the rest of the
// copy is the agent's work, which the verifier judges. reward_file resolves inside the
// sandbox (relative to its root; an absolute name such as upstream's
// /logs/verifier/reward.txt is the same name under it), so RegisterTrial refuses one
// with a ".." element (CheckTestExecution); a reward file the agent left at that path is
// removed, the directories above it are made real, and every file operation of the
// runner in the sandbox goes through an os.Root. The verifier runs with the sandbox as
// its working directory and HOME, REWARD_FILE and TEST_DIR (Terminal-Bench's) naming
// its paths, in its own process group with a minimal environment, a timeout (timeout_s,
// default 300 s) and a kept-output cap. Its verdict is final when its main process
// exits: the group is then killed and reaped whole (proc.KillGroup), and its output,
// read through a pipe the runner owns, only for a moment longer, so a child holding it
// neither delays nor loses the grade. The sandbox is removed after the grade. A reward
// file it writes must hold a number in [0, 1] and is the score (garbage fails the RPC
// naming the file and the content); with no reward file, exit code 0 scores 1.0 and any
// other 0.0. A verifier that cannot start, times out or dies by a signal fails the RPC:
// its verdict is unknown, not 0.0.
//
// Imports: api/canonical, api/llm, api/runnerpb, api/task, dbservice/client, runner/proc
// (the verifier's limits), the standard library, cel.dev/cel-go,
// github.com/go-logr/logr and github.com/theory/jsonpath. It never imports the runner.
package grading
