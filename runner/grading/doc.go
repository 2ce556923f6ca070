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
// component unscored. custom_checks.file adds a Python suite written against
// Tolokaforge's checks_interface, run by runner/grading/pychecks from the task's
// tool_artifacts (Env.PythonSite) over upstream's CheckContext: the transcript with its
// tool calls and results, the whole initial (registered) and final (current) tables,
// dict-shaped pack tables rebuilt as dicts. Its checks join the CEL checks' weighted
// mean at weight 1 with their own scores (upstream's partial credit); a Python check
// that raises is an error scored 0, not excluded, since the agent shapes the state it
// reads; a suite that outruns its timeout_seconds scores 0 for every check that did
// not finish (the whole suite, if it hung before its checks loaded), whatever
// fail_on_error says, since a hang is as much the state's doing as a crash; a suite
// that cannot run to the end otherwise (import, interface_version, @init, its runner
// dying) is a suite failure under the fail_on_error rule. The suite imports from the
// read-only copy of the tool_artifacts taken at RegisterTrial, never from the tools'
// writable working directory.
//
// The LLM rubric judge (eval_judge.go here: when it runs, the ledger, the weight share
// that makes its failure fail the RPC) calls its model through runner/grading/judge:
// the prompt, the small Model interface and its api/llm implementation, the key file
// in the runner's secrets directory (never the environment), the loop over its tool
// calls and the answer's validation against the rubric. The judge's tools
// (llm_judge.tools) are agent tools of category read, resolved and run here through
// Env.Replay against the trial's state under a pre_judge snapshot that is restored,
// hash-checked, after the judge on every path (a restore that fails fails the grade
// whatever the judge's share).
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
// A terminal task (TaskDescription.environment) is graded in its own container
// instead (envverify.go), through Env.Environment, its exec agent: unless
// environment.verifier.keep_agent_processes, every process the agent left is
// killed; the verifier directory (/logs/verifier) is made empty and real (a
// planted reward goes, a symbolic link is replaced, never followed); the task's
// tests, as registered in tool_artifacts (environment.verifier.tests: a folder's
// contents, a file by its base name), replace /tests whole; test_execution.command
// runs as argv with a clean environment (environment.verifier.env), as the
// verifier's user, from environment.workdir (else /tests), for timeout_s (default
// 600 s); every process is killed again; then reward.json (named numbers in [0, 1]:
// "reward" is the score when named, else their mean; the others are components),
// else reward.txt (one number in [0, 1]), else, with parser pytest, pytest's -rA
// summary (1 when at least one test ran and every one passed) is the verdict. A
// timeout scores 0 (the agent's outcome). An exec agent that does not answer, a
// failed upload, or a reward that is missing, unparseable or out of range is an
// infrastructure failure: its error starts with task.EnvironmentErrorPrefix
// ("Environment error: "), so the host can tell it from a grade and from the
// grader's own errors.
//
// Layout: this package keeps the algorithm and test execution (testexec.go,
// verifier_sandbox.go: the verifier and its sandbox grew together with the runner's
// directory layout, so they stay with the Env that names it); also (grader.go, preflight.go, resolve.go,
// ledger.go, fold.go, reasons.go), the evaluator registry and the evaluators
// themselves (eval_*.go, with the state checks' replay.go, diff.go, unified.go,
// compare.go, pathglob.go and the trace checks' trace_select.go and trace_kinds.go).
// Its subpackages never import it: runner/grading/timeline (the joined timeline),
// runner/grading/judge (the rubric judge), runner/grading/pychecks (the Python check
// runner) and runner/grading/gradefmt (the score rounding and formats they all share).
//
// Imports: api/canonical, api/execagentpb, api/llm, api/runnerpb, api/task, dbservice/client,
// runner/grading/gradefmt, runner/grading/judge, runner/grading/pychecks,
// runner/grading/timeline, runner/proc, runner/tools (the whole-output sink the
// environment verifier fills), the standard library, cel.dev/cel-go, github.com/go-logr/logr,
// github.com/theory/jsonpath, go.opentelemetry.io/otel, go.opentelemetry.io/otel/trace
// (a span per grading unit, observe.go) and google.golang.org/grpc (status codes). It
// never imports the runner.
package grading
