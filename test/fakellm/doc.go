// Package fakellm is a scripted stand-in for an OpenAI-compatible
// chat-completions provider: a real HTTP server on loopback that answers
// POST /v1/chat/completions (and /chat/completions) with replies from a
// script (content, tool calls, usage, injected 429/500 errors with
// Retry-After, delays) and records every request so tests can assert exactly
// what the model was sent. Scripts can be kept per model, so one server plays
// both the agent model and the user-simulator model. cmd/fakellm serves a
// script file from the command line.
//
// It is a test harness and never imports the operator's own packages.
//
// Imports: the standard library, github.com/go-logr/logr and sigs.k8s.io/yaml
// (script files).
package fakellm
