package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"

	"tolokaforge.io/operator/api/authn"

	"tolokaforge.io/operator/api/runnerpb"
)

// ServiceName is the runner's gRPC service, as its health service reports it.
var ServiceName = runnerpb.RunnerService_ServiceDesc.ServiceName

// maxMessageBytes matches the runner's limit (large initial states and
// transcripts travel in one message).
const maxMessageBytes = 64 << 20

// Client is a connection to one runner. It is safe for concurrent use.
type Client struct {
	runnerpb.RunnerServiceClient
	conn   *grpc.ClientConn
	health healthpb.HealthClient
	poll   time.Duration
}

// Option configures Dial.
type Option func(*options)

type options struct {
	dial []grpc.DialOption
	poll time.Duration
}

// WithToken makes every call present the trial's credential (package authn)
// as "authorization: Bearer <token>" metadata, health checks included (the
// runner ignores it there). Empty sends none.
func WithToken(token string) Option {
	return func(o *options) {
		if token == "" {
			return
		}
		bearer := authn.Bearer(token)
		o.dial = append(o.dial,
			grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
				return invoker(metadata.AppendToOutgoingContext(ctx, authn.MetadataKey, bearer), method, req, reply, cc, opts...)
			}),
			grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
				return streamer(metadata.AppendToOutgoingContext(ctx, authn.MetadataKey, bearer), desc, cc, method, opts...)
			}))
	}
}

// WithReadyPoll sets WaitReady's first polling interval (default 50 ms; it
// doubles up to 1 s).
func WithReadyPoll(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.poll = d
		}
	}
}

// Dial creates a client for the runner at addr (host:port). The channel
// connects lazily and reconnects with backoff; use WaitReady before the first
// RegisterTrial.
func Dial(ctx context.Context, addr string, opts ...Option) (*Client, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("dial runner %s: %w", addr, err)
	}
	o := options{poll: 50 * time.Millisecond}
	for _, opt := range opts {
		opt(&o)
	}
	dial := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessageBytes), grpc.MaxCallSendMsgSize(maxMessageBytes)),
		// A trial can idle for minutes while the agent's LLM thinks; pings
		// keep NATs and proxies from dropping the channel, within the
		// runner's enforcement policy (one ping per 5 s at most).
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 30 * time.Second, Timeout: 10 * time.Second, PermitWithoutStream: true}),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 5 * time.Second},
			MinConnectTimeout: 5 * time.Second,
		}),
	}
	conn, err := grpc.NewClient(addr, append(dial, o.dial...)...)
	if err != nil {
		return nil, fmt.Errorf("dial runner %s: %w", addr, err)
	}
	conn.Connect()
	return &Client{
		RunnerServiceClient: runnerpb.NewRunnerServiceClient(conn),
		conn:                conn,
		health:              healthpb.NewHealthClient(conn),
		poll:                o.poll,
	}, nil
}

// Conn is the underlying channel.
func (c *Client) Conn() *grpc.ClientConn { return c.conn }

// Health is the grpc.health.v1 client on the same channel.
func (c *Client) Health() healthpb.HealthClient { return c.health }

// Close closes the channel.
func (c *Client) Close() error { return c.conn.Close() }

// ErrNotServing is wrapped by WaitReady's error when the runner answered but
// was not SERVING (still starting, or draining) when ctx ended.
var ErrNotServing = errors.New("runner is not serving")

// WaitReady polls grpc.health.v1 until the runner reports SERVING for its
// service or ctx ends. The error then names the last answer or transport
// failure.
func (c *Client) WaitReady(ctx context.Context) error {
	delay := c.poll
	var last error
	for {
		resp, err := c.health.Check(ctx, &healthpb.HealthCheckRequest{Service: ServiceName})
		switch {
		case err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING:
			return nil
		case err == nil:
			last = fmt.Errorf("%w: health status %s", ErrNotServing, resp.GetStatus())
		case ctx.Err() != nil && last != nil:
			// The check was cut by ctx itself; the previous answer says more.
		default:
			last = err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("wait for runner %s: %w (last: %w)", c.conn.Target(), ctx.Err(), last)
		case <-t.C:
		}
		delay = min(delay*2, time.Second)
	}
}
