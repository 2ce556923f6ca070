package dbservice

import (
	"net/http"
	"sync"
)

// store maps trial ids to trials. Its lock guards only the map; each trial has its own.
type store struct {
	mu     sync.RWMutex
	trials map[string]*trial
}

func newStore() *store { return &store{trials: map[string]*trial{}} }

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
		return newError(http.StatusConflict, ErrTypeTrialAlreadyExists, map[string]any{"trial_id": t.id},
			"trial %q already exists; delete it before initializing it again", t.id)
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
	n := len(t.snapshots)
	// Drop references so a request still holding t cannot keep the data alive.
	t.snapshots, t.current, t.initial = nil, nil, nil
	return n, nil
}
