// Package runner is the Tolokaforge runner: the gRPC server of
// tolokaforge.runner.RunnerService (api/runnerpb) and grpc.health.v1, its trial
// registry, tool reconstruction (builtin tools and MCP servers), bounded tool
// execution with the trial's ordered tool-call record, state access over the
// trial's DB service, health reporting and graceful drain. GradeTrial delegates
// to an injected grading.Grader through the grading.Env this package implements.
//
// Every RPC of one trial runs under that trial's lock, so a trial's calls,
// resets, grading and cleanup never interleave; different trials share nothing
// but the registry map.
//
// Errors are in-band as the spec says (success=false + error, ExecutionStatus);
// gRPC status codes are used only for an empty call_id or a reused one
// (INVALID_ARGUMENT) and while draining (UNAVAILABLE).
//
// MCP servers are caches of the DB service, which stays the truth: the DB's
// tables are pushed into a server before a call whenever the DB moved, and a
// call's changed tables are written back after it (for a tool declared
// category "read", lazily: before anything next reads the DB). Table reads by
// builtin tools are cached per DB version, which only the runner moves.
//
// Imports: api/runnerpb, api/task, dbservice/client, api/canonical,
// runner/tools (+ builtin, mcpclient), runner/grading (the Env/Grader contract;
// Main's default Grader), grpc, logr and the standard library.
package runner
