// Package result is the one reading of a trial's result. Every role and
// command that learns what a grade means reads it here: the Trial status
// writer (Summary), the artifacts writer (NewFile, grade.yaml), the report
// and its trial pages, regrade and `trial run`'s printing. A grade reads the
// same from the runner's response (FromWire), from the grade.yaml written
// for it (ParseFile, File.Grade) and, as far as status keeps it, from a
// Trial's status (FromStatus).
//
// A component's status comes from structured fields only: a score makes it
// scored (IsNotEvaluated is the one rule for the wire's sentinel), the
// judge's ERRORED status or a custom check result "error" without a score
// makes it errored, custom check results that all skipped make it skipped,
// and reasons without any of those leave it not evaluated. The reasons
// segments are attributed to components by the spec's segment heads, the
// only place the wire carries them; JSONPath's count and test execution's
// score, which have no wire field, are read from their segments here and
// nowhere else.
//
// Record is who ran a trial (namespace, Trial, campaign, agent, task, index,
// attempt): the host writes it into trajectory.yaml, and readers take it
// from there, never from folder names.
//
// Imports: api/runnerpb, api/task, api/v1alpha1, the standard library,
// google.golang.org/protobuf and sigs.k8s.io/yaml.
package result
