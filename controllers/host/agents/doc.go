// Package agents holds the actors the host's loop drives: the oracle (replays
// a task's golden actions, no model needed), the OpenAI-compatible chat agent
// and the LLM user simulator, against any chat-completions endpoint (OpenAI,
// vLLM, LiteLLM, OpenRouter, Ollama, the test fake). github.com/openai/openai-go/v3
// does the HTTP exchange (base URL, auth, origin checks, error decoding); the
// request and response bodies are this package's own encoding/json types,
// built incrementally per turn (see wire.go for why). The scripted user lives
// in package host, which uses it as the default.
//
// Provider faults are handled here, not in the SDK (its retries are off): a
// 408, 409, 429 or 5xx answer, or a transport failure, is retried with
// exponential backoff and jitter, honouring Retry-After / retry-after-ms,
// bounded per call by RetryPolicy; what still fails ends the trial as
// rate_limit (429) or api_error (the rest), which the attempt policy retries.
// Any other 4xx is the request's fault and ends the trial as error with the
// provider's message. Only the successful response's usage is counted, so a
// retried call is billed once; refused tries are counted in Usage.Retries.
//
// The API key lives only in the SDK's request options. Every message that
// leaves this package (errors, logs) has the key replaced by [REDACTED],
// because providers echo keys back in 401 bodies.
//
// Imports: the standard library, api/task, api/runnerpb, controllers/host
// (for the Actor contract), openai-go/v3 and logr.
package agents
