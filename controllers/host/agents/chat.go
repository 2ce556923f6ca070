package agents

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"time"

	"github.com/go-logr/logr"

	"tolokaforge.io/operator/api/llm"
	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/controllers/host"
)

// The transport is package api/llm's, shared with the runner's LLM judge;
// these names keep the host's callers unchanged.
const (
	DefaultBaseURL        = llm.DefaultBaseURL
	defaultRequestTimeout = llm.DefaultRequestTimeout
	redacted              = llm.Redacted
)

// retryPolicy bounds the retries of one provider call.
type retryPolicy = llm.RetryPolicy

// DefaultRetryPolicy is llm.DefaultRetryPolicy.
var DefaultRetryPolicy = llm.DefaultRetryPolicy

// chatModel is one chat-completions model (an llm.Client).
type chatModel = llm.Client

// Options configure the OpenAI-compatible actors.
type Options struct {
	// APIKey is the key itself (the Trial controller reads it from the
	// referenced Secret); when empty, the model config's api_key_env names
	// the environment variable to read. Neither: no Authorization header
	// (local endpoints such as Ollama or vLLM need none).
	APIKey string
	// HTTPClient defaults to a shared client that keeps connections alive.
	HTTPClient *http.Client
	// Retry defaults to DefaultRetryPolicy.
	Retry *retryPolicy
	// RequestTimeout bounds one try (0: DefaultRequestTimeout).
	RequestTimeout time.Duration
	Log            logr.Logger
	// Sleep waits between retries and Jitter draws in [0,1); tests replace
	// them to observe the waits without spending them.
	Sleep  func(ctx context.Context, d time.Duration) error
	Jitter func() float64
	// Getenv defaults to os.Getenv.
	Getenv func(string) string
	// Headers are extra header values already resolved (the Trial
	// controller reads them from Secrets); they win over the model config's
	// extra_headers_env, which names environment variables to read.
	Headers map[string]string
	// Limits is the process's shared per-model pacing (nil: none); the
	// manager passes one registry to every actor of every trial.
	Limits *llm.Limits
}

// NewChatModel builds the model of cfg for role ("agent", "user simulator"),
// resolving its key. Errors name the role and the field at fault.
func NewChatModel(role string, cfg *task.ModelConfig, opts Options) (*chatModel, error) {
	if err := llm.CheckConfig(role, cfg); err != nil {
		return nil, err
	}
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	key := opts.APIKey
	if key == "" && cfg.APIKeyEnv != "" {
		if key = getenv(cfg.APIKeyEnv); key == "" {
			return nil, fmt.Errorf("%s model %q: environment variable %s (api_key_env) is unset or empty", role, cfg.Model, cfg.APIKeyEnv)
		}
	}
	var headers map[string]string
	for name, env := range cfg.ExtraHeadersEnv {
		if _, given := opts.Headers[name]; given {
			continue
		}
		v := getenv(env)
		if v == "" {
			return nil, fmt.Errorf("%s model %q: environment variable %s (extra_headers_env %s) is unset or empty", role, cfg.Model, env, name)
		}
		if headers == nil {
			headers = map[string]string{}
		}
		headers[name] = v
	}
	if len(opts.Headers) > 0 {
		if headers == nil {
			headers = make(map[string]string, len(opts.Headers))
		}
		maps.Copy(headers, opts.Headers)
	}
	return llm.New(cfg, llm.Options{
		Role:           role,
		APIKey:         key,
		Headers:        headers,
		Limits:         opts.Limits,
		HTTPClient:     opts.HTTPClient,
		Retry:          opts.Retry,
		RequestTimeout: opts.RequestTimeout,
		Log:            opts.Log,
		Sleep:          opts.Sleep,
		Jitter:         opts.Jitter,
	})
}

// complete is one turn of an LLM actor: the transport's classed failure
// becomes a *host.ActorError (host.Usage is the transport's llm.Usage).
func complete(ctx context.Context, m *chatModel, tc *llm.ToolCache, cc *llm.ConvCache, conv []task.Message, tools []*runnerpb.ToolSchema) (host.Turn, error) {
	tl, err := tc.Get(tools)
	if err != nil {
		return host.Turn{}, err
	}
	content, calls, usage, err := m.CompleteCached(ctx, cc, conv, tl)
	if err != nil {
		var le *llm.Error
		if errors.As(err, &le) {
			err = &host.ActorError{Termination: le.Termination, Err: le.Err}
		}
		return host.Turn{Usage: usage}, err
	}
	return host.Turn{Content: content, ToolCalls: calls, Usage: usage}, nil
}
