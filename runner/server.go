package runner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/dbservice/client"
	"tolokaforge.io/operator/runner/proc"
)

// serviceName is the gRPC service the health server reports on (besides "").
var serviceName = runnerpb.RunnerService_ServiceDesc.ServiceName

// Server is a runner: the RunnerService implementation, its health service and
// the trial registry. Create it with New and run it with Serve.
type Server struct {
	runnerpb.UnimplementedRunnerServiceServer

	cfg    Config
	log    logr.Logger
	grpc   *grpc.Server
	health *health.Server

	draining atomic.Bool
	// life ends when a drain gives up waiting: tool calls run detached from
	// their RPC (so a retry finds the real outcome) but not past this.
	life    context.Context
	endLife context.CancelFunc

	// landlockABI is what registrations report (0: tools and checks run
	// unconfined on this kernel).
	landlockABI int

	mu          sync.Mutex
	trials      map[string]*trial
	registering map[string]struct{}
	// pendingDirs are the directories of trials in registering: being
	// registered (made, not yet published) or being cleaned up. A slot's
	// baseline check counts them as owned, as it counts a registered trial's:
	// their own registration or cleanup answers for them.
	pendingDirs map[string]string
	dbClients   map[string]*client.Client

	metrics *metrics
}

// ConfinementWarning says what the runner cannot confine on this machine,
// or is empty: where the kernel has no Landlock, Python tools and checks can
// read whatever the runner's user can. The runner logs it at startup; an
// embedding CLI (trial run) shows it to its user too. abi says what the
// kernel offers (nil: proc.LandlockABI; tests fake a kernel without it).
func ConfinementWarning(abi func() (int, error)) string {
	if abi == nil {
		abi = proc.LandlockABI
	}
	if v, err := abi(); err != nil || v <= 0 {
		if err == nil {
			err = errors.New("ABI version 0")
		}
		return fmt.Sprintf("this kernel has no Landlock (%v): a trial's tools (Python and stdio MCP), its checks and its verifier are not confined to their trial's files "+
			"and can read whatever this runner's user can (other trials' files, the judge key, the auth token)", err)
	}
	return ""
}

// subreaperOnce: the subreaper and dumpable flags are the process's, set by
// the first New.
var subreaperOnce sync.Once

// New builds a runner from cfg. It does not listen yet.
func New(cfg Config) (*Server, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("runner config: %w", err)
	}
	if c.ToolLauncher != "" {
		if err := proc.SetLauncher(c.ToolLauncher); err != nil {
			return nil, fmt.Errorf("runner config: %w", err)
		}
	}
	subreaperOnce.Do(func() {
		if err := proc.SetSubreaper(); err != nil {
			c.Logger.Error(err, "detached tool processes will escape to init; CleanupTrial still kills them")
		}
		// Whatever embeds a runner (tolokaforge runner, and the CLI's
		// trial run, pack validate and regrade through results/local)
		// runs the pack's code as its own user: that code must not read
		// this process's environment (a CLI's provider keys) or memory.
		if err := proc.SetNotDumpable(); err != nil {
			c.Logger.Error(err, "tools and checks can read this process's environment and memory through /proc")
		}
		if w := ConfinementWarning(c.LandlockABI); w != "" {
			c.Logger.Error(nil, "WARNING: "+w)
		} else {
			c.Logger.V(1).Info("a trial's tools, checks and verifier are confined with Landlock")
		}
	})
	life, endLife := context.WithCancel(context.Background())
	s := &Server{
		life:        life,
		endLife:     endLife,
		cfg:         c,
		log:         c.Logger,
		health:      health.NewServer(),
		trials:      map[string]*trial{},
		registering: map[string]struct{}{},
		pendingDirs: map[string]string{},
		dbClients:   map[string]*client.Client{},
		metrics:     newMetrics(),
	}
	abi := c.LandlockABI
	if abi == nil {
		abi = proc.LandlockABI
	}
	if v, err := abi(); err == nil && v > 0 {
		s.landlockABI = v
	}
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(maxMessageBytes),
		grpc.MaxSendMsgSize(maxMessageBytes),
		// Hosts keep one long-lived channel per runner and ping it; allow
		// that instead of answering with GOAWAY too_many_pings.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 30 * time.Second, Timeout: 10 * time.Second}),
		grpc.ChainUnaryInterceptor(s.guard),
		grpc.ChainStreamInterceptor(s.authStream),
		// Reused handler goroutines keep their grown stacks: a fresh goroutine
		// per call spends a noticeable share of a cheap call growing its stack
		// through JSON decoding and schema validation.
		grpc.NumStreamWorkers(uint32(max(4, 2*runtime.GOMAXPROCS(0)))),
	}
	if c.TracerProvider != nil {
		opts = append(opts, grpc.StatsHandler(serverTracing(c.TracerProvider)))
	}
	s.grpc = grpc.NewServer(opts...)
	runnerpb.RegisterRunnerServiceServer(s.grpc, s)
	healthpb.RegisterHealthServer(s.grpc, s.health)
	s.setServing(false)
	return s, nil
}

