package runner

import (
	"context"
	"errors"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"tolokaforge.io/operator/api/authn"
)

// openMethod reports whether a method answers without the trial's credential:
// only grpc.health.v1, which kubelet probes call and which changes nothing.
// RunnerService.HealthCheck probes the DB service on the caller's behalf, so
// it is authenticated like every other RunnerService call.
func openMethod(fullMethod string) bool {
	return fullMethod == healthpb.Health_Check_FullMethodName ||
		fullMethod == healthpb.Health_Watch_FullMethodName ||
		fullMethod == healthpb.Health_List_FullMethodName
}

// authenticate refuses a call that does not carry the runner's token. It runs
// before any handler, so a refused call has changed nothing. The presented
// value is never logged or echoed.
func (s *Server) authenticate(ctx context.Context, fullMethod string) error {
	if s.cfg.AuthToken == "" || openMethod(fullMethod) {
		return nil
	}
	var presented string
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if v := md.Get(authn.MetadataKey); len(v) > 0 {
			presented = v[0]
		}
	}
	if err := authn.Check(presented, s.cfg.AuthToken); err != nil {
		s.log.Info("refused an unauthenticated call", "method", fullMethod, "why", err.Error())
		if errors.Is(err, authn.ErrMissing) {
			return status.Error(codes.Unauthenticated, "runner: the call carries no trial credential (authorization: Bearer <token> metadata)")
		}
		return status.Error(codes.Unauthenticated, "runner: the call's trial credential is not this runner's")
	}
	return nil
}

// authStream applies authenticate to streaming calls (only grpc.health.v1
// Watch streams today, which is open; a future streaming RPC is covered).
func (s *Server) authStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if err := s.authenticate(ss.Context(), info.FullMethod); err != nil {
		return err
	}
	return handler(srv, ss)
}
