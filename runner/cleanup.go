package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/dbservice/client"
	"tolokaforge.io/operator/runner/proc"
)

// trialTagKey is the variable of trialTag.
const trialTagKey = "TOLOKAFORGE_TRIAL_DIR"

// trialTag is the environment entry every MCP server of a trial (and what it
// starts) carries, so teardown finds them all: the trial's own directory.
func trialTag(dir string) string { return trialTagKey + "=" + dir }

// teardownTimeout bounds one trial's cleanup (process kills, a DB delete).
const teardownTimeout = 30 * time.Second

// CleanupTrial implements RunnerService.CleanupTrial. It is idempotent: an
// unknown trial is already clean. A slot's runner (Config.Slot) then checks
// it is back to its baseline (baseline) and answers success = false naming
// what remained, so the host replaces the slot rather than reuse it; it checks
// after an unknown trial too, since the host asks after every trial, one
// whose registration failed included.
func (s *Server) CleanupTrial(ctx context.Context, req *runnerpb.CleanupTrialRequest) (*runnerpb.CleanupTrialResponse, error) {
	id := req.GetTrialId()
	if id == "" {
		return &runnerpb.CleanupTrialResponse{Success: false, Error: "trial_id is required"}, nil
	}
	// A host that gives up on the RPC must not leave half a cleanup behind.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), teardownTimeout)
	defer cancel()
	t := s.unregister(id)
	if t == nil {
		if !s.cfg.Slot {
			return &runnerpb.CleanupTrialResponse{Success: true}, nil
		}
		var db *client.Client
		if s.cfg.DBServiceURL != "" {
			db = s.dbClient(s.cfg.DBServiceURL)
		}
		if remained := s.baseline(ctx, id, db); len(remained) > 0 {
			s.log.Info("slot not back to its baseline", "trial", id, "registered", false, "remained", remained)
			return &runnerpb.CleanupTrialResponse{Success: false, Error: fmt.Sprintf("trial '%s' was not registered, and %s", id, notBaseline(remained))}, nil
		}
		return &runnerpb.CleanupTrialResponse{Success: true}, nil
	}
	defer s.release(id)
	t.mu.Lock()
	t.closed = true
	err := s.teardown(ctx, t, true, true)
	// The host's judge key was this trial's alone.
	t.judgeKey = ""
	t.mu.Unlock()
	var remained []string
	if s.cfg.Slot {
		var db *client.Client
		if t.db != nil {
			db = t.db.c
		}
		remained = s.baseline(ctx, id, db)
	}
	if err != nil {
		t.log.Error(err, "cleanup incomplete")
		msg := fmt.Sprintf("trial '%s' was forgotten but cleanup was incomplete: %v", id, err)
		if len(remained) > 0 {
			msg += "; " + notBaseline(remained)
		}
		return &runnerpb.CleanupTrialResponse{Success: false, Error: msg}, nil
	}
	if len(remained) > 0 {
		t.log.Info("slot not back to its baseline", "remained", remained)
		return &runnerpb.CleanupTrialResponse{Success: false, Error: fmt.Sprintf("trial '%s' was cleaned up but %s", id, notBaseline(remained))}, nil
	}
	t.log.Info("trial cleaned up")
	return &runnerpb.CleanupTrialResponse{Success: true}, nil
}

// unregister removes a trial from the registry and keeps its id reserved until
// release, so a re-registration cannot race the teardown of the old one.
func (s *Server) unregister(id string) *trial {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.trials[id]
	if t == nil {
		return nil
	}
	delete(s.trials, id)
	s.registering[id] = struct{}{}
	s.pendingDirs[id] = t.dir
	return t
}

// teardown stops a trial's MCP servers (each its supervisor's whole subtree), deletes
// its DB state and removes its directory, collecting every failure.
func (s *Server) teardown(ctx context.Context, t *trial, db, dir bool) error {
	var errs []error
	for _, sess := range t.sessions {
		if err := sess.close(); err != nil {
			errs = append(errs, fmt.Errorf("stop MCP server: %w", err))
		}
	}
	if t.py != nil {
		if err := t.py.close(); err != nil {
			errs = append(errs, fmt.Errorf("stop the Python tool host: %w", err))
		}
	}
	if t.env != nil {
		// The environment's pod is the manager's to delete; the runner
		// only lets go of its exec agent.
		if err := t.env.close(); err != nil {
			errs = append(errs, fmt.Errorf("close the environment's exec agent client: %w", err))
		}
		t.env = nil
	}
	if t.dir != "" {
		// What left the servers' process groups (setsid, double fork) still
		// carries the trial's environment entry, or descends from a process
		// that does; as subreaper the runner also reaps it.
		killed, err := proc.KillTagged(ctx, trialTag(t.dir))
		if err != nil {
			errs = append(errs, fmt.Errorf("kill the trial's detached processes: %w", err))
		}
		if len(killed) > 0 {
			t.log.Info("killed processes the trial's tools left behind", "count", len(killed))
		}
	}
	if db && t.db != nil {
		if err := t.db.c.Delete(ctx, t.id); err != nil && !errors.Is(err, client.ErrTrialNotFound) {
			errs = append(errs, fmt.Errorf("delete DB state: %w", err))
		}
	}
	if dir && t.dir != "" {
		if err := removeTrialDir(t.dir); err != nil {
			errs = append(errs, fmt.Errorf("remove trial directory: %w", err))
		}
	}
	return errors.Join(errs...)
}

// cleanupAll tears down every registered trial (shutdown) and returns how many.
func (s *Server) cleanupAll(ctx context.Context) int {
	s.mu.Lock()
	all := make([]*trial, 0, len(s.trials))
	for id, t := range s.trials {
		all = append(all, t)
		delete(s.trials, id)
	}
	s.mu.Unlock()
	for _, t := range all {
		t.mu.Lock()
		t.closed = true
		if err := s.teardown(ctx, t, true, true); err != nil {
			t.log.Error(err, "cleanup at shutdown incomplete")
		}
		t.judgeKey = ""
		t.mu.Unlock()
	}
	return len(all)
}
