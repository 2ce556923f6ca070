package runner

import (
	"context"
	"sort"
	"time"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/runner/tools"
)

// healthProbeTimeout bounds the DB probe so HealthCheck answers promptly when
// the DB service hangs.
const healthProbeTimeout = 2 * time.Second

// Health statuses.
const (
	statusHealthy   = "healthy"
	statusDegraded  = "degraded"
	statusUnhealthy = "unhealthy"
)

// HealthCheck implements RunnerService.HealthCheck: "healthy" when every DB
// service the runner uses answers, "degraded" when one does not (or none is
// configured), "unhealthy" while draining.
func (s *Server) HealthCheck(ctx context.Context, _ *runnerpb.HealthCheckRequest) (*runnerpb.HealthCheckResponse, error) {
	resp := &runnerpb.HealthCheckResponse{
		Version:           s.cfg.Version,
		NumActiveTrials:   int32(s.ActiveTrials()),
		AvailableAdapters: []string{tools.AdapterBuiltin, tools.AdapterMCPServer},
	}
	resp.DbServiceConnected = s.dbReachable(ctx)
	switch {
	case s.draining.Load():
		resp.Status = statusUnhealthy
	case resp.DbServiceConnected:
		resp.Status = statusHealthy
	default:
		resp.Status = statusDegraded
	}
	return resp, nil
}

// dbReachable probes the configured DB service and every one a registered
// trial uses.
func (s *Server) dbReachable(ctx context.Context) bool {
	urls := map[string]bool{}
	if s.cfg.DBServiceURL != "" {
		urls[s.cfg.DBServiceURL] = true
	}
	s.mu.Lock()
	for _, t := range s.trials {
		if t.db != nil {
			urls[t.db.url] = true
		}
	}
	s.mu.Unlock()
	if len(urls) == 0 {
		return false
	}
	list := make([]string, 0, len(urls))
	for u := range urls {
		list = append(list, u)
	}
	sort.Strings(list)
	ctx, cancel := context.WithTimeout(ctx, healthProbeTimeout)
	defer cancel()
	for _, u := range list {
		if _, err := s.dbClient(u).Health(ctx); err != nil {
			s.log.V(1).Info("DB service unreachable", "url", u, "error", err.Error())
			return false
		}
	}
	return true
}
