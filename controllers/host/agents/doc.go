// Package agents holds the actors the host's loop drives: the oracle (replays
// a task's golden actions, no model needed), the OpenAI-compatible chat agent
// and the LLM user simulator. The chat transport (retries, Retry-After,
// billing once, key redaction, fault classes) is package api/llm, shared
// with the runner's LLM judge; this package resolves the key (Options.APIKey
// or the model config's api_key_env), turns llm.Usage into host.Usage and an
// *llm.Error into a *host.ActorError with the same termination reason. The
// scripted user lives in package host, which uses it as the default.
//
// Imports: api/llm, api/runnerpb, api/task, controllers/host (for the Actor
// contract), the standard library and github.com/go-logr/logr.
package agents
