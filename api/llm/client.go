package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"tolokaforge.io/operator/api/task"
)

// DefaultBaseURL is used when a model config names none.
const DefaultBaseURL = "https://api.openai.com/v1"

// DefaultRequestTimeout bounds one try of a provider call.
const DefaultRequestTimeout = 2 * time.Minute

// Options configure a Client.
type Options struct {
	// Role names the caller in errors and logs ("agent", "user simulator",
	// "judge"); empty means "llm".
	Role string
	// APIKey is the key itself; the caller resolves it (from a Secret, or
	// the environment variable api_key_env names). Empty: no Authorization
	// header (local endpoints such as Ollama or vLLM need none).
	APIKey string
	// HTTPClient defaults to a shared client that keeps connections alive.
	HTTPClient *http.Client
	// Retry defaults to DefaultRetryPolicy.
	Retry *RetryPolicy
	// RequestTimeout bounds one try (0: the model config's
	// request_timeout_seconds, else DefaultRequestTimeout).
	RequestTimeout time.Duration
	// Headers are sent with every request (the model config's extra
	// headers, values resolved by the caller). Their values are redacted
	// like the key, since they are often credentials.
	Headers map[string]string
	// Limits, when set, paces calls per (model, base URL) across every
	// client sharing it, with the model config's rate_limit, and spreads a
	// 429's Retry-After to all of them. Nil: no shared pacing.
	Limits *Limits
	// Metrics receives the calls' series (nil: DefaultMetrics).
	Metrics *Metrics
	Log     logr.Logger
	// Sleep waits between retries and Jitter draws in [0,1); tests replace
	// them to observe the waits without spending them.
	Sleep  func(ctx context.Context, d time.Duration) error
	Jitter func() float64
}

var sharedHTTPClient = func() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	// Many concurrent trials talk to one provider host; the default of 2 idle
	// connections per host would make most calls pay a new handshake.
	t.MaxIdleConnsPerHost = 256
	t.MaxIdleConns = 1024
	return &http.Client{Transport: t}
}()

// Client is one chat-completions model behind an OpenAI-compatible
// endpoint, with this package's retry policy and usage accounting. It is
// safe for concurrent use.
type Client struct {
	role           string
	client         openai.Client
	model          string
	cfg            task.ModelConfig
	extraBody      []byte
	bucket         *Bucket
	server         string
	series         *series
	retry          RetryPolicy
	requestTimeout time.Duration
	redact         redactor
	log            logr.Logger
	sleep          func(context.Context, time.Duration) error
	jitter         func() float64
}

// CheckConfig reports what makes cfg unusable for a Client, naming role
// and the field at fault.
func CheckConfig(role string, cfg *task.ModelConfig) error {
	if role == "" {
		role = defaultRole
	}
	if cfg == nil {
		return fmt.Errorf("%s model: no model config", role)
	}
	if cfg.Provider != task.ProviderOpenAI {
		return fmt.Errorf("%s model: provider %q is not %q", role, cfg.Provider, task.ProviderOpenAI)
	}
	if strings.TrimSpace(cfg.Model) == "" {
		return fmt.Errorf("%s model: model is empty", role)
	}
	return nil
}

const defaultRole = "llm"

