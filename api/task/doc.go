// Package task holds the wire types shared by the host, the runner and the DB
// service: TaskDescription, TrialSpec, the grading configuration, the transcript
// wire format and the runner's tool-call record.
//
// Decoding is strict (see Decode*): an unknown key at any depth is an error naming
// its JSON path, and closed sets are checked while decoding, because a typo that
// silently drops a check would grade a trial against rules nobody wrote.
//
// Tables, records and tool arguments stay json.RawMessage so number literals keep
// their int/float identity all the way to the canonical hash.
//
// Custom checks are CEL expressions: CompileCustomCheck and CustomCheckEnv are
// the one compiler, used at validation here and at grading by runner/grading.
//
// Imports: the standard library and cel.dev/cel-go.
package task

// EngineProtocolVersion is the wire-protocol version this engine speaks. v1 added
// ExecuteToolRequest.call_id; v2 dropped user_simulator.first_message and
// user_simulator.user_context from the trial spec.
const EngineProtocolVersion = 2
