package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
)

// GetState implements RunnerService.GetState. include_unstable selects the
// full state (else unstable fields are filtered out); tables narrows the
// returned tables (an unknown name is an error). Both hashes always describe
// the whole trial state.
func (s *Server) GetState(ctx context.Context, req *runnerpb.GetStateRequest) (*runnerpb.GetStateResponse, error) {
	fail := func(err error) (*runnerpb.GetStateResponse, error) {
		return &runnerpb.GetStateResponse{Success: false, Error: err.Error()}, nil
	}
	t := s.lookup(req.GetTrialId())
	if t == nil {
		return &runnerpb.GetStateResponse{Success: false, Error: trialNotFound(req.GetTrialId())}, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return &runnerpb.GetStateResponse{Success: false, Error: trialNotFound(req.GetTrialId())}, nil
	}
	t.flushPending(ctx, nil)
	var data map[string]json.RawMessage
	var stable, full string
	if req.GetIncludeUnstable() {
		st, err := t.db.c.State(ctx, t.id, req.GetTables())
		if err != nil {
			return fail(fmt.Errorf("DB Service error: %w", err))
		}
		t.db.observe(st.Version)
		data, stable, full = st.Data, st.StableHash, st.FullHash
	} else {
		st, err := t.db.c.StableState(ctx, t.id)
		if err != nil {
			return fail(fmt.Errorf("DB Service error: %w", err))
		}
		t.db.observe(st.Version)
		data = st.Data
		if names := req.GetTables(); len(names) > 0 {
			picked := make(map[string]json.RawMessage, len(names))
			for _, n := range names {
				raw, ok := st.Data[n]
				if !ok {
					return fail(fmt.Errorf("table %q not found in trial %q", n, t.id))
				}
				picked[n] = raw
			}
			data = picked
		}
		h, err := t.db.c.Hash(ctx, t.id)
		if err != nil {
			return fail(fmt.Errorf("DB Service error: %w", err))
		}
		stable, full = h.StableHash, h.FullHash
	}
	if data == nil {
		data = map[string]json.RawMessage{}
	}
	out, err := task.Encode(data)
	if err != nil {
		return fail(fmt.Errorf("encode state: %w", err))
	}
	return &runnerpb.GetStateResponse{Success: true, StateJson: string(out), StableHash: stable, FullHash: full}, nil
}

// ResetTrial implements RunnerService.ResetTrial: the DB back to its initial
// state, the tool-call record emptied, the file tools' directory re-provisioned,
// MCP servers reloaded from the DB, then the initialization actions again when
// asked. It answers the stable hash afterwards.
func (s *Server) ResetTrial(ctx context.Context, req *runnerpb.ResetTrialRequest) (*runnerpb.ResetTrialResponse, error) {
	t := s.lookup(req.GetTrialId())
	if t == nil {
		return &runnerpb.ResetTrialResponse{Success: false, Error: trialNotFound(req.GetTrialId())}, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return &runnerpb.ResetTrialResponse{Success: false, Error: trialNotFound(req.GetTrialId())}, nil
	}
	if t.env != nil {
		err := errEnvironmentReset(t)
		t.log.Info("reset refused", "error", err.Error())
		return &runnerpb.ResetTrialResponse{Success: false, Error: err.Error()}, nil
	}
	hash, err := s.reset(ctx, t, req.GetExecuteInitActions())
	if err != nil {
		t.log.Error(err, "reset failed")
		return &runnerpb.ResetTrialResponse{Success: false, Error: err.Error()}, nil
	}
	t.log.Info("trial reset", "init_actions", req.GetExecuteInitActions())
	return &runnerpb.ResetTrialResponse{Success: true, StateHash: hash}, nil
}

func (s *Server) reset(ctx context.Context, t *trial, initActions bool) (string, error) {
	r, err := t.db.c.Reset(ctx, t.id)
	if err != nil {
		return "", fmt.Errorf("DB Service error: %w", err)
	}
	t.db.observe(r.Version)
	t.records = nil
	t.calls = map[string]*callEntry{}
	if err := resetFiles(t); err != nil {
		return "", err
	}
	for _, sess := range t.sessions {
		if err := sess.push(ctx); err != nil {
			return "", fmt.Errorf("reload MCP server state: %w", err)
		}
	}
	if initActions {
		if err := s.runInitActions(ctx, t); err != nil {
			return "", err
		}
	}
	h, err := t.db.c.Hash(ctx, t.id)
	if err != nil {
		return "", fmt.Errorf("DB Service error: %w", err)
	}
	t.db.observe(h.Version)
	return h.StableHash, nil
}

// resetFiles empties the file tools' directory (keeping the directory itself,
// which an MCP server may use as its cwd) and writes initial_state.filesystem
// again.
func resetFiles(t *trial) error {
	entries, err := os.ReadDir(t.filesDir)
	if err != nil {
		return fmt.Errorf("reset trial files: %w", err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(t.filesDir, e.Name())); err != nil {
			return fmt.Errorf("reset trial files: %w", err)
		}
	}
	for _, name := range sortedKeys(filesystemOf(t.spec.Task.InitialState)) {
		if err := writeUnder(t.filesDir, name, []byte(t.spec.Task.InitialState.Filesystem[name]), 0o644); err != nil {
			return fmt.Errorf("reset trial files: task.initial_state.filesystem[%q]: %w", name, err)
		}
	}
	return nil
}
