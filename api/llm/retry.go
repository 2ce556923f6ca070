package llm

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RetryPolicy bounds the retries of one provider call.
type RetryPolicy struct {
	// MaxRetries is how many times a refused call is tried again (so at most
	// MaxRetries+1 requests per call).
	MaxRetries int
	// BaseDelay doubles per retry up to MaxDelay; the wait is drawn from
	// [d/2, d] (equal jitter) so concurrent trials do not retry in lockstep.
	BaseDelay time.Duration
	MaxDelay  time.Duration
	// MaxRetryAfter: a provider asking to wait longer than this is not
	// waited for; the call fails at once (as rate_limit / api_error).
	MaxRetryAfter time.Duration
}

// DefaultRetryPolicy retries five times, from 1s up to 30s, and honours a
// Retry-After of up to two minutes.
var DefaultRetryPolicy = RetryPolicy{MaxRetries: 5, BaseDelay: time.Second, MaxDelay: 30 * time.Second, MaxRetryAfter: 2 * time.Minute}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxRetries < 0 {
		p.MaxRetries = 0
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = DefaultRetryPolicy.BaseDelay
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = DefaultRetryPolicy.MaxDelay
	}
	if p.MaxDelay < p.BaseDelay {
		p.MaxDelay = p.BaseDelay
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = DefaultRetryPolicy.MaxRetryAfter
	}
	return p
}

// backoff is the wait before retry number n (0-based): exponential with
// equal jitter, never below what the provider asked for.
func (p RetryPolicy) backoff(n int, retryAfter time.Duration, jitter func() float64) time.Duration {
	d := p.BaseDelay
	for i := 0; i < n && d < p.MaxDelay; i++ {
		d *= 2
	}
	if d > p.MaxDelay {
		d = p.MaxDelay
	}
	wait := d/2 + time.Duration(jitter()*float64(d/2))
	if retryAfter > wait {
		wait = retryAfter
	}
	return wait
}

// retryAfter reads the provider's requested wait: retry-after-ms (OpenAI),
// else Retry-After as seconds or an HTTP date. ok is false when neither is
// present or parseable.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if h == nil {
		return 0, false
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return clampDuration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return clampDuration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d, true
		}
		return 0, true
	}
	return 0, false
}

// maxHonoured caps an absurd Retry-After (1e308, Inf) instead of letting it
// overflow into a negative wait; anything this long exceeds MaxRetryAfter.
const maxHonoured = 24 * time.Hour

func clampDuration(ns float64) time.Duration {
	if ns > float64(maxHonoured) {
		return maxHonoured
	}
	return time.Duration(ns)
}

// retryableStatus: request timeout, conflict (lock contention), rate limit
// and every server error, as OpenAI's own SDKs retry them.
func retryableStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusConflict ||
		code == http.StatusTooManyRequests || code >= 500
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func defaultJitter() float64 { return rand.Float64() }
