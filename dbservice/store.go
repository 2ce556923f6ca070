package dbservice

import (
	"net/http"
	"sync"
	"sync/atomic"
)

// store maps trial ids to trials. Its lock guards only the map; each trial has its own.
// It enforces the process-wide limits: the number of trials and the bytes charged to
// them together.
type store struct {
	mu     sync.RWMutex
	trials map[string]*trial

	maxTrials int
	maxBytes  int64
	bytes     atomic.Int64
}

func newStore(l *Limits) *store {
	return &store{trials: map[string]*trial{}, maxTrials: l.MaxTrials, maxBytes: l.MaxTotalBytes}
}

// charge adds delta bytes to the process total unless that would cross maxBytes; a
// negative delta always succeeds.
func (s *store) charge(delta int64) *Error {
	for {
		cur := s.bytes.Load()
		next := cur + delta
		if delta > 0 && next > s.maxBytes {
			return errLimit(http.StatusInsufficientStorage, errTypeLimitExceeded, "max_total_bytes", s.maxBytes, next,
				"the trials of this service would hold %d bytes together, more than allowed", next)
		}
		if s.bytes.CompareAndSwap(cur, next) {
			return nil
		}
	}
}

func (s *store) count() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.trials)
}

// add publishes t unless its id is taken.
func (s *store) add(t *trial) *Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.trials[t.id]; ok {
		return newError(http.StatusConflict, errTypeTrialAlreadyExists, map[string]any{"trial_id": t.id},
			"trial %q already exists; delete it before initializing it again", t.id)
	}
	if len(s.trials) >= s.maxTrials {
		return errLimit(http.StatusInsufficientStorage, errTypeLimitExceeded, "max_trials", int64(s.maxTrials), int64(len(s.trials)+1),
			"the service already holds %d trials; delete finished trials first", len(s.trials))
	}
	if e := s.charge(t.accounted); e != nil {
		return e
	}
	s.trials[t.id] = t
	return nil
}

// with runs fn holding the trial's lock.
func (s *store) with(id string, fn func(t *trial) *Error) *Error {
	s.mu.RLock()
	t, ok := s.trials[id]
	s.mu.RUnlock()
	if !ok {
		return errTrialNotFound(id)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.gone {
		return errTrialNotFound(id)
	}
	return fn(t)
}

// remove deletes the trial and reports what it held.
func (s *store) remove(id string) (snapshots int, e *Error) {
	s.mu.Lock()
	t, ok := s.trials[id]
	delete(s.trials, id)
	s.mu.Unlock()
	if !ok {
		return 0, errTrialNotFound(id)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.gone = true
	_ = s.charge(-t.accounted)
	t.accounted = 0
	n := len(t.snapshots)
	// Drop references so a request still holding t cannot keep the data alive.
	t.snapshots, t.current, t.initial, t.pins = nil, nil, nil, nil
	return n, nil
}
