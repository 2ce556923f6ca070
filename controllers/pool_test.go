package controllers

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/types"

	"tolokaforge.io/operator/api/task"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/host"
)

var keyA = types.NamespacedName{Namespace: "ns", Name: "a"}

// nextEvent waits for the pool's next event and returns its trial key.
func nextEvent(t *testing.T, p *Pool) types.NamespacedName {
	t.Helper()
	select {
	case ev := <-p.Events():
		return types.NamespacedName{Namespace: ev.Object.GetNamespace(), Name: ev.Object.GetName()}
	case <-time.After(10 * time.Second):
		t.Fatal("no pool event")
	}
	return types.NamespacedName{}
}

func noEvent(t *testing.T, p *Pool) {
	t.Helper()
	select {
	case ev := <-p.Events():
		t.Fatalf("unexpected event for %s", ev.Object.GetName())
	case <-time.After(50 * time.Millisecond):
	}
}

// blockingRun runs until released or cancelled and reports its cause.
func blockingRun(started chan<- string, release <-chan struct{}, name string) driveFunc {
	return func(ctx context.Context, registered func(runnerReport)) host.AttemptResult {
		registered(runnerReport{})
		started <- name
		select {
		case <-release:
			return host.AttemptResult{Outcome: evalv1.OutcomePassed, Reason: name}
		case <-ctx.Done():
			return host.AttemptResult{Outcome: evalv1.OutcomeInfraFailed, Reason: evalv1.ReasonCanceled, Message: context.Cause(ctx).Error()}
		}
	}
}

func startPool(t *testing.T, size int) (*Pool, *Metrics) {
	t.Helper()
	m := newMetrics()
	p := NewPool(size, m, logr.Discard())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return p, m
}

func TestPoolBoundsDriversAndNeverBlocksSubmit(t *testing.T) {
	p, m := startPool(t, 2)
	started := make(chan string, 10)
	release := make(chan struct{})
	keys := []types.NamespacedName{{Namespace: "ns", Name: "a"}, {Namespace: "ns", Name: "b"}, {Namespace: "ns", Name: "c"}, {Namespace: "ns", Name: "d"}}
	for _, k := range keys {
		p.Claim(k, k.Name+"-1", nil)
		if !p.Submit(k, k.Name+"-1", blockingRun(started, release, k.Name)) {
			t.Fatalf("submit %s refused", k)
		}
	}
	// Two start, two wait; Submit returned for all four.
	<-started
	<-started
	select {
	case n := <-started:
		t.Fatalf("third driver %s started beyond the bound", n)
	case <-time.After(100 * time.Millisecond):
	}
	if r, q := p.Occupancy(); r != 2 || q != 2 {
		t.Errorf("occupancy running %d queued %d, want 2 and 2", r, q)
	}
	if got := gaugeValue(t, m.PoolRunning); got != 2 {
		t.Errorf("running gauge = %v", got)
	}
	if got := gaugeValue(t, m.PoolQueued); got != 2 {
		t.Errorf("queued gauge = %v", got)
	}
	if got := gaugeValue(t, m.PoolCapacity); got != 2 {
		t.Errorf("capacity gauge = %v", got)
	}
	close(release)
	<-started
	<-started
	for range 8 { // 4 registered + 4 done
		nextEvent(t, p)
	}
	for _, k := range keys {
		v, _ := p.View(k)
		if v.State != stateDone || v.Result == nil || v.Result.Reason != k.Name || !v.Registered {
			t.Errorf("%s: %+v", k, v)
		}
	}
	if r, q := p.Occupancy(); r != 0 || q != 0 {
		t.Errorf("occupancy after = %d %d", r, q)
	}
}

func TestPoolSubmitIsIdempotentAndNeedsAClaim(t *testing.T) {
	p, _ := startPool(t, 1)
	var runs atomic.Int32
	run := func(ctx context.Context, registered func(runnerReport)) host.AttemptResult {
		runs.Add(1)
		return host.AttemptResult{Outcome: evalv1.OutcomePassed}
	}
	if p.Submit(keyA, "a-1", run) {
		t.Fatal("submit without a claim accepted")
	}
	p.Claim(keyA, "a-1", &attemptInput{Number: 1})
	first := p.Submit(keyA, "a-1", run)
	again := p.Submit(keyA, "a-1", run)
	if !first || !again {
		t.Fatalf("submit refused: first %v again %v", first, again)
	}
	if p.Submit(keyA, "a-2", run) {
		t.Fatal("submit of an attempt the pool did not claim accepted")
	}
	if got := nextEvent(t, p); got != keyA {
		t.Errorf("event for %s", got)
	}
	noEvent(t, p)
	if n := runs.Load(); n != 1 {
		t.Errorf("ran %d times", n)
	}
	if in := p.Input(keyA, "a-1"); in == nil || in.Number != 1 {
		t.Errorf("input = %+v", in)
	}
	// Claiming the same attempt again keeps the finished entry.
	p.Claim(keyA, "a-1", nil)
	if v, _ := p.View(keyA); v.State != stateDone {
		t.Errorf("re-claim reset the entry: %+v", v)
	}
}

