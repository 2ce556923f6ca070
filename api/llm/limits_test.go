package llm_test

import (
	"errors"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tolokaforge.io/operator/api/llm"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/test/fakellm"
)

// 50 actors share one model whose limit is 5 requests/s; the provider
// answers the first storm429 requests 429 with retry-after-ms. No actor
// fails, the rate the provider sees stays under the limit, every 429 holds
// back all actors for its Retry-After, and each call is billed once.
func TestRateLimitStormAcrossActors(t *testing.T) {
	const (
		actors   = 50
		rpm      = 300 // 5 requests/s
		storm429 = 8
		retryMs  = 400
	)
	var n atomic.Int64
	var mu sync.Mutex
	var refusedAt []time.Time
	f := startFake(t, fakellm.Config{Responder: func(r fakellm.Request) fakellm.Reply {
		if n.Add(1) <= storm429 {
			mu.Lock()
			refusedAt = append(refusedAt, time.Now())
			mu.Unlock()
			return fakellm.Reply{Status: http.StatusTooManyRequests, Header: map[string]string{"retry-after-ms": "400"}}
		}
		return fakellm.Reply{Content: "ok", Usage: fakellm.Usage{PromptTokens: 100, CompletionTokens: 10, CachedTokens: 40}}
	}})
	limits := llm.NewLimits()
	cfg := modelCfg(f, "m")
	cfg.RateLimit = &task.RateLimit{RequestsPerMinute: rpm}
	var wg sync.WaitGroup
	usages := make([]llm.Usage, actors)
	errs := make([]error, actors)
	for i := range actors {
		m, err := llm.New(cfg, llm.Options{Role: "agent", Limits: limits})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			_, _, usages[i], errs[i] = m.Complete(ctxT(t), conv(), nil)
		})
	}
	wg.Wait()
	var total llm.Usage
	for i := range actors {
		if errs[i] != nil {
			t.Fatalf("actor %d failed: %v", i, errs[i])
		}
		if usages[i].Calls != 1 || usages[i].PromptTokens != 100 || usages[i].CachedTokens != 40 {
			t.Fatalf("actor %d usage %+v: want one billed call", i, usages[i])
		}
		total.Add(usages[i])
	}
	if total.Calls != actors || total.Retries != storm429 || total.PromptTokens != actors*100 || total.CompletionTokens != actors*10 {
		t.Fatalf("total usage %+v: want %d calls, %d retries, billed once each", total, actors, storm429)
	}
	reqs := f.Requests()
	if len(reqs) != actors+storm429 {
		t.Fatalf("%d requests, want %d", len(reqs), actors+storm429)
	}
	at := make([]time.Time, len(reqs))
	for i, r := range reqs {
		at[i] = r.Received
	}
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	// Burst 1 at 5/s: any 1s window holds at most 5 requests plus the one
	// on its edge; the whole run averages at most 5/s.
	for i := range at {
		j := i
		for j < len(at) && at[j].Sub(at[i]) < time.Second {
			j++
		}
		if j-i > 6 {
			t.Fatalf("%d requests within 1s starting at request %d: over the 5/s limit", j-i, i)
		}
	}
	if span := at[len(at)-1].Sub(at[0]).Seconds(); float64(len(at)-1)/span > 5.05 {
		t.Fatalf("%d requests in %.2fs: %.2f/s, over the limit", len(at), span, float64(len(at)-1)/span)
	}
	// Retry-After holds every actor: during a pause only a request whose
	// slot came due before the client read the 429 may still arrive (one
	// per 429 at most, as slots are 200ms apart). Unshared pauses would let
	// ~1.5 per window through at 5/s, plus the retries.
	inPause := 0
	for _, r := range refusedAt {
		for _, a := range at {
			if a.After(r.Add(20*time.Millisecond)) && a.Before(r.Add(retryMs*time.Millisecond)) {
				inPause++
			}
		}
	}
	if inPause > len(refusedAt) {
		t.Fatalf("%d requests arrived during the %d pauses a 429 asked every actor to keep", inPause, len(refusedAt))
	}
}

func TestBucketLatestLimitWinsAndPauseHolds(t *testing.T) {
	l := llm.NewLimits()
	b := l.Bucket("m", "http://x/v1", &task.RateLimit{RequestsPerMinute: 60})
	if b2 := l.Bucket("m", "http://x/v1", nil); b2 != b {
		t.Fatal("same model and base URL got another bucket")
	}
	if l.Bucket("m", "http://y/v1", nil) == b {
		t.Fatal("another base URL shares the bucket")
	}
	// The nil above lifted the cap: two requests pass at once.
	start := time.Now()
	for range 3 {
		if err := b.Wait(ctxT(t), 0); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("uncapped waits took %s", d)
	}
	b.Pause(300 * time.Millisecond)
	start = time.Now()
	if err := b.Wait(ctxT(t), 0); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Fatalf("a paused bucket let a request through after %s", d)
	}
	b.Pause(time.Hour)
	ctx, cancel := contextWithTimeout(t, 50*time.Millisecond)
	defer cancel()
	if err := b.Wait(ctx, 0); !errors.Is(err, ctx.Err()) || err == nil {
		t.Fatalf("wait past the context = %v", err)
	}
}