// New builds the client of cfg. The key is opts.APIKey: this package never
// reads the environment. Errors name the role and the field at fault.
func New(cfg *task.ModelConfig, opts Options) (*Client, error) {
	role := opts.Role
	if role == "" {
		role = defaultRole
	}
	if err := CheckConfig(role, cfg); err != nil {
		return nil, err
	}
	key := opts.APIKey
	baseURL := cfg.BaseURL
	if baseURL == "" {
		baseURL = DefaultBaseURL
	}
	if err := checkBaseURL(baseURL); err != nil {
		return nil, fmt.Errorf("%s model %q: base_url: %w", role, cfg.Model, err)
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = sharedHTTPClient
	}
	reqOpts := []option.RequestOption{
		option.WithBaseURL(baseURL),
		option.WithHTTPClient(hc),
		// Retries are ours: counted, testable, and bounded by the trial.
		option.WithMaxRetries(0),
	}
	if key != "" {
		reqOpts = append(reqOpts, option.WithAPIKey(key))
	}
	secrets := []string{key}
	for _, h := range sortedKeys(opts.Headers) {
		if err := checkHeader(h); err != nil {
			return nil, fmt.Errorf("%s model %q: extra header: %w", role, cfg.Model, err)
		}
		reqOpts = append(reqOpts, option.WithHeader(h, opts.Headers[h]))
		secrets = append(secrets, opts.Headers[h])
	}
	extra, err := extraBody(cfg.ExtraBody)
	if err != nil {
		return nil, fmt.Errorf("%s model %q: extra_body: %w", role, cfg.Model, err)
	}
	if cfg.ReasoningEffort != "" && !slices.Contains(task.ReasoningEfforts, cfg.ReasoningEffort) {
		return nil, fmt.Errorf("%s model %q: reasoning_effort %q is not one of %s", role, cfg.Model, cfg.ReasoningEffort, strings.Join(task.ReasoningEfforts, ", "))
	}
	var bucket *Bucket
	if opts.Limits != nil {
		bucket = opts.Limits.Bucket(cfg.Model, baseURL, cfg.RateLimit)
	}
	metrics := opts.Metrics
	if metrics == nil {
		metrics = DefaultMetrics
	}
	server := ServerAddress(baseURL)
	retry := DefaultRetryPolicy
	if opts.Retry != nil {
		retry = *opts.Retry
	}
	m := &Client{
		role: role,
		// Not openai.NewClient: it would pick up OPENAI_BASE_URL,
		// OPENAI_API_KEY and friends from the environment and could send a
		// trial's traffic (or the operator's own key) somewhere else.
		client:         openai.Client{Options: reqOpts},
		model:          cfg.Model,
		cfg:            *cfg,
		extraBody:      extra,
		bucket:         bucket,
		server:         server,
		series:         newSeries(metrics, cfg.Model, server, role),
		retry:          retry.withDefaults(),
		requestTimeout: opts.RequestTimeout,
		redact:         newRedactor(secrets...),
		log:            opts.Log.WithValues("role", role, "model", cfg.Model),
		sleep:          opts.Sleep,
		jitter:         opts.Jitter,
	}
	if m.requestTimeout <= 0 && cfg.RequestTimeoutSeconds > 0 {
		m.requestTimeout = time.Duration(cfg.RequestTimeoutSeconds * float64(time.Second))
	}
	if m.requestTimeout <= 0 {
		m.requestTimeout = DefaultRequestTimeout
	}
	if m.sleep == nil {
		m.sleep = sleepCtx
	}
	if m.jitter == nil {
		m.jitter = defaultJitter
	}
	return m, nil
}

// errRequestTimeout is the cause of a single try's deadline.
var errRequestTimeout = errors.New("provider request timed out")

// Complete makes one billed call with conv and tools (as EncodeTools
// renders them; nil for none): the request is retried on provider faults as
// the policy allows. On success Usage counts one call and that response's
// tokens; in every case Usage.Retries counts the refused tries. A fault that
// survives the retries, or a request the provider refuses, is an *Error;
// the caller's context ending is returned as ctx.Err().
func (m *Client) Complete(ctx context.Context, conv []task.Message, tools json.RawMessage) (string, []task.ToolCall, Usage, error) {
	return m.CompleteCached(ctx, &ConvCache{}, conv, tools)
}

// CompleteCached is Complete for a conversation that grows turn by turn:
// cache keeps the encoded messages, so each call encodes only the new ones.
func (m *Client) CompleteCached(ctx context.Context, cache *ConvCache, conv []task.Message, tools json.RawMessage) (string, []task.ToolCall, Usage, error) {
	ctx, span := m.startSpan(ctx)
	content, calls, usage, err := m.completeCached(ctx, cache, conv, tools)
	endSpan(span, usage, err)
	return content, calls, usage, err
}

