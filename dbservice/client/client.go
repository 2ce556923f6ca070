package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-logr/logr"

	"tolokaforge.io/operator/api/authn"
)

// Client talks to one DB service. It is safe for concurrent use.
type Client struct {
	base    string
	hc      *http.Client
	retries int
	backoff time.Duration
	// dialWait bounds how long a request whose connection could not be
	// opened is retried, whatever its method (0: not at all).
	dialWait time.Duration
	log      logr.Logger
	// auth is the Authorization value ("Bearer <token>"), empty for none.
	auth string
}

// option configures a Client.
type option func(*Client)

// WithHTTPClient sets the HTTP client (default: a client with a 30 s timeout, the
// upstream runner's).
func WithHTTPClient(hc *http.Client) option { return func(c *Client) { c.hc = hc } }

// WithRetries sets how many times a failed GET is retried (default 2). Other methods are
// never retried.
func WithRetries(n int) option { return func(c *Client) { c.retries = max(n, 0) } }

// WithBackoff sets the delay before the first retry; it doubles for each later one
// (default 100 ms).
func WithBackoff(d time.Duration) option { return func(c *Client) { c.backoff = d } }

// WithDialWait retries, for up to d, a request whose connection could not be
// opened (refused, unreachable, dial timeout), whatever its method: it never
// reached the service, so a write is not repeated. It covers a peer that is
// Ready before the network lets the caller reach it, as when a NetworkPolicy
// implementation programs a new pod's rules after the pod started (kube-router
// refused a runner's first connections to its new DB service for seconds).
// Default 0: no such retries.
func WithDialWait(d time.Duration) option { return func(c *Client) { c.dialWait = max(d, 0) } }

// WaitingToConnect returns a copy of c (same HTTP client, token and retries)
// whose requests wait up to d to connect, as WithDialWait.
func (c *Client) WaitingToConnect(d time.Duration) *Client {
	cp := *c
	cp.dialWait = max(d, 0)
	return &cp
}

// WithLogger sets the logger for retries (default: discard).
func WithLogger(l logr.Logger) option { return func(c *Client) { c.log = l } }

// WithToken makes every request present the trial's credential (package
// authn) in the Authorization header. Empty sends none.
func WithToken(token string) option {
	return func(c *Client) {
		if token == "" {
			c.auth = ""
			return
		}
		c.auth = authn.Bearer(token)
	}
}

