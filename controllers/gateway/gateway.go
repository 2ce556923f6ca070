// Package gateway is the manager's LLM gateway: an OpenAI-compatible
// /v1/chat/completions endpoint the runner's judge calls instead of holding a
// provider key. Each Trial with a judge gets a random token, kept in a Secret
// of its own (SecretName) that only the runner pod mounts; the gateway checks
// the token, checks the requested model against the Trial's judge model,
// adds the provider key (read from the Trial's opted-in Secret, never cached)
// and forwards the request with net/http/httputil.ReverseProxy.
//
// The gateway's only state is a cache: a token names its Trial
// ("<namespace>/<name>/<64 hex digits>") and is checked against the Trial (from
// the manager's informer cache) and the SHA-256 of the token in the Trial's
// token Secret, which each replica reads with a direct get at most once per
// SecretRecheck per Trial (and per missingRecheck while it is missing). So
// every manager replica serves it (no leader needed), a restarted manager
// honours the tokens of pods it created before, and revocation is the Trial
// completing (at once) or its token Secret going away (within SecretRecheck).
// A request with a bad token never makes the API server do work: a malformed
// token is refused before any lookup, one naming no Trial, a completed Trial
// or a Trial without a judge after a cache read only, and a wrong token for a
// live Trial after at most the one Secret get the cache needed anyway; the
// token is compared digest to digest in constant time.
//
// Each forwarded call is counted in api/llm's series under role "judge"
// (metrics.go): outcome, duration, and a success's tokens and cost (from the
// Trial's judge pricing), read from the answer as it passes through.
//
// Imports: api/llm, api/task, api/v1alpha1, the standard library,
// github.com/go-logr/logr, k8s.io/api, k8s.io/apimachinery and
// sigs.k8s.io/controller-runtime.
package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tolokaforge.io/operator/api/llm"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

const (
	// DefaultBindAddress is --gateway-bind-address's default.
	DefaultBindAddress = ":8090"
	// Path is the one endpoint served.
	Path = "/v1/chat/completions"
	// TokenKey is the token's key in the token Secret.
	TokenKey = "token"
	// DefaultMaxTokenAge bounds a token's life even if its Trial never ends.
	DefaultMaxTokenAge = 24 * time.Hour
	// maxBody bounds a request body (a judge prompt with a transcript).
	maxBody = 16 << 20
	// DefaultSecretRecheck is how long a replica trusts the token Secret it
	// read for a Trial: a Secret deleted while its Trial runs stops its token
	// within this time (a completed Trial's token stops at once).
	DefaultSecretRecheck = time.Minute
	// missingRecheck is how long a Trial's missing (or foreign) token Secret
	// is remembered: a well-formed token for such a Trial costs one Secret get
	// per this period, not one per request.
	missingRecheck = 5 * time.Second
	// randomHexLen is the token's random part: 32 bytes in hex.
	randomHexLen = 64
	// maxTokenLen is the longest well-formed token: a namespace (63), a
	// Trial name (253), the random part and two slashes.
	maxTokenLen = 63 + 1 + 253 + 1 + randomHexLen
	// maxCachedTrials bounds the cache before stale entries are swept.
	maxCachedTrials = 4096
)

// SecretName is the token Secret of a Trial: within the 253-character name
// limit, a long Trial name keeps a prefix and gains a hash of the whole.
func SecretName(trial string) string {
	const suffix = "-llm-gateway"
	if len(trial)+len(suffix) <= 253 {
		return trial + suffix
	}
	sum := sha256.Sum256([]byte(trial))
	return trial[:253-len(suffix)-11] + "-" + hex.EncodeToString(sum[:])[:10] + suffix
}

// NewToken is a fresh token for the Trial: its namespace and name, then 32
// random bytes. Names never hold "/", so the token parses unambiguously.
func NewToken(trial types.NamespacedName) (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("gateway token: %w", err)
	}
	return trial.Namespace + "/" + trial.Name + "/" + hex.EncodeToString(b), nil
}

// Upstream is where a Trial's judge calls go: the provider base URL, the key
// and extra headers (from the Trial's opted-in Secrets), and the models the
// token may ask for.
type Upstream struct {
	BaseURL string
	APIKey  string
	Headers map[string]string
	Models  []string
}

// UpstreamFunc resolves a Trial's Upstream at call time, reading (and
// checking) its Secrets; the manager's is controllers.JudgeUpstream.
type UpstreamFunc func(ctx context.Context, t *evalv1.Trial) (Upstream, error)

