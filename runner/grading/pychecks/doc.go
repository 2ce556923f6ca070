// Package pychecks runs a task's Python custom-check suite: a pack's checks.py
// written against Tolokaforge's tolokaforge.core.grading.checks_interface (@init
// with interface_version, @check, CheckPassed / CheckFailed / CheckSkipped, a
// CheckContext with the transcript, its tool calls, the initial and final states
// and the task), unmodified.
//
// The runner is standard-library Python in this package (py/checkrunner.py, with
// the checks_interface and checks_helpers modules it provides under py/tolokaforge),
// embedded and written to a scratch directory of the trial's for each run, so the
// runner image needs nothing but an interpreter. It starts as its own process
// group through runner/proc's limits wrapper, with a minimal environment, reads
// the request (the suite's paths, the CheckContext as JSON) on stdin and reports
// one JSON line per check on its own stdout (what the suite prints goes to
// stderr). The suite's timeout_seconds [30] bounds the whole run, import
// included; past it the group is killed, the checks that finished keep their
// results and the others are error results named in a *SuiteError. A check that
// raises or returns something else than a result is an error result and the rest
// still run; a suite that cannot be imported (the missing module named), declares
// an unsupported interface_version, defines no check or whose @init raises is a
// *SuiteError. Grading (runner/grading, eval_custom.go) decides what each means for
// the score.
//
// Tables turns the DB service's tables (lists of records) into the states a suite
// reads, rebuilding the tables a pack wrote as dicts keyed by id.
//
// Imports: api/runnerpb, api/task, runner/proc and the standard library.
package pychecks
