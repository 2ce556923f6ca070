package campaign

import (
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// defaultExpectationTTL bounds how long a creation the cache never showed is
// counted as running. A watch delivers a created Trial within moments; the
// bound only matters when a create's response was lost and the object never
// existed.
const defaultExpectationTTL = 2 * time.Minute

// expectations remember the Trials this process created until the informer
// cache shows them. Without them a reconcile that runs before the cache
// caught up would see fewer Trials than exist, count fewer as running and
// create past maxParallel.
type expectations struct {
	mu  sync.Mutex
	ttl time.Duration
	now func() time.Time
	// by campaign UID (a re-created campaign of the same name starts clean),
	// then Trial name.
	m map[types.UID]map[string]expected
}

type expected struct {
	cell Cell
	at   time.Time
}

func newExpectations(ttl time.Duration, now func() time.Time) *expectations {
	if ttl <= 0 {
		ttl = defaultExpectationTTL
	}
	if now == nil {
		now = time.Now
	}
	return &expectations{ttl: ttl, now: now, m: map[types.UID]map[string]expected{}}
}

// expect records a creation about to be sent.
func (e *expectations) expect(campaign types.UID, name string, cell Cell) {
	e.mu.Lock()
	defer e.mu.Unlock()
	byName := e.m[campaign]
	if byName == nil {
		byName = map[string]expected{}
		e.m[campaign] = byName
	}
	byName[name] = expected{cell: cell, at: e.now()}
}

// forget drops a creation that failed.
func (e *expectations) forget(campaign types.UID, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m[campaign], name)
	if len(e.m[campaign]) == 0 {
		delete(e.m, campaign)
	}
}

// clear drops everything of a campaign (it is gone).
func (e *expectations) clear(campaign types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, campaign)
}

// pending drops the creations the cache shows (seen) or that expired and
// returns the rest, sorted by name.
func (e *expectations) pending(campaign types.UID, seen func(name string) bool) []inFlight {
	e.mu.Lock()
	defer e.mu.Unlock()
	byName := e.m[campaign]
	now := e.now()
	var out []inFlight
	for name, x := range byName {
		if seen(name) || now.Sub(x.at) > e.ttl {
			delete(byName, name)
			continue
		}
		out = append(out, inFlight{Name: name, Cell: x.cell})
	}
	if len(byName) == 0 {
		delete(e.m, campaign)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
