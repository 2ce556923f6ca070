// Package trialrun is `tolokaforge trial run`: one trial on a laptop, no
// cluster. It starts a DB service and a runner in-process on loopback
// (StartStack), drives the trial with host.RunAttempt, the same loop the
// Trial controller uses, prints a line per turn and the grade, and writes
// the artifacts.
//
// Imports: api/..., controllers/host and its subpackages, runner (server,
// client, grading) and dbservice, to embed them; never controllers.
package trialrun
