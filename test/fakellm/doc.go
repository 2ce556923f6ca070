// Package fakellm is a scripted stand-in for an OpenAI-compatible
// chat-completions provider: a real HTTP server on loopback that answers
// POST /v1/chat/completions (and /chat/completions) with replies from a
// script (content, tool calls, usage, injected 429/500 errors with
// Retry-After, delays) and records every request so tests can assert exactly
// what the model was sent. Scripts can be kept per model, so one server plays
// both the agent model and the user-simulator model. cmd/fakellm serves a
// script file from the command line.
//
// TraceSink (otlp.go) is an OTLP/gRPC trace receiver keeping what it is
// sent; a Server given one lists its spans at GET /otlp/traces, so the
// cluster's end-to-end tests reach the traces where they reach the model.
//
// It is a test harness; of the operator's own packages it uses only
// api/telemetry (the span store it shares with `trial run --trace`).
//
// Imports: api/telemetry, the standard library, github.com/go-logr/logr,
// go.opentelemetry.io/proto/otlp (the collector's TraceService),
// google.golang.org/grpc and sigs.k8s.io/yaml (script files).
package fakellm
