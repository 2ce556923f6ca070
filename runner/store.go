package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"tolokaforge.io/operator/dbservice/client"
)

// trialDB is one trial's view of its DB service. Every write the runner makes
// goes through it, so it knows the trial's current version without asking: a
// call's state_mutations is the version delta across the call.
//
// The runner is the only writer of its trials' DB state (grading's direct
// writes are followed by refresh), so a table read at the current version is
// still the truth until the version moves: reads are cached per table and
// version, which saves the DB round trip on repeated lookups. Any write the
// runner sees (a PATCH, a reset, a refresh after grading) moves the version and
// so retires every cached table at once.
//
// A write whose outcome is unknown (the service stopped answering, or the call's
// budget ran out mid-request) may still land without the runner seeing its version,
// so it bumps epoch: every cached table and every MCP server's copy taken before it is
// stale, whatever the version says.
type trialDB struct {
	c       *client.Client
	url     string
	id      string
	version atomic.Int64

	epoch    atomic.Int64
	inFlight atomic.Int64
	// cut counts DB calls ended by their context or by the transport, so a tool call
	// that timed out can tell whether it was waiting on the service.
	cut atomic.Int64

	mu    sync.Mutex
	cache map[string]cachedTable
}

type cachedTable struct {
	version, epoch int64
	raw            json.RawMessage
}

// Epoch counts the writes whose outcome the runner does not know.
func (d *trialDB) Epoch() int64 { return d.epoch.Load() }

// InFlight counts DB calls still waiting for the service, including those of a
// timed-out tool call's goroutine.
func (d *trialDB) InFlight() int64 { return d.inFlight.Load() }

// Cut counts DB calls ended by their context or the transport.
func (d *trialDB) Cut() int64 { return d.cut.Load() }

// call brackets one DB request for InFlight and Cut.
func (d *trialDB) call(err *error) func() {
	d.inFlight.Add(1)
	return func() {
		d.inFlight.Add(-1)
		if *err != nil && uncertain(*err) {
			d.cut.Add(1)
		}
	}
}

// invalidate retires every cached table and marks the MCP servers' copies stale.
func (d *trialDB) invalidate() {
	d.epoch.Add(1)
	d.mu.Lock()
	d.cache = nil
	d.mu.Unlock()
}

// uncertain reports whether err leaves a write's outcome unknown: the request may
// have reached the service and the answer was lost.
func uncertain(err error) bool {
	return errors.Is(err, client.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

func newTrialDB(c *client.Client, url, id string) *trialDB { return &trialDB{c: c, url: url, id: id} }

// observe records a version the service reported; versions only grow, and a
// timed-out call finishing late must not move the counter backwards.
func (d *trialDB) observe(v int64) {
	for {
		cur := d.version.Load()
		if v <= cur || d.version.CompareAndSwap(cur, v) {
			return
		}
	}
}

// Version is the last version this runner saw.
func (d *trialDB) Version() int64 { return d.version.Load() }

// Table implements builtin.Store. The returned bytes are shared: callers
// must not modify them.
func (d *trialDB) Table(ctx context.Context, name string) (json.RawMessage, error) {
	epoch := d.epoch.Load()
	d.mu.Lock()
	c, ok := d.cache[name]
	d.mu.Unlock()
	if ok && c.version == d.version.Load() && c.epoch == epoch {
		return c.raw, nil
	}
	var err error
	done := d.call(&err)
	st, err := d.c.State(ctx, d.id, []string{name})
	done()
	if err != nil {
		return nil, err
	}
	d.observe(st.Version)
	raw, ok := st.Data[name]
	if !ok {
		return nil, fmt.Errorf("table %q: %w", name, client.ErrTableNotFound)
	}
	d.mu.Lock()
	// Only a read at the version the runner knows is current may be reused.
	if st.Version == d.version.Load() && epoch == d.epoch.Load() {
		if d.cache == nil {
			d.cache = map[string]cachedTable{}
		}
		d.cache[name] = cachedTable{version: st.Version, epoch: epoch, raw: raw}
	}
	d.mu.Unlock()
	return raw, nil
}

// Patch implements builtin.Store.
func (d *trialDB) Patch(ctx context.Context, table string, ops []client.Operation) (int, error) {
	var err error
	done := d.call(&err)
	resp, err := d.c.Patch(ctx, d.id, table, client.PatchRequest{Operations: ops})
	done()
	if err != nil {
		if uncertain(err) {
			d.invalidate()
		}
		return 0, err
	}
	d.observe(resp.Version)
	return resp.AffectedRows, nil
}

// Tables returns every table of the trial.
func (d *trialDB) Tables(ctx context.Context) (map[string]json.RawMessage, error) {
	var err error
	done := d.call(&err)
	st, err := d.c.State(ctx, d.id, nil)
	done()
	if err != nil {
		return nil, err
	}
	d.observe(st.Version)
	return st.Data, nil
}

// refresh learns the DB's current version (after someone else, grading, wrote).
func (d *trialDB) refresh(ctx context.Context) error {
	h, err := d.c.Hash(ctx, d.id)
	if err != nil {
		return err
	}
	d.observe(h.Version)
	return nil
}