// GRPCServer exposes the underlying server so an embedder can register more
// services on the same port before Serve (benchmarks register nothing else:
// the health service is the echo floor).
func (s *Server) GRPCServer() *grpc.Server { return s.grpc }

func (s *Server) setServing(ok bool) {
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if ok {
		st = healthpb.HealthCheckResponse_SERVING
	}
	s.health.SetServingStatus("", st)
	s.health.SetServingStatus(serviceName, st)
}

// guard refuses RunnerService calls while draining (health answers stay
// available so probes see the drain) and calls without the trial's
// credential (Unauthenticated), and turns a panic that escaped a handler
// into INTERNAL instead of a dead process.
func (s *Server) guard(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	if s.draining.Load() && info.FullMethod != healthpb.Health_Check_FullMethodName &&
		info.FullMethod != runnerpb.RunnerService_HealthCheck_FullMethodName {
		return nil, status.Error(codes.Unavailable, "runner is draining: it no longer accepts calls")
	}
	if err := s.authenticate(ctx, info.FullMethod); err != nil {
		return nil, err
	}
	defer func() {
		if p := recover(); p != nil {
			s.log.Error(fmt.Errorf("panic: %v", p), "handler panicked", "method", info.FullMethod)
			resp, err = nil, status.Errorf(codes.Internal, "runner handler panicked: %v", p)
		}
	}()
	return handler(ctx, req)
}

// Serve serves on lis until ctx ends, then drains: health NOT_SERVING, new
// calls refused UNAVAILABLE, in-flight calls given DrainTimeout to finish
// (GracefulStop), then cut (Stop), and every trial cleaned up. It returns nil
// after a drain triggered by ctx, or the listener's error.
func (s *Server) Serve(ctx context.Context, lis net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- s.grpc.Serve(lis) }()
	s.setServing(true)
	// Whether calls are authenticated, never with what. The launcher says
	// whether tool starts pay the runner binary's start (the fallback).
	launcher, err := proc.Launcher()
	if err != nil {
		s.log.Error(err, "no limits wrapper: tools with limits will not start")
	}
	s.log.Info("serving", "address", lis.Addr().String(), "min_engine_protocol", s.cfg.MinEngineProtocol,
		"authenticated", s.cfg.AuthToken != "", "tool_limits", s.cfg.ToolLimits.String(), "tool_launcher", launcher,
		"slot", s.cfg.Slot)

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	s.drain()
	if serveErr != nil && !errors.Is(serveErr, grpc.ErrServerStopped) {
		return fmt.Errorf("serve gRPC: %w", serveErr)
	}
	return nil
}

func (s *Server) drain() {
	s.draining.Store(true)
	s.setServing(false)
	s.log.Info("draining", "timeout", s.cfg.DrainTimeout.String())
	stopped := make(chan struct{})
	go func() {
		s.grpc.GracefulStop()
		close(stopped)
	}()
	t := time.NewTimer(s.cfg.DrainTimeout)
	select {
	case <-stopped:
		t.Stop()
	case <-t.C:
		s.log.Info("drain timeout reached; cutting in-flight calls")
		s.endLife()
		s.grpc.Stop()
		<-stopped
	}
	s.endLife()
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.DrainTimeout+10*time.Second)
	defer cancel()
	n := s.cleanupAll(ctx)
	// Release pooled DB connections so the DB service can shut down promptly.
	s.cfg.HTTPClient.CloseIdleConnections()
	s.log.Info("stopped", "trials_cleaned_up", n)
}

// dbClient returns the shared client for a DB service URL.
func (s *Server) dbClient(url string) *client.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.dbClients[url]
	if !ok {
		c = client.New(url, client.WithHTTPClient(s.cfg.HTTPClient), client.WithLogger(s.log.WithName("dbclient")),
			client.WithToken(s.cfg.DBToken()))
		s.dbClients[url] = c
	}
	return c
}

// lookup returns a registered trial (nil when unknown).
func (s *Server) lookup(id string) *trial {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.trials[id]
}

// ActiveTrials is the number of registered trials.
func (s *Server) ActiveTrials() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.trials)
}

// toolContext detaches a tool call from its RPC (a host that gives up must
// still find the call's outcome recorded when it retries) while keeping it
// bound to the server's life.
func (s *Server) toolContext(rpc context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(rpc))
	stop := context.AfterFunc(s.life, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}