// Gateway serves Path. Trials are read per call from the manager's cache;
// token Secrets with a direct get, cached per Trial for SecretRecheck.
type Gateway struct {
	Trials        client.Reader
	Secrets       client.Reader
	Upstream      UpstreamFunc
	Transport     http.RoundTripper // default http.DefaultTransport
	MaxTokenAge   time.Duration     // default DefaultMaxTokenAge
	SecretRecheck time.Duration     // default DefaultSecretRecheck
	Addr          string            // for Start; default DefaultBindAddress
	Log           logr.Logger
	Now           func() time.Time
	// Metrics receives each forwarded call's series, role "judge" (nil:
	// llm.DefaultMetrics, which the manager serves).
	Metrics *llm.Metrics

	mu     sync.Mutex
	tokens map[types.NamespacedName]tokenEntry
}

// tokenEntry is what a replica read of a Trial's token Secret.
type tokenEntry struct {
	uid     types.UID // the Trial the Secret belongs to
	present bool      // false: no token Secret controlled by that Trial
	digest  [sha256.Size]byte
	created time.Time // the Secret's creation, for MaxTokenAge
	fetched time.Time
}

// errorBody is the OpenAI error shape, so an OpenAI client reports it as such.
func writeError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"message": msg, "type": typ}})
}

type refusal struct {
	status int
	msg    string
}

func (r *refusal) Error() string { return r.msg }

func unauthorized(format string, args ...any) *refusal {
	return &refusal{http.StatusUnauthorized, fmt.Sprintf(format, args...)}
}

// parseToken splits a token into its Trial and reports whether it is well
// formed: a DNS-1123 namespace and Trial name and 64 lowercase hex digits,
// as NewToken makes them. It looks nothing up.
func parseToken(tok string) (types.NamespacedName, bool) {
	if len(tok) > maxTokenLen {
		return types.NamespacedName{}, false
	}
	ns, rest, ok1 := strings.Cut(tok, "/")
	name, random, ok2 := strings.Cut(rest, "/")
	if !ok1 || !ok2 || len(random) != randomHexLen ||
		len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return types.NamespacedName{}, false
	}
	for i := 0; i < len(random); i++ {
		if c := random[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return types.NamespacedName{}, false
		}
	}
	return types.NamespacedName{Namespace: ns, Name: name}, true
}

// hasToken reports whether the manager mints a gateway token for t at all
// (controllers.UsesGateway, less the gateway URL this replica cannot see).
func hasToken(t *evalv1.Trial) bool {
	j := t.Spec.Judge
	return j != nil && j.Provider != "" && j.Provider != evalv1.ProviderOracle
}

// authorize finds the Trial the bearer token belongs to, or says why none.
// Messages never repeat the token.
func (g *Gateway) authorize(ctx context.Context, r *http.Request) (*evalv1.Trial, error) {
	auth := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || tok == "" {
		return nil, unauthorized("missing bearer token")
	}
	key, ok := parseToken(tok)
	if !ok {
		return nil, unauthorized("malformed token")
	}
	t := &evalv1.Trial{}
	if err := g.Trials.Get(ctx, key, t); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, unauthorized("invalid token")
		}
		return nil, err
	}
	if c := meta.FindStatusCondition(t.Status.Conditions, evalv1.TrialCompleted); c != nil && c.Status == metav1.ConditionTrue {
		return nil, unauthorized("token revoked: trial %s has completed", key)
	}
	if !hasToken(t) {
		return nil, unauthorized("invalid token")
	}
	e, err := g.tokenOf(ctx, key, t)
	if err != nil {
		return nil, err
	}
	// Digest against digest: constant time whatever the token's length, and
	// the same work whether the Trial has a token Secret or not.
	sum := sha256.Sum256([]byte(tok))
	if subtle.ConstantTimeCompare(sum[:], e.digest[:]) != 1 || !e.present {
		return nil, unauthorized("invalid token")
	}
	maxAge := g.MaxTokenAge
	if maxAge <= 0 {
		maxAge = DefaultMaxTokenAge
	}
	if g.now().Sub(e.created) > maxAge {
		return nil, unauthorized("token expired")
	}
	return t, nil
}

