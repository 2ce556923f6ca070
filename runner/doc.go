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
// a gRPC status code answers only what has no in-band answer:
// INVALID_ARGUMENT for an empty call_id or one reused for a different call;
// UNAVAILABLE while draining, and when the trial's DB service cannot be
// reached during a tool call or RegisterTrial (an infrastructure fault: the
// host ends the attempt InfraFailed instead of showing the agent a transport
// error); UNAUTHENTICATED for a call without the trial's credential (auth.go);
// INTERNAL when a handler panicked (recovered, so the runner keeps serving).
//
// MCP servers are caches of the DB service, which stays the truth: the DB's
// tables are pushed into a server before a call whenever the DB moved, and a
// call's changed tables are written back after it (for a tool declared
// category "read", lazily: before anything next reads the DB). Table reads by
// builtin tools are cached per DB version, which only the runner moves.
//
// Python tools (tau_sync, mcp_async, and the tools of a .py mcp_server_script
// holding a TOOLS registry) run in one Python tool host per trial
// (runner/tools/pyhost), a cache of the DB service in the same way: reloaded
// when the DB moved, and a call's record-level changes written in one
// if_version-guarded PATCH per table (python.go).
//
// A terminal task (TaskDescription.environment) runs in its own container,
// which the manager starts per attempt with an exec agent as PID 1
// (runner/execagent): RegisterTrial needs env_endpoints.environment_url and
// the agent's token (in RegisterTrial's metadata,
// runnerpb.EnvironmentTokenMetadata, for that trial only; else
// Config.EnvironmentToken, --environment-token-env, which a --slot runner
// never uses), dials it and waits for its Health (environment.go); the task's bash,
// read_file, write_file and list_dir run there (runner/tools/envtools), never
// in the runner's filesystem. Once GradeTrial began, ExecuteTool on the trial
// answers ERROR ("the agent's turn is over") and the grader verifies in the
// container through grading.Env.Environment; ResetTrial is refused (the
// container cannot be reset in place).
//
// Observability (metrics.go, tracing.go): MetricsHandler serves the runner's
// Prometheus series (tool calls by tool, executor and status, tool and
// grading durations, Python host restarts, and the judge's api/llm series)
// on --metrics-bind-address, behind the auth token; with a TracerProvider
// (Main: OTEL_EXPORTER_OTLP_ENDPOINT, package api/telemetry) every RPC is a
// server span joined to the caller's trace.
//
// Imports: api/authn, api/canonical, api/execagentpb, api/llm (the judge's
// series), api/logging, api/runnerpb, api/task, api/telemetry,
// dbservice/client, runner/execagent/client,
// runner/grading (the Env/Grader contract; Main's default Grader),
// runner/grading/judge (the default --secrets-dir), runner/proc,
// runner/pyenv (an ImportError's pip advice rewritten), runner/tools,
// runner/tools/builtin, runner/tools/envtools, runner/tools/mcpclient,
// runner/tools/pyhost, the
// standard library, github.com/go-logr/logr,
// github.com/prometheus/client_golang,
// go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc,
// go.opentelemetry.io/otel, go.opentelemetry.io/otel/metric (its no-op),
// go.opentelemetry.io/otel/trace and google.golang.org/grpc.
package runner
