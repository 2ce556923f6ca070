package dbservice

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"tolokaforge.io/operator/api/authn"
)

// serviceVersion is reported by GET /health.
const serviceVersion = "1.0.0"

// defaultMaxBodyBytes bounds request bodies unless Options says otherwise.
const defaultMaxBodyBytes int64 = 64 << 20

// Options configures a Server.
type Options struct {
	// MaxBodyBytes bounds request bodies; larger ones get 413. 0 means
	// Limits.MaxBodyBytes.
	MaxBodyBytes int64
	// Limits bound requests, trials and the process; zero fields take DefaultLimits.
	Limits Limits
	// Logger receives request logs (V(1)) and failures; the default discards.
	Logger logr.Logger
	// AuthToken is the trial's credential (package authn): every request but
	// GET /health must carry "Authorization: Bearer <token>" or gets 401
	// before any handler runs. Empty disables the check. Never logged.
	AuthToken string
}

// Server is the DB service: an http.Handler over an in-memory store of trials.
type Server struct {
	maxBody int64
	limits  Limits
	log     logr.Logger
	store   *store
	metrics *metrics
	mux     *http.ServeMux
	root    http.Handler
}

// New returns a Server with no trials.
func New(opts Options) *Server {
	limits := opts.Limits
	if opts.MaxBodyBytes > 0 {
		limits.MaxBodyBytes = opts.MaxBodyBytes
	}
	limits = limits.withDefaults()
	s := &Server{
		maxBody: limits.MaxBodyBytes,
		limits:  limits,
		log:     opts.Logger,
		store:   newStore(&limits),
		mux:     http.NewServeMux(),
	}
	if s.log.GetSink() == nil {
		s.log = logr.Discard()
	}
	s.metrics = newMetrics(func() float64 { return float64(s.store.count()) },
		func() float64 { return float64(s.store.bytes.Load()) })
	s.routes()
	emptyID := s.wrap("empty trial id", func(w http.ResponseWriter, r *http.Request) *Error {
		return newError(http.StatusBadRequest, errTypeInvalidTrialID, map[string]any{"trial_id": ""},
			"trial id \"\" must match [A-Za-z0-9._:-]{1,253}")
	})
	unauthenticated := s.wrap("unauthenticated", func(w http.ResponseWriter, r *http.Request) *Error {
		err := authn.Check(r.Header.Get(authn.Header), opts.AuthToken)
		s.log.Info("refused an unauthenticated request", "method", r.Method, "path", r.URL.Path, "why", err.Error())
		w.Header().Set("WWW-Authenticate", `Bearer realm="tolokaforge-dbservice"`)
		msg := "the request carries no trial credential (Authorization: Bearer <token>)"
		if !errors.Is(err, authn.ErrMissing) {
			msg = "the request's trial credential is not this DB service's"
		}
		return newError(http.StatusUnauthorized, errTypeUnauthenticated, nil, "%s", msg)
	})
	s.root = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = &trackedBody{ReadCloser: r.Body}
		}
		// Refused before routing: a request without the credential reaches no
		// handler, so it changes nothing. Health stays open for probes.
		if opts.AuthToken != "" && !isHealth(r) && authn.Check(r.Header.Get(authn.Header), opts.AuthToken) != nil {
			unauthenticated(w, r)
			return
		}
		// ServeMux would answer /trials//init with a redirect to a cleaned path; an
		// empty trial id is a bad request.
		if strings.HasPrefix(r.URL.Path, "/trials//") {
			emptyID(w, r)
			return
		}
		s.mux.ServeHTTP(w, r)
	})
	return s
}

// isHealth is the one open endpoint: kubelet's readiness probe.
func isHealth(r *http.Request) bool {
	return r.URL.Path == "/health" && (r.Method == http.MethodGet || r.Method == http.MethodHead)
}

// Handler returns the HTTP handler serving every endpoint.
func (s *Server) Handler() http.Handler { return s.root }

// Serve serves on ln until ctx ends, then shuts down gracefully (in-flight requests get
// up to 5 seconds). It returns nil after a shutdown caused by ctx.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s.root,
		ReadHeaderTimeout: s.limits.ReadHeaderTimeout,
		// A backstop for handlers that never read their body; readBody sets its own
		// deadline of BodyReadTimeout from when it starts reading.
		ReadTimeout: s.limits.ReadHeaderTimeout + s.limits.BodyReadTimeout,
		IdleTimeout: 2 * time.Minute,
		BaseContext: func(net.Listener) context.Context { return ctx },
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shut down %s: %w", ln.Addr(), err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	}
	return nil
}

// handlerFunc handles one route; a returned *Error becomes the error response, and
// nothing must have been written in that case.
type handlerFunc func(w http.ResponseWriter, r *http.Request) *Error

