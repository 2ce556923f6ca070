// Package timeline joins a trial's transcript and the runner's tool-call record into
// one ordered list of events (grading-config.md, "Trace checks"): the one view of what
// happened that transcript rules, trace checks, custom checks and the LLM judge all
// read. Build reports any contradiction between the two views as the detail of a
// TimelineInconsistencyError; the grader turns it into the error table's row.
//
// Imports: api/task and the standard library.
package timeline