func (m *Client) completeCached(ctx context.Context, cache *ConvCache, conv []task.Message, tools json.RawMessage) (string, []task.ToolCall, Usage, error) {
	var usage Usage
	msgs, err := cache.messages(conv)
	if err != nil {
		return "", nil, usage, err
	}
	body, err := requestBody(m.model, msgs, tools, &m.cfg, m.extraBody)
	if err != nil {
		return "", nil, usage, fmt.Errorf("%s model %q: encode request: %w", m.role, m.model, err)
	}
	// What the prompt will cost against a tokens-per-minute cap, before the
	// provider says: ~4 bytes a token, the usual rule of thumb for JSON text.
	estimate := len(body) / 4
	for try := 0; ; try++ {
		if m.bucket != nil {
			waited := time.Now()
			err := m.bucket.Wait(ctx, estimate)
			m.series.wait.Observe(time.Since(waited).Seconds())
			if err != nil {
				return "", nil, usage, err
			}
		}
		var (
			httpResp *http.Response
			resp     chatResponse
		)
		cctx, cancel := context.WithTimeoutCause(ctx, m.requestTimeout, errRequestTimeout)
		sent := time.Now()
		err := m.client.Post(cctx, "chat/completions", body, &resp, option.WithResponseInto(&httpResp))
		m.series.try(tryOutcome(ctx, err, httpResp, err == nil && len(resp.Choices) > 0), time.Since(sent))
		cancel()
		if err == nil && len(resp.Choices) > 0 {
			usage.Calls = 1
			usage.PromptTokens = resp.Usage.PromptTokens
			usage.CompletionTokens = resp.Usage.CompletionTokens
			usage.ReasoningTokens = resp.Usage.CompletionTokensDetails.ReasoningTokens
			usage.CachedTokens = resp.Usage.PromptTokensDetails.CachedTokens
			usage.CostUSD = cost(m.cfg.Pricing, usage.PromptTokens, usage.CachedTokens, usage.CompletionTokens)
			if m.bucket != nil {
				m.bucket.Charge(int(usage.PromptTokens+usage.CompletionTokens) - estimate)
			}
			m.series.billed(usage)
			content, calls := fromResponse(&resp)
			return content, calls, usage, nil
		}
		if ctx.Err() != nil {
			return "", nil, usage, ctx.Err()
		}
		f := m.classify(err, httpResp)
		if !f.retryable {
			return "", nil, usage, &Error{Termination: task.TerminationError, Err: f}
		}
		final := func(why string) error {
			term := task.TerminationAPIError
			if f.status == http.StatusTooManyRequests {
				term = task.TerminationRateLimit
			}
			return &Error{Termination: term, Err: fmt.Errorf("%w (%s)", f, why)}
		}
		if try >= m.retry.MaxRetries {
			return "", nil, usage, final(fmt.Sprintf("gave up after %d tries", try+1))
		}
		ra, hasRA := time.Duration(0), false
		if httpResp != nil {
			ra, hasRA = retryAfter(httpResp.Header, time.Now())
		}
		if hasRA && f.status == http.StatusTooManyRequests && m.bucket != nil {
			// The quota is the provider's, not this trial's: everyone waits.
			m.bucket.Pause(min(ra, m.retry.MaxRetryAfter))
		}
		if hasRA && ra > m.retry.MaxRetryAfter {
			return "", nil, usage, final(fmt.Sprintf("provider asked to wait %s, more than the %s allowed", ra, m.retry.MaxRetryAfter))
		}
		wait := m.retry.backoff(try, ra, m.jitter)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			// Sleeping into the trial's deadline would relabel a provider
			// fault as the agent's timeout.
			return "", nil, usage, final(fmt.Sprintf("retry wait %s exceeds the time left to the trial", wait))
		}
		usage.Retries++
		m.series.retries.Inc()
		m.log.V(1).Info("provider call refused, retrying", "status", f.status, "wait", wait.String(), "try", try+1, "error", f.Error())
		if err := m.sleep(ctx, wait); err != nil {
			return "", nil, usage, err
		}
	}
}