func (s *Server) routes() {
	s.handle("POST /trials/{id}/init", s.handleInit)
	s.handle("GET /trials/{id}/state", s.handleState)
	s.handle("GET /trials/{id}/state/stable", s.handleStableState)
	s.handle("GET /trials/{id}/state/hash", s.handleHash)
	s.handle("PATCH /trials/{id}/state/{table}", s.handlePatch)
	s.handle("POST /trials/{id}/snapshots/{name}", s.handleSnapshot)
	s.handle("POST /trials/{id}/snapshots/{name}/restore", s.handleRestore)
	s.handle("DELETE /trials/{id}/snapshots/{name}", s.handleDeleteSnapshot)
	s.handle("POST /trials/{id}/reset", s.handleReset)
	s.handle("DELETE /trials/{id}", s.handleDelete)
	s.handle("POST /trials/{id}/query", s.handleQuery)
	s.handle("GET /trials/{id}/schema", s.handleSchema)
	s.handle("GET /health", s.handleHealth)
	metricsHandler := promhttp.HandlerFor(s.metrics.registry, promhttp.HandlerOpts{})
	s.handle("GET /metrics", func(w http.ResponseWriter, r *http.Request) *Error {
		metricsHandler.ServeHTTP(w, r)
		return nil
	})
	// Anything else, including a known path with another method, gets a JSON 404.
	s.handle("/", func(w http.ResponseWriter, r *http.Request) *Error {
		return newError(http.StatusNotFound, errTypeNotFound, map[string]any{"method": r.Method, "path": r.URL.Path},
			"no endpoint %s %s", r.Method, r.URL.Path)
	})
}

type statusWriter struct {
	http.ResponseWriter
	r      *http.Request
	status int
	// closing is set when the response went out before the request's body was read.
	closing bool
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
		w.beforeHeader()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
		w.beforeHeader()
	}
	return w.ResponseWriter.Write(b)
}

// beforeHeader runs once, just before the status line is written. A handler that answers
// without reading the body it was sent (a successful reset with a body, say) would make
// net/http read up to 256 KiB of that body before sending the answer, as long as a slow
// client takes; Connection: close sends the answer at once.
func (w *statusWriter) beforeHeader() {
	if w.r != nil && bodyPending(w.r) {
		w.Header().Set("Connection", "close")
		w.closing = true
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (s *Server) handle(pattern string, h handlerFunc) {
	s.mux.HandleFunc(pattern, s.wrap(pattern, h))
}

// wrap adds error rendering, panic recovery, metrics and request logging to h.
func (s *Server) wrap(route string, h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, r: r}
		if e := s.serve(h, sw, r); e != nil {
			if bodyPending(r) {
				refuseAndClose(sw, r, e)
			} else {
				writeError(sw, e)
			}
			if e.Status >= 500 {
				s.log.Error(errors.New(e.Message), "request failed", "method", r.Method, "path", r.URL.Path, "type", e.Type)
			}
		}
		if sw.closing {
			// The answer went out with Connection: close and net/http will still try to
			// discard up to 256 KiB of the unread body: give that a short deadline rather
			// than the server's ReadTimeout.
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(refusalDrainTime))
		}
		elapsed := time.Since(start)
		s.metrics.requests.WithLabelValues(route, fmt.Sprint(sw.status)).Inc()
		s.metrics.latency.WithLabelValues(route).Observe(elapsed.Seconds())
		s.log.V(1).Info("request", "method", r.Method, "path", r.URL.Path, "status", sw.status, "duration", elapsed)
	}
}

// serve runs h, turning a panic into a 500 so one bad request cannot take down the
// trials of everyone else.
func (s *Server) serve(h handlerFunc, w http.ResponseWriter, r *http.Request) (e *Error) {
	defer func() {
		if p := recover(); p != nil {
			e = newError(http.StatusInternalServerError, errTypeInternal, nil, "internal error: %v", p)
		}
	}()
	return h(w, r)
}

// validTrialID reports whether id matches [A-Za-z0-9._:-]{1,253}.
func validTrialID(id string) bool {
	if len(id) == 0 || len(id) > 253 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9',
			c == '.', c == '_', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}

func trialID(r *http.Request) (string, *Error) {
	id := r.PathValue("id")
	if !validTrialID(id) {
		return "", newError(http.StatusBadRequest, errTypeInvalidTrialID, map[string]any{"trial_id": id},
			"trial id %q must match [A-Za-z0-9._:-]{1,253}", id)
	}
	return id, nil
}

func snapshotName(r *http.Request) (string, *Error) {
	name := r.PathValue("name")
	if e := checkName("snapshot", "{name}", name); e != nil {
		return "", e
	}
	return name, nil
}

// tableName is the {table} of a URL, checked before the body is read.
func tableName(r *http.Request) (string, *Error) {
	name := r.PathValue("table")
	if e := checkName("table", "{table}", name); e != nil {
		return "", e
	}
	return name, nil
}

func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *Error) {
	tooLarge := func() *Error {
		return newError(http.StatusRequestEntityTooLarge, errTypePayloadTooLarge, map[string]any{"limit_bytes": s.maxBody},
			"request body exceeds the limit of %d bytes", s.maxBody)
	}
	if r.ContentLength > s.maxBody {
		return nil, tooLarge()
	}
	// Without a deadline a client that stops sending holds this handler, its
	// goroutine and its buffer forever. Not every ResponseWriter supports deadlines
	// (httptest's recorder does not); those requests keep the server's ReadTimeout.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.limits.BodyReadTimeout))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge()
		}
		if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
			return nil, errLimit(http.StatusRequestTimeout, errTypeRequestTimeout, "body_read_timeout_ms",
				s.limits.BodyReadTimeout.Milliseconds(), -1,
				"the request body did not arrive within %s (%d of %d bytes read)", s.limits.BodyReadTimeout, len(body), r.ContentLength)
		}
		return nil, newError(http.StatusBadRequest, errTypeInvalidJSON, nil, "reading request body: %v", err)
	}
	return body, nil
}