// New returns a client for the service at baseURL (e.g. http://127.0.0.1:8000).
func New(baseURL string, opts ...option) *Client {
	c := &Client{
		base:    strings.TrimRight(baseURL, "/"),
		hc:      &http.Client{Timeout: 30 * time.Second},
		retries: 2,
		backoff: 100 * time.Millisecond,
		log:     logr.Discard(),
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// BaseURL returns the service address the client talks to.
func (c *Client) BaseURL() string { return c.base }

// seg escapes one path segment. "." and ".." are spelled with %2E so that neither the
// HTTP stack nor the server's path cleaning treats them as directory steps.
func seg(s string) string {
	if s == "." || s == ".." {
		return strings.Repeat("%2E", len(s))
	}
	return url.PathEscape(s)
}

func requireName(kind, v string) error {
	if v == "" {
		return fmt.Errorf("%s must not be empty: %w", kind, ErrInvalidRequest)
	}
	return nil
}

// Init creates a trial's tables at version 1.
func (c *Client) Init(ctx context.Context, trialID string, req InitRequest) (*InitResponse, error) {
	if err := requireName("trial id", trialID); err != nil {
		return nil, err
	}
	if req.Tables == nil {
		// A trial without tables is valid; JSON null for "tables" is not.
		req.Tables = map[string]json.RawMessage{}
	}
	var out InitResponse
	if err := c.do(ctx, http.MethodPost, "/trials/"+seg(trialID)+"/init", nil, req, &out); err != nil {
		return nil, fmt.Errorf("init trial %q: %w", trialID, err)
	}
	return &out, nil
}

// State returns the trial's tables (all of them when tables is empty) with both hashes,
// which always cover every table. Names travel comma-separated, so a table whose name
// contains a comma can only be read unfiltered.
func (c *Client) State(ctx context.Context, trialID string, tables []string) (*stateResponse, error) {
	if err := requireName("trial id", trialID); err != nil {
		return nil, err
	}
	var q url.Values
	if len(tables) > 0 {
		q = url.Values{"tables": {strings.Join(tables, ",")}}
	}
	var out stateResponse
	if err := c.do(ctx, http.MethodGet, "/trials/"+seg(trialID)+"/state", q, nil, &out); err != nil {
		return nil, fmt.Errorf("get state of trial %q: %w", trialID, err)
	}
	return &out, nil
}

// StableState returns the tables without their unstable fields.
func (c *Client) StableState(ctx context.Context, trialID string) (*stableStateResponse, error) {
	if err := requireName("trial id", trialID); err != nil {
		return nil, err
	}
	var out stableStateResponse
	if err := c.do(ctx, http.MethodGet, "/trials/"+seg(trialID)+"/state/stable", nil, nil, &out); err != nil {
		return nil, fmt.Errorf("get stable state of trial %q: %w", trialID, err)
	}
	return &out, nil
}

// Hash returns the stable and full hashes and the version.
func (c *Client) Hash(ctx context.Context, trialID string) (*HashResponse, error) {
	if err := requireName("trial id", trialID); err != nil {
		return nil, err
	}
	var out HashResponse
	if err := c.do(ctx, http.MethodGet, "/trials/"+seg(trialID)+"/state/hash", nil, nil, &out); err != nil {
		return nil, fmt.Errorf("get hash of trial %q: %w", trialID, err)
	}
	return &out, nil
}

// Patch applies operations to one table atomically.
func (c *Client) Patch(ctx context.Context, trialID, table string, req PatchRequest) (*patchResponse, error) {
	if err := requireName("trial id", trialID); err != nil {
		return nil, err
	}
	if err := requireName("table name", table); err != nil {
		return nil, err
	}
	var out patchResponse
	if err := c.do(ctx, http.MethodPatch, "/trials/"+seg(trialID)+"/state/"+seg(table), nil, req, &out); err != nil {
		return nil, fmt.Errorf("patch table %q of trial %q: %w", table, trialID, err)
	}
	return &out, nil
}

// Snapshot saves the current state under name, replacing an older snapshot of that name.
func (c *Client) Snapshot(ctx context.Context, trialID, name string) (*SnapshotResponse, error) {
	if err := requireName("trial id", trialID); err != nil {
		return nil, err
	}
	if err := requireName("snapshot name", name); err != nil {
		return nil, err
	}
	var out SnapshotResponse
	if err := c.do(ctx, http.MethodPost, "/trials/"+seg(trialID)+"/snapshots/"+seg(name), nil, nil, &out); err != nil {
		return nil, fmt.Errorf("snapshot %q of trial %q: %w", name, trialID, err)
	}
	return &out, nil
}

// Restore makes snapshot name the current state (version +1).
func (c *Client) Restore(ctx context.Context, trialID, name string) (*RestoreResponse, error) {
	if err := requireName("trial id", trialID); err != nil {
		return nil, err
	}
	if err := requireName("snapshot name", name); err != nil {
		return nil, err
	}
	var out RestoreResponse
	if err := c.do(ctx, http.MethodPost, "/trials/"+seg(trialID)+"/snapshots/"+seg(name)+"/restore", nil, nil, &out); err != nil {
		return nil, fmt.Errorf("restore snapshot %q of trial %q: %w", name, trialID, err)
	}
	return &out, nil
}

// DeleteSnapshot removes snapshot name.
func (c *Client) DeleteSnapshot(ctx context.Context, trialID, name string) error {
	if err := requireName("trial id", trialID); err != nil {
		return err
	}
	if err := requireName("snapshot name", name); err != nil {
		return err
	}
	if err := c.do(ctx, http.MethodDelete, "/trials/"+seg(trialID)+"/snapshots/"+seg(name), nil, nil, nil); err != nil {
		return fmt.Errorf("delete snapshot %q of trial %q: %w", name, trialID, err)
	}
	return nil
}

// Reset returns the trial to its initial state (version +1); snapshots are kept.
func (c *Client) Reset(ctx context.Context, trialID string) (*ResetResponse, error) {
	if err := requireName("trial id", trialID); err != nil {
		return nil, err
	}
	var out ResetResponse
	if err := c.do(ctx, http.MethodPost, "/trials/"+seg(trialID)+"/reset", nil, nil, &out); err != nil {
		return nil, fmt.Errorf("reset trial %q: %w", trialID, err)
	}
	return &out, nil
}

// Delete removes the trial. A trial the service does not know counts as deleted.
func (c *Client) Delete(ctx context.Context, trialID string) error {
	if err := requireName("trial id", trialID); err != nil {
		return err
	}
	err := c.do(ctx, http.MethodDelete, "/trials/"+seg(trialID), nil, nil, nil)
	if err != nil && !errors.Is(err, ErrTrialNotFound) {
		return fmt.Errorf("delete trial %q: %w", trialID, err)
	}
	return nil
}

// Query evaluates an RFC 9535 JSONPath over {"db": tables}, the tables as stored.
func (c *Client) Query(ctx context.Context, trialID, jsonpath string) (*queryResponse, error) {
	return c.query(ctx, trialID, jsonpath, false)
}

// QueryStable is Query over the tables without their unstable fields.
func (c *Client) QueryStable(ctx context.Context, trialID, jsonpath string) (*queryResponse, error) {
	return c.query(ctx, trialID, jsonpath, true)
}

func (c *Client) query(ctx context.Context, trialID, jsonpath string, stable bool) (*queryResponse, error) {
	if err := requireName("trial id", trialID); err != nil {
		return nil, err
	}
	var out queryResponse
	body := map[string]any{"jsonpath": jsonpath}
	if stable {
		body["stable"] = true
	}
	if err := c.do(ctx, http.MethodPost, "/trials/"+seg(trialID)+"/query", nil, body, &out); err != nil {
		return nil, fmt.Errorf("query trial %q with %q: %w", trialID, jsonpath, err)
	}
	return &out, nil
}

// Schema returns the declared schemas and unstable fields.
func (c *Client) Schema(ctx context.Context, trialID string) (*schemaResponse, error) {
	if err := requireName("trial id", trialID); err != nil {
		return nil, err
	}
	var out schemaResponse
	if err := c.do(ctx, http.MethodGet, "/trials/"+seg(trialID)+"/schema", nil, nil, &out); err != nil {
		return nil, fmt.Errorf("get schema of trial %q: %w", trialID, err)
	}
	return &out, nil
}

// Health reports the service status.
func (c *Client) Health(ctx context.Context) (*HealthResponse, error) {
	var out HealthResponse
	if err := c.do(ctx, http.MethodGet, "/health", nil, nil, &out); err != nil {
		return nil, fmt.Errorf("health check: %w", err)
	}
	return &out, nil
}

// do sends one request and decodes a 2xx body into out (when non-nil). GETs are
// retried on transport errors and 5xx.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return fmt.Errorf("encode request body: %w", err)
		}
	}
	target := c.base + path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	attempts := 1
	if method == http.MethodGet {
		attempts += c.retries
	}
	delay := c.backoff
	var dialUntil time.Time
	if c.dialWait > 0 {
		dialUntil = time.Now().Add(c.dialWait)
	}
	dialDelay := 50 * time.Millisecond
	var lastErr error
	for attempt := 1; ; attempt++ {
		retryable, err := c.once(ctx, method, target, body, out)
		if err == nil {
			return nil
		}
		lastErr = err
		if ctx.Err() == nil && notConnected(err) && time.Now().Before(dialUntil) {
			c.log.V(1).Info("retrying DB service request not connected", "method", method, "path", path, "err", err.Error())
			t := time.NewTimer(min(dialDelay, time.Until(dialUntil)))
			select {
			case <-ctx.Done():
				t.Stop()
				return fmt.Errorf("%w (gave up retrying: %w)", lastErr, ctx.Err())
			case <-t.C:
			}
			dialDelay = min(2*dialDelay, time.Second)
			attempt-- // not a try the service saw
			continue
		}
		if !retryable || attempt >= attempts || ctx.Err() != nil {
			return lastErr
		}
		c.log.V(1).Info("retrying DB service request", "method", method, "path", path, "attempt", attempt, "err", err.Error())
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (gave up retrying: %w)", lastErr, ctx.Err())
		case <-t.C:
		}
		delay *= 2
	}
}