// fault is a failed try, already redacted.
type fault struct {
	status    int // 0: no HTTP answer
	msg       string
	retryable bool
}

func (f *fault) Error() string { return f.msg }

// httpStatus is the HTTP status of a call: the API error's when the SDK
// returned one, else the response's, else 0 (no answer).
func httpStatus(err error, resp *http.Response) int {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		return apiErr.StatusCode
	}
	if resp != nil {
		return resp.StatusCode
	}
	return 0
}

func (m *Client) classify(err error, resp *http.Response) *fault {
	status := httpStatus(err, resp)
	switch {
	case err == nil:
		return &fault{status: status, retryable: true, msg: fmt.Sprintf("%s model %q answered HTTP %d with no choices", m.role, m.model, status)}
	case status >= 400:
		pm := ""
		if apiErr := (*openai.Error)(nil); errors.As(err, &apiErr) {
			pm = apiErr.Message
		}
		if pm == "" && resp != nil && resp.Body != nil {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
			pm = strings.TrimSpace(string(b))
		}
		if pm == "" {
			pm = http.StatusText(status)
		}
		verb := "refused the request"
		if !retryableStatus(status) {
			verb = "rejected the request as invalid"
		}
		return &fault{status: status, retryable: retryableStatus(status),
			msg: m.redact.apply(fmt.Sprintf("%s model %q %s: HTTP %d: %s", m.role, m.model, verb, status, pm))}
	case errors.Is(err, errRequestTimeout) || isTimeout(err):
		return &fault{retryable: true, msg: m.redact.apply(fmt.Sprintf("%s model %q: no answer within %s", m.role, m.model, m.requestTimeout))}
	case status >= 200 && status < 300:
		// A success the SDK could not decode: the provider is broken, not the request.
		return &fault{status: status, retryable: true, msg: m.redact.apply(fmt.Sprintf("%s model %q: unreadable answer: %v", m.role, m.model, err))}
	default:
		return &fault{retryable: true, msg: m.redact.apply(fmt.Sprintf("%s model %q: transport: %v", m.role, m.model, err))}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// cost prices tokens: cached prompt tokens at the cached-input price when
// the table gives one, the rest of the prompt at the input price; reasoning
// tokens are part of completion tokens.
func cost(p *task.Pricing, prompt, cached, completion int64) float64 {
	if p == nil {
		return 0
	}
	cachedPrice := p.InputUSDPerMTok
	if p.CachedInputUSDPerMTok != nil {
		cachedPrice = *p.CachedInputUSDPerMTok
	}
	cached = min(max(cached, 0), prompt)
	return float64(prompt-cached)*p.InputUSDPerMTok/1e6 + float64(cached)*cachedPrice/1e6 + float64(completion)*p.OutputUSDPerMTok/1e6
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// checkHeader refuses a name that is no HTTP token or that the client sets.
func checkHeader(h string) error {
	if h == "" || strings.ContainsFunc(h, func(r rune) bool {
		return r > 0x7e || r <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\\]{}`, r)
	}) {
		return fmt.Errorf("%q is not a valid HTTP header name", h)
	}
	if slices.Contains(task.ReservedHeaders, strings.ToLower(h)) {
		return fmt.Errorf("header %q is set by the client", h)
	}
	return nil
}

// extraBody checks raw is a JSON object naming no reserved key and returns
// its members' text, to be spliced into the request object.
func extraBody(raw []byte) ([]byte, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var obj map[string]json.RawMessage
	if raw[0] != '{' || json.Unmarshal(raw, &obj) != nil {
		return nil, errors.New("not a JSON object")
	}
	for _, k := range task.ReservedBodyKeys {
		if _, ok := obj[k]; ok {
			return nil, fmt.Errorf("the client sets %q itself; use the model config's own field", k)
		}
	}
	inner := bytes.TrimSpace(raw[1 : len(raw)-1])
	if len(inner) == 0 {
		return nil, nil
	}
	// Compact, so what is spliced in is exactly the members.
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return b[1 : len(b)-1], nil
}