func TestPoolCancelCarriesTheCause(t *testing.T) {
	p, _ := startPool(t, 1)
	started := make(chan string, 2)
	p.Claim(keyA, "a-1", nil)
	p.Submit(keyA, "a-1", blockingRun(started, nil, "a"))
	<-started
	nextEvent(t, p) // registered
	if !p.Cancel(keyA, errTrialDeleted) {
		t.Fatal("cancel says no driver was active")
	}
	nextEvent(t, p) // done
	v, _ := p.View(keyA)
	if v.State != stateDone || !errors.Is(v.Cause, errTrialDeleted) || v.Result == nil || v.Result.Message != errTrialDeleted.Error() {
		t.Errorf("view = %+v", v)
	}
	if p.Active(keyA) || p.Cancel(keyA, errTrialDeleted) {
		t.Error("still active after the driver returned")
	}
	p.Forget(keyA)
	if _, ok := p.View(keyA); ok || p.tracked() != 0 {
		t.Error("forget kept the entry")
	}
}

func TestPoolCancelsAQueuedAttemptWithoutRunningIt(t *testing.T) {
	p, _ := startPool(t, 1)
	started := make(chan string, 2)
	release := make(chan struct{})
	keyB := types.NamespacedName{Namespace: "ns", Name: "b"}
	p.Claim(keyA, "a-1", nil)
	p.Submit(keyA, "a-1", blockingRun(started, release, "a"))
	<-started
	nextEvent(t, p)
	p.Claim(keyB, "b-1", nil)
	p.Submit(keyB, "b-1", blockingRun(started, release, "b"))
	if !p.Cancel(keyB, errAttemptAbandoned) {
		t.Fatal("queued attempt not active")
	}
	if got := nextEvent(t, p); got != keyB {
		t.Fatalf("event for %s", got)
	}
	v, _ := p.View(keyB)
	if v.Result == nil || v.Result.Reason != evalv1.ReasonCanceled || !errors.Is(v.Cause, errAttemptAbandoned) {
		t.Errorf("view = %+v", v)
	}
	close(release)
	nextEvent(t, p)
	select {
	case n := <-started:
		if n == "b" {
			t.Error("cancelled queued attempt ran")
		}
	default:
	}
}

// TestPoolStopDropsResults: a driver cut short by shutdown reports nothing,
// so the next manager, not this one, decides what the attempt was.
func TestPoolStopDropsResults(t *testing.T) {
	p := NewPool(1, nil, logr.Discard())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Start(ctx) }()
	started := make(chan string, 1)
	var cause atomic.Value
	p.Claim(keyA, "a-1", nil)
	p.Submit(keyA, "a-1", func(ctx context.Context, registered func(runnerReport)) host.AttemptResult {
		started <- "a"
		<-ctx.Done()
		cause.Store(context.Cause(ctx))
		return host.AttemptResult{Outcome: evalv1.OutcomeInfraFailed}
	})
	<-started
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if c, _ := cause.Load().(error); !errors.Is(c, errManagerStopping) {
		t.Errorf("driver saw cause %v", c)
	}
	v, _ := p.View(keyA)
	if v.State != stateDone || v.Result != nil {
		t.Errorf("view after stop = %+v", v)
	}
	noEvent(t, p)
	if p.Submit(keyA, "a-2", nil) {
		t.Error("a stopped pool accepted work")
	}
}

func TestPoolNewClaimSilencesTheOldDriver(t *testing.T) {
	p, _ := startPool(t, 2)
	started := make(chan string, 2)
	release := make(chan struct{})
	p.Claim(keyA, "a-1", nil)
	p.Submit(keyA, "a-1", blockingRun(started, release, "old"))
	<-started
	nextEvent(t, p)
	p.Claim(keyA, "a-2", nil)
	close(release)
	noEvent(t, p)
	if v, _ := p.View(keyA); v.AttemptID != "a-2" || v.State != stateClaimed {
		t.Errorf("view = %+v", v)
	}
}

