// Package host is the host of the runner protocol: it drives one attempt of a
// trial against a runner (RegisterTrial with the version lock, the agent loop,
// GradeTrial, CleanupTrial) and classifies how the attempt ended. The Trial
// controller and `tolokaforge trial run` both use RunAttempt, so a trial behaves
// the same on a cluster and on a laptop.
//
// The loop is one loop for every actor (oracle, LLM agent, scripted or LLM
// user): the user opens; each agent call is one turn; tool calls go to the
// runner in order under episode-unique call ids, the agent's with executor
// "agent" and the user's with executor "user"; results come back as role
// "tool" messages per the spec's status table. It ends with agent_done,
// user_stop, max_turns (these three reach GradeTrial), stuck_detected,
// timeout, error (graded 0 by the host), or rate_limit, api_error, trial_lost
// (infrastructure: the attempt is retried by the caller's policy).
//
// Infrastructure faults never reach the agent (infra.go): a runner call that
// fails at gRPC level, and a tool TIMEOUT or a grading error while the
// runner's HealthCheck reports its DB service unreachable, end the attempt
// InfraFailed (DBServiceUnavailable or RunnerUnavailable, told apart by that
// probe rather than by error texts), ungraded.
//
// Subpackage agents holds the actors (oracle, OpenAI-compatible agent and
// user simulator). The files an attempt leaves (trajectory.yaml, grade.yaml,
// metrics.yaml) are written through api/artifacts, the layout every reader
// shares; the in-process stack of `tolokaforge trial run` is results/local.
// Both agents and results/local import host, never the other way round.
//
// Each attempt is one OpenTelemetry trace (tracing.go): a root "attempt" span
// with register, turn, user turn, execute_tool, grade and cleanup spans under
// it, api/llm's chat spans under the turns, and the span context sent to the
// runner in each call's gRPC metadata (W3C trace context). Its id is
// AttemptResult.TraceID and trajectory.yaml's trace_id. With no tracer
// provider installed the spans are no-ops and nothing is sent.
//
// Imports: api/artifacts, api/llm, api/result, api/runnerpb, api/task, api/telemetry, api/v1alpha1,
// the standard library, github.com/go-logr/logr, go.opentelemetry.io/otel,
// go.opentelemetry.io/otel/trace and google.golang.org/grpc.
package host