// notConnected: the request's connection could not be opened, so the
// service never saw it.
func notConnected(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// once performs one HTTP exchange and reports whether a failure may be retried.
func (c *Client) once(ctx context.Context, method, target string, body []byte, out any) (bool, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return false, fmt.Errorf("build %s request: %w", method, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.auth != "" {
		req.Header.Set(authn.Header, c.auth)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return false, err
		}
		return true, &unavailableError{err}
	}
	defer func() {
		// Drain so the connection can be reused.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
	}()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode >= 500, decodeAPIError(resp)
	}
	if out == nil {
		return false, nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		err = fmt.Errorf("decode %d response: %w", resp.StatusCode, err)
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		if ctx.Err() == nil && !errors.As(err, &se) && !errors.As(err, &te) {
			// Not a malformed body but one cut short: the connection broke mid-response.
			return false, &unavailableError{err}
		}
		return false, err
	}
	return false, nil
}

func decodeAPIError(resp *http.Response) error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var wire struct {
		Error   string         `json:"error"`
		Message string         `json:"message"`
		Details map[string]any `json:"details"`
		// The upstream Python service wraps errors in FastAPI's "detail".
		Detail *struct {
			Error   string         `json:"error"`
			Message string         `json:"message"`
			Details map[string]any `json:"details"`
		} `json:"detail"`
	}
	e := &APIError{StatusCode: resp.StatusCode}
	if json.Unmarshal(raw, &wire) == nil {
		e.Type, e.Message, e.Details = wire.Error, wire.Message, wire.Details
		if e.Type == "" && wire.Detail != nil {
			e.Type, e.Message, e.Details = wire.Detail.Error, wire.Detail.Message, wire.Detail.Details
		}
	}
	if e.Type == "" {
		e.Type = http.StatusText(resp.StatusCode)
		e.Message = strings.TrimSpace(string(raw))
	}
	return e
}
