package fakellm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// Config sets up a Server. Replies are chosen per request in this order:
// the model's own queue in Scripts if it has one, else Responder if set, else
// the shared Script queue. An exhausted queue answers 500 naming the model.
type Config struct {
	Script    []Reply
	Scripts   map[string][]Reply
	Responder func(Request) Reply
	// APIKey, when set, must arrive as "Authorization: Bearer <key>".
	APIKey string
	// Lenient accepts conversations the real API rejects (tool messages that
	// answer no preceding tool call, tool calls left unanswered).
	Lenient bool
	// ReasoningModels answer like OpenAI's reasoning models (o1, o3, gpt-5):
	// a request carrying max_tokens, or a temperature other than 1, is
	// refused with 400 and the provider's own error (unsupported_parameter /
	// unsupported_value), so a client that sends the wrong knob fails here
	// as it would in production.
	ReasoningModels []string
	// Traces, when set, is listed at TracesPath on the provider's own port
	// (its OTLP receiver is started on another).
	Traces *TraceSink
	Log    logr.Logger
}

// maxBody bounds a request body; real prompts are far smaller.
const maxBody = 32 << 20

// Server is the fake provider. Its methods are safe for concurrent use.
type Server struct {
	cfg Config
	log logr.Logger

	mu       sync.Mutex
	shared   []Reply
	perModel map[string][]Reply
	served   map[string]int // replies taken, by queue ("" = shared)
	requests []Request
	seq      int
	callSeq  int

	httpSrv *http.Server
	ln      net.Listener
	done    chan struct{}
}

// New validates the script and builds a Server; call Start to listen or
// mount Handler yourself.
func New(cfg Config) (*Server, error) {
	for i, r := range cfg.Script {
		if err := r.validate(fmt.Sprintf("script[%d]", i)); err != nil {
			return nil, fmt.Errorf("fakellm config: %w", err)
		}
	}
	perModel := make(map[string][]Reply, len(cfg.Scripts))
	for model, rs := range cfg.Scripts {
		if model == "" {
			return nil, errors.New("fakellm config: Scripts has an empty model name; use Script for the shared queue")
		}
		for i, r := range rs {
			if err := r.validate(fmt.Sprintf("scripts[%q][%d]", model, i)); err != nil {
				return nil, fmt.Errorf("fakellm config: %w", err)
			}
		}
		perModel[model] = slices.Clone(rs)
	}
	return &Server{
		cfg:      cfg,
		log:      cfg.Log,
		shared:   slices.Clone(cfg.Script),
		perModel: perModel,
		served:   map[string]int{},
	}, nil
}

// Start serves on addr ("" means 127.0.0.1:0) until Close.
func (s *Server) Start(addr string) error {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("fakellm: listen on %s: %w", addr, err)
	}
	s.mu.Lock()
	if s.httpSrv != nil {
		s.mu.Unlock()
		_ = ln.Close()
		return errors.New("fakellm: server already started")
	}
	s.ln = ln
	s.httpSrv = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	s.done = make(chan struct{})
	srv, done := s.httpSrv, s.done
	s.mu.Unlock()
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error(err, "fakellm serve")
		}
	}()
	s.log.Info("fake LLM listening", "url", s.URL())
	return nil
}

// URL is the OpenAI base URL to configure clients with, ending in /v1.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return "http://" + s.ln.Addr().String() + "/v1"
}

// Close stops the server, cutting short any delayed replies.
func (s *Server) Close() error {
	s.mu.Lock()
	srv, done := s.httpSrv, s.done
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	err := srv.Close()
	<-done
	return err
}

