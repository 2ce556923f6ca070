// Package client is a small Go client of the exec agent (api/execagentpb):
// a gRPC channel that presents the bearer token on every call and gives
// each call a deadline when its context has none.
//
// Imports: api/authn, api/execagentpb, the standard library and
// google.golang.org/grpc.
package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"tolokaforge.io/operator/api/authn"
	pb "tolokaforge.io/operator/api/execagentpb"
)

// Options configures Dial.
type Options struct {
	// Token is the agent's bearer token. Required.
	Token string
	// CallTimeout bounds a call whose context has no deadline (Exec: the
	// command's timeout plus its kill grace plus this). Default 60 s.
	CallTimeout time.Duration
	// MaxMessageBytes is the gRPC message limit; default 65 MiB (the
	// agent's default file limit plus 1 MiB).
	MaxMessageBytes int
}

// Client is a connection to one agent; safe for concurrent use.
type Client struct {
	rpc     pb.ExecAgentClient
	conn    *grpc.ClientConn
	timeout time.Duration
}

// bearer presents the token as per-RPC credentials.
type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{authn.MetadataKey: authn.Bearer(string(b))}, nil
}

// RequireTransportSecurity is false: the agent listens on the pod network
// in plain text; the token is per attempt.
func (bearer) RequireTransportSecurity() bool { return false }

// Dial creates a client for the agent at addr (host:port); the channel
// connects lazily.
func Dial(addr string, opts Options) (*Client, error) {
	if opts.Token == "" {
		return nil, errors.New("execagent client: no token")
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = 60 * time.Second
	}
	if opts.MaxMessageBytes <= 0 {
		opts.MaxMessageBytes = 65 << 20
	}
	conn, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(bearer(opts.Token)),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(opts.MaxMessageBytes), grpc.MaxCallSendMsgSize(opts.MaxMessageBytes)),
	)
	if err != nil {
		return nil, fmt.Errorf("execagent client: dial %s: %w", addr, err)
	}
	return &Client{rpc: pb.NewExecAgentClient(conn), conn: conn, timeout: opts.CallTimeout}, nil
}

// Close closes the channel.
func (c *Client) Close() error { return c.conn.Close() }

// RPC is the generated client on the same channel (token included), for
// calls with options.
func (c *Client) RPC() pb.ExecAgentClient { return c.rpc }

func (c *Client) ctx(ctx context.Context, extra time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, c.timeout+extra)
}

// Exec runs a command; without a deadline on ctx the call waits for the
// command's timeout and kill grace plus CallTimeout.
func (c *Client) Exec(ctx context.Context, req *pb.ExecRequest) (*pb.ExecResponse, error) {
	grace := req.GetKillGraceMs()
	if grace <= 0 {
		grace = 2000
	}
	ctx, cancel := c.ctx(ctx, time.Duration(req.GetTimeoutMs()+grace)*time.Millisecond)
	defer cancel()
	resp, err := c.rpc.Exec(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("execagent exec: %w", err)
	}
	return resp, nil
}

// WriteFile writes a file atomically.
func (c *Client) WriteFile(ctx context.Context, req *pb.WriteFileRequest) (*pb.WriteFileResponse, error) {
	ctx, cancel := c.ctx(ctx, 0)
	defer cancel()
	resp, err := c.rpc.WriteFile(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("execagent write file %s: %w", req.GetPath(), err)
	}
	return resp, nil
}

// ReadFile reads a regular file.
func (c *Client) ReadFile(ctx context.Context, req *pb.ReadFileRequest) (*pb.ReadFileResponse, error) {
	ctx, cancel := c.ctx(ctx, 0)
	defer cancel()
	resp, err := c.rpc.ReadFile(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("execagent read file %s: %w", req.GetPath(), err)
	}
	return resp, nil
}

// ListDir lists a directory.
func (c *Client) ListDir(ctx context.Context, req *pb.ListDirRequest) (*pb.ListDirResponse, error) {
	ctx, cancel := c.ctx(ctx, 0)
	defer cancel()
	resp, err := c.rpc.ListDir(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("execagent list directory %s: %w", req.GetPath(), err)
	}
	return resp, nil
}

// PutTar extracts a tar below req.DestDir.
func (c *Client) PutTar(ctx context.Context, req *pb.PutTarRequest) (*pb.PutTarResponse, error) {
	ctx, cancel := c.ctx(ctx, 0)
	defer cancel()
	resp, err := c.rpc.PutTar(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("execagent put tar into %s: %w", req.GetDestDir(), err)
	}
	return resp, nil
}

// GetTar returns a tar of a file or directory.
func (c *Client) GetTar(ctx context.Context, req *pb.GetTarRequest) (*pb.GetTarResponse, error) {
	ctx, cancel := c.ctx(ctx, 0)
	defer cancel()
	resp, err := c.rpc.GetTar(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("execagent get tar %s: %w", req.GetPath(), err)
	}
	return resp, nil
}

// ResetDir makes a path an empty real directory.
func (c *Client) ResetDir(ctx context.Context, req *pb.ResetDirRequest) (*pb.ResetDirResponse, error) {
	ctx, cancel := c.ctx(ctx, 0)
	defer cancel()
	resp, err := c.rpc.ResetDir(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("execagent reset directory %s: %w", req.GetPath(), err)
	}
	return resp, nil
}

// KillAll kills every process of the container but the agent.
func (c *Client) KillAll(ctx context.Context, req *pb.KillAllRequest) (*pb.KillAllResponse, error) {
	ctx, cancel := c.ctx(ctx, time.Duration(max(req.GetGraceMs(), 2000))*time.Millisecond)
	defer cancel()
	resp, err := c.rpc.KillAll(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("execagent kill all: %w", err)
	}
	return resp, nil
}

// Health asks for the agent's health and version (no token needed).
func (c *Client) Health(ctx context.Context) (*pb.HealthResponse, error) {
	ctx, cancel := c.ctx(ctx, 0)
	defer cancel()
	resp, err := c.rpc.Health(ctx, &pb.HealthRequest{})
	if err != nil {
		return nil, fmt.Errorf("execagent health: %w", err)
	}
	return resp, nil
}

// WaitReady polls Health until it answers or ctx ends.
func (c *Client) WaitReady(ctx context.Context) error {
	delay := 20 * time.Millisecond
	for {
		resp, err := c.rpc.Health(ctx, &pb.HealthRequest{})
		if err == nil && resp.GetOk() {
			return nil
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("execagent: not ready (last: %v): %w", err, ctx.Err())
		case <-t.C:
		}
		delay = min(delay*2, time.Second)
	}
}
