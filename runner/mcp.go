package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"

	"tolokaforge.io/operator/api/canonical"
	"tolokaforge.io/operator/dbservice/client"
	"tolokaforge.io/operator/runner/tools/mcpclient"
)

// mcpSession is one MCP server of one trial, shared by every tool of that
// trial declaring the same launch (command, cwd, env or URL).
//
// The server keeps its own tables (the state convention) but the DB service is
// the truth: the server is treated as a cache of it. inSyncAt is the DB version
// at which both held the same tables, and synced their per-table canonical
// hashes. Before a call, a DB that moved since (a builtin tool wrote, a reset,
// grading) is pushed into the server; after a successful call, each table whose
// hash changed is written back in one atomic PATCH, so GetState, hashes and
// snapshots always see the truth and a stale server copy never overwrites a
// newer DB table.
//
// A tool the task declares category "read" changes nothing, so ExecuteTool
// skips its write-back (a whole extra MCP round trip) and marks the session
// pending instead; every path that reads the DB (another tool, GetState,
// grading) first flushes pending sessions, so a mis-declared tool's change is
// still written before anyone looks.
type mcpSession struct {
	key string
	cfg mcpclient.Config
	db  *trialDB
	log logr.Logger

	// broken is atomic so a timed-out call can flag it without waiting for
	// the lock its own straggling goroutine may hold.
	broken atomic.Bool
	// pending: a read call succeeded since the last write-back.
	pending atomic.Bool

	mu       sync.Mutex
	srv      *mcpclient.Server
	stateful bool
	synced   map[string]string
	inSyncAt int64 // -1: unknown
	// syncEpoch is the DB's Epoch when the server was last loaded; a write of unknown
	// outcome since then makes the server's copy stale even at the same version.
	syncEpoch int64
}

// stale reports whether the DB may hold something the server does not.
func (s *mcpSession) staleLocked() bool {
	return s.inSyncAt != s.db.Version() || s.syncEpoch != s.db.Epoch()
}

func startSession(ctx context.Context, key string, cfg mcpclient.Config, db *trialDB, log logr.Logger) (*mcpSession, error) {
	srv, err := mcpclient.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &mcpSession{key: key, cfg: cfg, db: db, log: log, srv: srv, stateful: srv.HasStateTools(), inSyncAt: -1}, nil
}

// markStale makes the next call reload the server from the DB.
func (s *mcpSession) markStale() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inSyncAt, s.synced = -1, nil
}

// invalidate marks the server for a rebuild before its next use: a call that
// overran its budget may have left the stream mid-message.
func (s *mcpSession) invalidate() { s.broken.Store(true) }

// prepare returns a usable server holding the DB's current tables: rebuilt
// if a timeout broke it, reloaded if the DB moved since the last sync.
func (s *mcpSession) prepare(ctx context.Context) (*mcpclient.Server, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil {
		return nil, errors.New("MCP server is closed")
	}
	if s.broken.Load() {
		if err := s.rebuildLocked(ctx); err != nil {
			return nil, err
		}
		return s.srv, nil
	}
	if s.stateful && s.staleLocked() {
		if err := s.pushLocked(ctx); err != nil {
			return nil, err
		}
	}
	return s.srv, nil
}

// push loads the DB's current tables into the server (rebuilding it first if
// needed).
func (s *mcpSession) push(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil || !s.stateful {
		return nil
	}
	if s.broken.Load() {
		return s.rebuildLocked(ctx)
	}
	return s.pushLocked(ctx)
}

// rebuildLocked restarts the server process (or reconnects) and reloads its
// tables from the DB, which holds the state as of the last successful call.
func (s *mcpSession) rebuildLocked(ctx context.Context) error {
	s.log.Info("rebuilding MCP server after an interrupted call", "server", describeLaunch(s.cfg.Command, s.cfg.URL))
	s.inSyncAt, s.synced = -1, nil
	if err := s.srv.Restart(ctx); err != nil {
		return fmt.Errorf("rebuild MCP server: %w", err)
	}
	s.stateful = s.srv.HasStateTools()
	if s.stateful {
		if err := s.pushLocked(ctx); err != nil {
			return fmt.Errorf("rebuild MCP server: %w", err)
		}
	}
	s.broken.Store(false)
	return nil
}

func (s *mcpSession) pushLocked(ctx context.Context) error {
	epoch := s.db.Epoch()
	tables, err := s.db.Tables(ctx)
	if err != nil {
		return fmt.Errorf("read the DB tables to push into the MCP server: %w", err)
	}
	if err := s.setTablesLocked(ctx, tables, s.db.Version()); err != nil {
		return err
	}
	s.syncEpoch = epoch
	return nil
}

// setTables pushes the tables the DB holds at version (registration: the
// task's initial tables).
func (s *mcpSession) setTables(ctx context.Context, tables map[string]json.RawMessage, version int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	epoch := s.db.Epoch()
	if err := s.setTablesLocked(ctx, tables, version); err != nil {
		return err
	}
	s.syncEpoch = epoch
	return nil
}