// tokenOf returns the token digest of Trial t (key), reading its token Secret
// only when this replica has none for this Trial (by UID) or it is older
// than SecretRecheck (missingRecheck for a missing one).
func (g *Gateway) tokenOf(ctx context.Context, key types.NamespacedName, t *evalv1.Trial) (tokenEntry, error) {
	now := g.now()
	recheck := g.SecretRecheck
	if recheck <= 0 {
		recheck = DefaultSecretRecheck
	}
	fresh := func(e tokenEntry) bool {
		ttl := recheck
		if !e.present {
			ttl = min(recheck, missingRecheck)
		}
		age := now.Sub(e.fetched)
		return age >= 0 && age < ttl
	}
	g.mu.Lock()
	e, ok := g.tokens[key]
	g.mu.Unlock()
	if ok && e.uid == t.UID && fresh(e) {
		return e, nil
	}
	e = tokenEntry{uid: t.UID, fetched: now}
	s := &corev1.Secret{}
	switch err := g.Secrets.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: SecretName(key.Name)}, s); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return tokenEntry{}, err
	case metav1.IsControlledBy(s, t):
		e.present, e.digest, e.created = true, sha256.Sum256(s.Data[TokenKey]), s.CreationTimestamp.Time
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.tokens == nil {
		g.tokens = map[types.NamespacedName]tokenEntry{}
	}
	if len(g.tokens) >= maxCachedTrials {
		for k, old := range g.tokens {
			if !fresh(old) {
				delete(g.tokens, k)
			}
		}
	}
	g.tokens[key] = e
	return e, nil
}

func (g *Gateway) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}

// ServeHTTP implements http.Handler.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != Path {
		writeError(w, http.StatusNotFound, "invalid_request_error", "the gateway serves only POST "+Path)
		return
	}
	if r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "use POST")
		return
	}
	ctx := r.Context()
	t, err := g.authorize(ctx, r)
	if err != nil {
		var rf *refusal
		if errors.As(err, &rf) {
			writeError(w, rf.status, "invalid_request_error", rf.msg)
			return
		}
		g.Log.Error(err, "authorize gateway call")
		writeError(w, http.StatusServiceUnavailable, "server_error", "cannot check the token now")
		return
	}
	trial := client.ObjectKeyFromObject(t).String()
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", fmt.Sprintf("body: %v", err))
		return
	}
	var req struct {
		Model string `json:"model"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("body is not a chat completion request: %v", err))
		return
	}
	up, err := g.Upstream(ctx, t)
	if err != nil {
		g.Log.Info("no upstream for gateway call", "trial", trial, "error", err.Error())
		writeError(w, http.StatusForbidden, "permission_error", fmt.Sprintf("trial %s: %v", trial, err))
		return
	}
	if !slices.Contains(up.Models, req.Model) {
		writeError(w, http.StatusForbidden, "permission_error",
			fmt.Sprintf("model %q is not allowed for trial %s (allowed: %s)", req.Model, trial, strings.Join(up.Models, ", ")))
		return
	}
	target, err := url.Parse(strings.TrimRight(up.BaseURL, "/") + "/chat/completions")
	if err != nil {
		writeError(w, http.StatusBadGateway, "server_error", fmt.Sprintf("trial %s: base URL: %v", trial, err))
		return
	}
	meter := g.meter(req.Model, up.BaseURL, t.Spec.Judge.Pricing)
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL = target
			pr.Out.Host = target.Host
			pr.Out.Header.Del("Cookie")
			for k, v := range up.Headers {
				pr.Out.Header.Set(k, v)
			}
			pr.Out.Header.Del("Authorization")
			if up.APIKey != "" {
				pr.Out.Header.Set("Authorization", "Bearer "+up.APIKey)
			}
			pr.Out.Body = io.NopCloser(bytes.NewReader(body))
			pr.Out.ContentLength = int64(len(body))
		},
		Transport:      g.Transport,
		ModifyResponse: meter.response,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			meter.failed(r.Context(), err)
			// The error names the upstream URL, never the key.
			g.Log.Info("gateway upstream call failed", "trial", trial, "error", err.Error())
			writeError(w, http.StatusBadGateway, "server_error", "upstream: "+err.Error())
		},
	}
	proxy.ServeHTTP(w, r)
}

// Start serves the gateway on Addr until ctx ends (a manager.Runnable).
func (g *Gateway) Start(ctx context.Context) error {
	addr := g.Addr
	if addr == "" {
		addr = DefaultBindAddress
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("gateway: listen on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	g.Log.Info("LLM gateway listening", "address", ln.Addr().String())
	select {
	case err := <-done:
		return fmt.Errorf("gateway: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}

// NeedLeaderElection is false: the gateway is stateless, every replica serves.
func (g *Gateway) NeedLeaderElection() bool { return false }
