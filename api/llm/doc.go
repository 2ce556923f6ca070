// Package llm is the one OpenAI-compatible chat-completions client of the
// operator: the host's actors (controllers/host/agents) and the runner's LLM
// judge (runner/grading) both call models through it, against any
// chat-completions endpoint (OpenAI, vLLM, LiteLLM, OpenRouter, Ollama, the
// test fake). github.com/openai/openai-go/v3 does the HTTP exchange (base
// URL, auth, origin checks, error decoding); the request and response bodies
// are this package's own encoding/json types, built incrementally per turn
// (see wire.go for why).
//
// Provider faults are handled here, not in the SDK (its retries are off): a
// 408, 409, 429 or 5xx answer, or a transport failure, is retried with
// exponential backoff and jitter, honouring Retry-After / retry-after-ms,
// bounded per call by RetryPolicy; what still fails is an *Error classed
// rate_limit (429) or api_error (the rest), which the attempt policy
// retries. Any other 4xx is the request's fault and is classed error with
// the provider's message. Only the successful response's usage is counted,
// so a retried call is billed once; refused tries are counted in
// Usage.Retries.
//
// The API key is given by the caller (this package never reads the
// environment) and lives only in the SDK's request options. Every message
// that leaves this package (errors, logs) has the key replaced by
// [REDACTED], because providers echo keys back in 401 bodies.
//
// Request fields come from task.ModelConfig: temperature, top_p, seed,
// max_tokens and max_completion_tokens, reasoning_effort only when set
// (reasoning models refuse max_tokens and non-default temperatures);
// extra_body is spliced into the request object after checking it names no
// key the client writes (task.ReservedBodyKeys); Options.Headers (values
// resolved by the caller, redacted like the key) go on every request.
//
// Limits is the process-wide pacing: one Bucket per (model, base URL) with
// the config's rate_limit (requests and tokens per minute, token buckets
// from golang.org/x/time/rate; the latest config wins) and a pause that a
// 429's Retry-After sets for every client sharing it. Usage counts
// reasoning and cached tokens; cost prices cached prompt tokens at
// pricing.cached_input_usd_per_mtok when given, else the input price.
//
// Every call records into Metrics (Prometheus series by model, server
// address and role, never by trial; metrics.go) and, when ctx carries a
// recording span, opens a "chat <model>" span with the GenAI semantic
// conventions' attributes (tracing.go). The caller registers the series and
// installs the tracer; this package does neither.
//
// Imports: api/runnerpb, api/task, the standard library,
// github.com/go-logr/logr, github.com/openai/openai-go/v3,
// github.com/prometheus/client_golang, go.opentelemetry.io/otel,
// go.opentelemetry.io/otel/trace and golang.org/x/time (rate). Never
// controllers/..., so the runner can use it.
package llm