func (s *mcpSession) setTablesLocked(ctx context.Context, tables map[string]json.RawMessage, version int64) error {
	if tables == nil {
		tables = map[string]json.RawMessage{}
	}
	s.inSyncAt, s.synced = -1, nil
	s.pending.Store(false)
	if err := s.srv.SetState(ctx, tables); err != nil {
		return fmt.Errorf("set MCP server state: %w", err)
	}
	synced := make(map[string]string, len(tables))
	for name, raw := range tables {
		h, err := canonical.HashJSON(raw)
		if err != nil {
			return fmt.Errorf("table %q: %w", name, err)
		}
		synced[name] = h
	}
	s.synced, s.inSyncAt = synced, version
	return nil
}

// syncToDB writes the server's changed tables into the DB. A server that is
// broken, or that the DB moved past, holds nothing newer than the DB, so it is
// left alone; the next call reloads it.
func (s *mcpSession) syncToDB(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil || !s.stateful || s.broken.Load() || s.staleLocked() {
		return nil
	}
	tables, err := s.srv.GetState(ctx)
	if err != nil {
		return fmt.Errorf("read MCP server state: %w", err)
	}
	for _, name := range sortedKeys(tables) {
		raw := tables[name]
		h, err := canonical.HashJSON(raw)
		if err != nil {
			return fmt.Errorf("MCP server table %q: %w", name, err)
		}
		if prev, ok := s.synced[name]; ok && prev == h {
			continue
		}
		if err := writeTable(ctx, s.db, name, raw); err != nil {
			// Some tables may have landed: the DB is the truth from here and
			// the server is reloaded before its next call.
			s.inSyncAt, s.synced = -1, nil
			return err
		}
		s.synced[name] = h
	}
	s.inSyncAt = s.db.Version()
	s.pending.Store(false)
	return nil
}

// flush writes a pending session's tables back. A server that cannot report
// them is rebuilt from the DB before its next call: the DB holds everything
// but a read call's (undeclared) change.
func (s *mcpSession) flush(ctx context.Context) {
	if !s.pending.Load() {
		return
	}
	if err := s.syncToDB(ctx); err != nil {
		s.log.Error(err, "write back MCP server state after read calls; the server will be rebuilt from the DB")
		s.invalidate()
	}
	s.pending.Store(false)
}

// writeTable replaces a table's records in one atomic PATCH: delete all, then
// insert each record in the server's order.
func writeTable(ctx context.Context, db *trialDB, name string, raw json.RawMessage) error {
	var rows []json.RawMessage
	if err := json.Unmarshal(raw, &rows); err != nil {
		return fmt.Errorf("MCP server table %q is not an array of records: %w", name, err)
	}
	ops := make([]client.Operation, 0, len(rows)+1)
	ops = append(ops, client.Delete(json.RawMessage("{}")))
	for _, r := range rows {
		ops = append(ops, client.Insert(r))
	}
	_, err := db.Patch(ctx, name, ops)
	if errors.Is(err, client.ErrTableNotFound) {
		// A table the server created: the DB creates a table only when the
		// first operation inserts.
		if len(rows) == 0 {
			return nil
		}
		_, err = db.Patch(ctx, name, ops[1:])
	}
	if err != nil {
		return fmt.Errorf("write table %q back to the DB service: %w", name, err)
	}
	return nil
}

func (s *mcpSession) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil {
		return nil
	}
	err := s.srv.Close()
	s.srv = nil
	return err
}

// mcpTool is one tool served by an mcpSession.
type mcpTool struct {
	sess   *mcpSession
	remote string // the tool's name on the server
	// readOnly: declared category "read"; see mcpSession.
	readOnly bool
}

type deferKey struct{}

// deferReadSync marks an ExecuteTool context: only there may a read call
// leave its write-back pending (registration, reset and replay sync eagerly).
func deferReadSync(ctx context.Context) context.Context {
	return context.WithValue(ctx, deferKey{}, true)
}

func (t *mcpTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	srv, err := t.sess.prepare(ctx)
	if err != nil {
		return "", err
	}
	out, isError, err := srv.Call(ctx, t.remote, args)
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		// A transport failure leaves the session unusable; rebuild next time.
		t.sess.invalidate()
		return "", fmt.Errorf("MCP server call %s: %w", t.remote, err)
	}
	if isError {
		if mcpclient.IsOverLimit(out) {
			// The call may have changed the server's tables; like a Python
			// tool's refused result, its changes are dropped: the server is
			// reloaded from the DB before its next call.
			t.sess.markStale()
		}
		if strings.TrimSpace(out) == "" {
			out = "tool reported an error without a message"
		}
		return "", errors.New(out)
	}
	if t.readOnly && ctx.Value(deferKey{}) != nil {
		t.sess.pending.Store(true)
		return out, nil
	}
	if err := t.sess.syncToDB(ctx); err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", fmt.Errorf("tool %s succeeded but its state could not be saved: %w", t.remote, err)
	}
	return out, nil
}

// Invalidate implements tools.Stateful.
func (t *mcpTool) Invalidate() { t.sess.invalidate() }
