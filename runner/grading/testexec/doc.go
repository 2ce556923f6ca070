// Package testexec runs the verifier of a grading_method: test_execution trial
// (runner-protocol.md): the task's command in the trial's work directory, in its own
// process group with a minimal environment (PATH, HOME, LANG, TRIAL_ID, REWARD_FILE),
// a timeout (timeout_s, default DefaultTimeout), the runner's tool rlimits and a
// kept-output cap. A reward file left before the run is removed first, so only the
// verifier's verdict counts; a reward file it writes must hold a number in [0, 1] and
// is the score (garbage is an error naming the file and the content); with no reward
// file, exit code 0 scores 1.0 and any other 0.0. A verifier that cannot start, times
// out or dies by a signal is an error: its verdict is unknown, not 0.0. The grader
// (runner/grading, testexec.go) builds the Grade from the Result.
//
// Imports: api/task, runner/grading/gradefmt, runner/proc and the standard library.
package testexec