func TestPoolReleaseDropsTheHeavyParts(t *testing.T) {
	p, _ := startPool(t, 1)
	p.Claim(keyA, "a-1", nil)
	p.Submit(keyA, "a-1", func(context.Context, func(runnerReport)) host.AttemptResult {
		return host.AttemptResult{Outcome: evalv1.OutcomePassed, Turns: 3, Transcript: make([]task.Message, 10)}
	})
	nextEvent(t, p)
	p.Release(keyA, "a-1")
	v, _ := p.View(keyA)
	if v.Result == nil || v.Result.Transcript != nil || v.Result.Turns != 3 {
		t.Errorf("result after release = %+v", v.Result)
	}
}

func TestPoolPodBookkeeping(t *testing.T) {
	p := NewPool(1, nil, logr.Discard())
	p.Claim(keyA, "a-1", nil)
	p.MarkPodCreated(keyA, "a-1", evalv1.RoleRunner)
	p.ObservePod(keyA, "a-1", evalv1.RoleRunner)
	p.ObservePod(keyA, "a-0", evalv1.RoleDBService) // another attempt: ignored
	created, seen := p.PodBookkeeping(keyA, "a-1")
	if !created[evalv1.RoleRunner] || created[evalv1.RoleDBService] || !seen[evalv1.RoleRunner] || seen[evalv1.RoleDBService] {
		t.Errorf("created %v seen %v", created, seen)
	}
	created[evalv1.RoleDBService] = true
	if c, _ := p.PodBookkeeping(keyA, "a-1"); c[evalv1.RoleDBService] {
		t.Error("bookkeeping returned its own map")
	}
	if c, s := p.PodBookkeeping(keyA, "a-2"); c != nil || s != nil {
		t.Error("bookkeeping of an unclaimed attempt")
	}
}

func gaugeValue(t *testing.T, g prometheus.Gauge) float64 {
	t.Helper()
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}

func TestPoolReleaseClosesAnUnsubmittedClaim(t *testing.T) {
	p := NewPool(1, nil, logr.Discard())
	p.Claim(keyA, "a-1", &attemptInput{Number: 1})
	p.Release(keyA, "a-1")
	if p.Submit(keyA, "a-1", func(context.Context, func(runnerReport)) host.AttemptResult {
		t.Error("a released attempt ran")
		return host.AttemptResult{}
	}) {
		t.Error("submit of a released claim reported a driver")
	}
	v, ok := p.View(keyA)
	if !ok || v.State != stateDone || v.Result != nil || !errors.Is(v.Cause, errAttemptAbandoned) {
		t.Errorf("view = %+v", v)
	}
	if p.Input(keyA, "a-1") != nil {
		t.Error("input kept after release")
	}
}

// The attempt's start is timed from its claim to its first registration,
// once: a runner registering again (a retried RegisterTrial) is not a
// second start, and an attempt that never registers is not timed.
func TestPoolTimesAttemptStartFromClaimToRegistration(t *testing.T) {
	p, m := startPool(t, 2)
	p.Claim(keyA, "a-1", nil)
	time.Sleep(30 * time.Millisecond)
	registeredTwice := func(ctx context.Context, registered func(runnerReport)) host.AttemptResult {
		registered(runnerReport{})
		registered(runnerReport{})
		return host.AttemptResult{Outcome: evalv1.OutcomePassed}
	}
	if !p.Submit(keyA, "a-1", registeredTwice) {
		t.Fatal("submit refused")
	}
	keyB := types.NamespacedName{Namespace: "ns", Name: "never-registers"}
	p.Claim(keyB, "b-1", nil)
	if !p.Submit(keyB, "b-1", func(ctx context.Context, _ func(runnerReport)) host.AttemptResult {
		return host.AttemptResult{Outcome: evalv1.OutcomeInfraFailed}
	}) {
		t.Fatal("submit refused")
	}
	for range 3 { // a registered, a done, b done
		nextEvent(t, p)
	}
	var got dto.Metric
	if err := m.AttemptStart.Write(&got); err != nil {
		t.Fatal(err)
	}
	h := got.GetHistogram()
	if h.GetSampleCount() != 1 {
		t.Fatalf("attempt starts timed: %d, want 1 (registered once, the other never)", h.GetSampleCount())
	}
	if s := h.GetSampleSum(); s < 0.03 || s > 5 {
		t.Errorf("attempt start = %.3fs, want the 30 ms between claim and registration and little more", s)
	}
}
