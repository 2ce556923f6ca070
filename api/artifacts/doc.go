// Package artifacts writes one attempt's files in Tolokaforge's layout:
//
//	<root>/trials/<task_id>/<trial_index>/trajectory.yaml   the latest attempt
//	<root>/trials/<task_id>/<trial_index>/grade.yaml
//	<root>/trials/<task_id>/<trial_index>/metrics.yaml
//	<root>/trials/<task_id>/<trial_index>/attempts/<n>/...  every attempt's own copy
//
// The top level always describes the trial's latest attempt, so a consumer
// that walks trials/*/* counts each trial once however often it was retried
// (the Python host double-counted retried trajectories); attempts/<n>/ keeps
// the history of why earlier attempts ended. Files go to a Sink: a local
// directory (DirSink: a temporary file renamed into place) or a blob store
// (blobstore: an object committed whole), so a reader sees the old file or
// the new one, never half of one.
//
// trajectory.yaml writes each event's timeline position (task.TimelinePositions,
// the numbering the runner's trace checks and custom checks use): a position on
// each user and assistant message, and on each tool call, both in its message's
// tool_calls and in the recorded tool_calls. A trace check's matched_positions in
// grade.yaml name these events.
//
// It holds no secrets by construction: it only receives the transcript, the
// tool-call record, the grade and figures, never a model config's key.
//
// Imports: api/result, api/runnerpb, api/task, api/v1alpha1, the standard library and
// sigs.k8s.io/yaml. Never
// controllers/host (host imports it).
package artifacts