// Enqueue appends replies to a model's queue ("" = the shared queue). It
// changes nothing if any reply is invalid.
func (s *Server) Enqueue(model string, replies ...Reply) error {
	for i, r := range replies {
		if err := r.validate(fmt.Sprintf("enqueue %q reply %d", model, i)); err != nil {
			return fmt.Errorf("fakellm: %w", err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if model == "" {
		s.shared = append(s.shared, replies...)
	} else {
		s.perModel[model] = append(s.perModel[model], replies...)
	}
	return nil
}

// Remaining is the number of unused replies in a queue ("" = shared).
func (s *Server) Remaining(model string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if model == "" {
		return len(s.shared)
	}
	return len(s.perModel[model])
}

// Requests returns every request received so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// RequestsFor returns the requests that named model.
func (s *Server) RequestsFor(model string) []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Request
	for _, r := range s.requests {
		if r.Model == model {
			out = append(out, r)
		}
	}
	return out
}

// take records the request and picks its reply in one step, so replies are
// handed out in the order requests are recorded. ok=false means the queue is
// exhausted; queue names it ("" = shared, "responder" = Responder).
func (s *Server) take(req *Request) (reply Reply, queue string, ok bool) {
	s.mu.Lock()
	s.recordLocked(req, "")
	q, perModel := s.perModel[req.Model]
	switch {
	case perModel:
		defer s.mu.Unlock()
		if len(q) == 0 {
			return Reply{}, req.Model, false
		}
		s.perModel[req.Model] = q[1:]
		s.served[req.Model]++
		return q[0], req.Model, true
	case s.cfg.Responder != nil:
		s.mu.Unlock()
		// Called unlocked: a responder may be slow or call back into s.
		return s.cfg.Responder(*req), "responder", true
	default:
		defer s.mu.Unlock()
		if len(s.shared) == 0 {
			return Reply{}, "", false
		}
		r := s.shared[0]
		s.shared = s.shared[1:]
		s.served[""]++
		return r, "", true
	}
}

func (s *Server) servedCount(queue string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.served[queue]
}

// Handler serves the chat-completions endpoints; mount it anywhere.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/chat/completions", s.serveChat)
	mux.HandleFunc("/chat/completions", s.serveChat)
	if s.cfg.Traces != nil {
		mux.Handle(TracesPath, s.cfg.Traces)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, errorInfo{
			Message: fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path), Type: "invalid_request_error",
		}, nil)
	})
	return mux
}

func (s *Server) serveChat(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, errorInfo{
			Message: fmt.Sprintf("method %s not allowed on %s; use POST", r.Method, r.URL.Path), Type: "invalid_request_error",
		}, nil)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeError(w, http.StatusBadRequest, errorInfo{Message: "read request body: " + err.Error(), Type: "invalid_request_error"}, nil)
		return
	}
	req, perr := parseRequest(body, !s.cfg.Lenient)
	if perr == nil && slices.Contains(s.cfg.ReasoningModels, req.Model) {
		perr = reasoningModelRefusal(&req)
	}
	req.Raw = body
	req.Path = r.URL.Path
	req.Authorization = r.Header.Get("Authorization")
	req.Header = r.Header.Clone()
	req.Received = time.Now()

	if perr == nil && s.cfg.APIKey != "" && req.Authorization != "Bearer "+s.cfg.APIKey {
		s.record(&req, "incorrect API key provided")
		writeError(w, http.StatusUnauthorized, errorInfo{
			Message: "Incorrect API key provided.", Type: "invalid_request_error", Code: "invalid_api_key",
		}, nil)
		return
	}
	if perr != nil {
		s.record(&req, perr.Error())
		var re *requestError
		param, code, msg := "", "", perr.Error()
		if errors.As(perr, &re) {
			param, code = re.param, re.code
			if re.verbatim {
				msg = re.msg
			}
		}
		s.log.V(1).Info("rejected request", "model", req.Model, "error", perr.Error())
		writeError(w, http.StatusBadRequest, errorInfo{Message: msg, Type: "invalid_request_error", Param: param, Code: code}, nil)
		return
	}

	// The reply is taken on arrival so concurrent requests are answered in
	// arrival order, whatever their delays.
	reply, queue, ok := s.take(&req)
	seq := req.Seq
	if !ok {
		msg := fmt.Sprintf("fakellm: script for model %q is exhausted after %d replies", req.Model, s.servedCount(queue))
		s.log.Info("script exhausted", "model", req.Model, "seq", seq)
		writeError(w, http.StatusInternalServerError, errorInfo{Message: msg, Type: "server_error"}, nil)
		return
	}
	s.log.V(1).Info("chat completion", "model", req.Model, "seq", seq, "messages", len(req.Messages),
		"tools", len(req.Tools), "status", max(reply.Status, http.StatusOK), "toolCalls", len(reply.ToolCalls))
	if reply.Delay > 0 && !sleep(r.Context(), reply.Delay) {
		return
	}
	if reply.isError() {
		writeReplyError(w, reply)
		return
	}
	writeJSON(w, http.StatusOK, reply.Header, s.completion(req, reply, seq))
}

// record stores a request that is answered without a reply.
func (s *Server) record(req *Request, errMsg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recordLocked(req, errMsg)
}

func (s *Server) recordLocked(req *Request, errMsg string) {
	req.Seq = s.seq
	req.Error = errMsg
	s.seq++
	s.requests = append(s.requests, *req)
}

func (s *Server) nextCallID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.callSeq++
	return fmt.Sprintf("call_fake%04d", s.callSeq)
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
