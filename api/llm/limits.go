package llm

import (
	"context"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"tolokaforge.io/operator/api/task"
)

// Limits holds one Bucket per (model, base URL), shared by every client
// built with it: the manager owns one and passes it to every actor of every
// trial, so a provider's quota is spent by the process as a whole and a
// 429's Retry-After holds back every trial, not just the one that got it.
// The zero value is not usable; call NewLimits. Safe for concurrent use.
type Limits struct {
	mu sync.Mutex
	m  map[limitKey]*Bucket
}

type limitKey struct{ model, baseURL string }

// NewLimits returns an empty registry.
func NewLimits() *Limits { return &Limits{m: map[limitKey]*Bucket{}} }

// Bucket returns the bucket of model at baseURL, creating it on first use.
// rl (nil: no cap) replaces the bucket's caps when it differs from them:
// the latest configuration wins, so raising a quota in a new Campaign takes
// effect without a restart. Without caps the bucket still carries pauses.
func (l *Limits) Bucket(model, baseURL string, rl *task.RateLimit) *Bucket {
	var want task.RateLimit
	if rl != nil {
		want = *rl
	}
	k := limitKey{model, baseURL}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.m[k]
	if b == nil {
		b = &Bucket{req: rate.NewLimiter(rate.Inf, 1), tok: rate.NewLimiter(rate.Inf, 1)}
		l.m[k] = b
	}
	b.set(want)
	return b
}

// Bucket paces the calls to one model: a request rate and a token rate
// (token buckets from golang.org/x/time/rate), and a pause until a time a
// provider named.
type Bucket struct {
	req, tok *rate.Limiter

	mu     sync.Mutex
	limit  task.RateLimit
	paused time.Time
}

func (b *Bucket) set(rl task.RateLimit) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if rl == b.limit {
		return
	}
	b.limit = rl
	// Burst 1: requests are spread evenly, never bunched into a second's
	// worth at once, which is what providers' per-second enforcement sees.
	if rl.RequestsPerMinute > 0 {
		b.req.SetLimit(rate.Limit(float64(rl.RequestsPerMinute) / 60))
	} else {
		b.req.SetLimit(rate.Inf)
	}
	b.req.SetBurst(1)
	if rl.TokensPerMinute > 0 {
		b.tok.SetLimit(rate.Limit(float64(rl.TokensPerMinute) / 60))
		b.tok.SetBurst(int(min(rl.TokensPerMinute, math.MaxInt32)))
	} else {
		b.tok.SetLimit(rate.Inf)
		b.tok.SetBurst(1)
	}
}

// Pause holds every caller back until now+d (a later pause wins).
func (b *Bucket) Pause(d time.Duration) {
	until := time.Now().Add(d)
	b.mu.Lock()
	if until.After(b.paused) {
		b.paused = until
	}
	b.mu.Unlock()
}

func (b *Bucket) pausedFor() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return time.Until(b.paused)
}

// Wait blocks until one request estimated at tokens may be sent: past any
// pause, then a request slot and the tokens. It returns ctx.Err() if the
// context ends first, giving back what it reserved.
//
// The limiter hands out slots spaced by the rate. A slot that falls inside a
// pause (another trial's 429 arrived while this caller queued) is dropped
// and a new one taken after the pause, so callers held by a pause leave it
// spaced again instead of all at once.
func (b *Bucket) Wait(ctx context.Context, tokens int) error {
	for {
		if err := b.waitPause(ctx); err != nil {
			return err
		}
		r := b.req.Reserve()
		if err := sleepCtx(ctx, r.Delay()); err != nil {
			r.Cancel()
			return err
		}
		if b.pausedFor() <= 0 {
			break
		}
	}
	if tokens > 0 {
		rt := b.tok.ReserveN(time.Now(), min(tokens, b.tok.Burst()))
		if rt.OK() {
			if err := sleepCtx(ctx, rt.Delay()); err != nil {
				rt.Cancel()
				return err
			}
		}
	}
	return nil
}

func (b *Bucket) waitPause(ctx context.Context) error {
	for {
		d := b.pausedFor()
		if d <= 0 {
			return ctx.Err()
		}
		if err := sleepCtx(ctx, d); err != nil {
			return err
		}
	}
}

// Charge bills tokens used beyond what Wait reserved, without waiting: the
// debt delays the next callers instead.
func (b *Bucket) Charge(tokens int) {
	if tokens <= 0 {
		return
	}
	b.tok.ReserveN(time.Now(), min(tokens, b.tok.Burst()))
}
