package controllers

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/host"
)

// Causes a driver's context is cancelled with.
var (
	// errManagerStopping: the process is shutting down. The attempt's result
	// is dropped: the next manager finds the attempt Running, owned by no
	// pool, and records it as ManagerRestarted.
	errManagerStopping = errors.New("manager is stopping")
	// errTrialDeleted: the Trial is gone; the driver cleans up and stops.
	errTrialDeleted = errors.New("trial was deleted")
	// errAttemptAbandoned: the controller ended the attempt (its pods failed
	// or vanished) while the driver was still at work.
	errAttemptAbandoned = errors.New("attempt ended by the controller")
)

// driverState is where an attempt this process owns stands.
type driverState int

const (
	// stateClaimed: the attempt was started by this process; its pods are
	// on their way, no driver yet.
	stateClaimed driverState = iota
	// stateQueued: handed to the pool, waiting for a free driver.
	stateQueued
	// stateRunning: a driver is running host.RunAttempt.
	stateRunning
	// stateDone: the driver returned; the result waits to be recorded.
	stateDone
)

func (s driverState) String() string {
	switch s {
	case stateClaimed:
		return "claimed"
	case stateQueued:
		return "queued"
	case stateRunning:
		return "running"
	case stateDone:
		return "done"
	}
	return fmt.Sprintf("driverState(%d)", int(s))
}

// driveFunc runs one attempt. It must return once ctx is done; registered is
// called once RegisterTrial succeeded, with what the runner and the host
// said about the attempt then.
type driveFunc func(ctx context.Context, registered func(runnerReport)) host.AttemptResult

// runnerReport is what is known once a runner accepted the trial: how it
// confines the trial's tools and checks (runnerpb.ConfinementTrailer) and
// the attempt's trace.
type runnerReport struct {
	// reported: the runner sent its confinement (an older or foreign runner
	// does not).
	reported bool
	// landlockABI is the Landlock ABI in force; 0: none, the pack's code
	// reads whatever the runner's user can.
	landlockABI int
	// traceID is the attempt's trace (32 hex digits), empty when untraced.
	traceID string
}

// driverView is a copy of a pool entry for planning.
type driverView struct {
	AttemptID  string
	State      driverState
	Registered bool
	// Report is what the runner and the host said at registration.
	Report runnerReport
	// Result is set in stateDone.
	Result *host.AttemptResult
	// Cause is why the driver was cancelled, if it was.
	Cause error
	// Progress is the running attempt's latest figures (nil before its
	// first turn); ProgressWritten is when a status write of the Trial
	// last carried them (zero: not yet).
	Progress        *host.TurnEvent
	ProgressWritten time.Time
}

type poolEntry struct {
	attemptID  string
	state      driverState
	registered bool
	report     runnerReport
	result     *host.AttemptResult
	cancel     context.CancelCauseFunc
	cause      error
	// podsSeen records, per role, that the pod was observed in the cache,
	// so a pod missing later is lost rather than not yet cached.
	podsSeen map[string]bool
	// podsCreated records, per role, that this process created the pod.
	podsCreated map[string]bool
	// input is what the attempt is driven from, fixed at its start.
	input *attemptInput
	// submitted: the attempt was handed to a driver.
	submitted bool
	// claimed is when this process started the attempt (Claim): the start
	// of Metrics.AttemptStart.
	claimed time.Time
	// progress is what the driver last published; progressWritten when a
	// status write last carried it.
	progress        *host.TurnEvent
	progressWritten time.Time
}

// Pool is the bounded set of trial drivers. It is the only place a trial's
// attempt runs, so it is also this process's record of which attempts it
// owns: an attempt Running in status that the pool has never heard of was
// started by a manager that is gone.
//
// Submit never blocks: a submitted attempt waits in its own goroutine for one
// of Size slots. Every state change a reconciler must see (registered, done)
// is announced on Events, which the Trial controller watches.
type Pool struct {
	size    int
	slots   chan struct{}
	events  chan event.GenericEvent
	log     logr.Logger
	metrics *Metrics

	ctx    context.Context
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	entries map[types.NamespacedName]*poolEntry
	running int
	queued  int
}

// NewPool makes a pool of size drivers (at least 1).
func NewPool(size int, metrics *Metrics, log logr.Logger) *Pool {
	size = max(size, 1)
	ctx, cancel := context.WithCancelCause(context.Background())
	p := &Pool{
		size:    size,
		slots:   make(chan struct{}, size),
		events:  make(chan event.GenericEvent, 1024),
		log:     log,
		metrics: metrics,
		ctx:     ctx,
		cancel:  cancel,
		entries: map[types.NamespacedName]*poolEntry{},
	}
	if metrics != nil {
		metrics.PoolCapacity.Set(float64(size))
	}
	return p
}

// Events is the source the Trial controller watches.
func (p *Pool) Events() <-chan event.GenericEvent { return p.events }

// Size is the number of drivers that may run at once.
func (p *Pool) Size() int { return p.size }

// Start implements manager.Runnable: it blocks until ctx is done, then stops
// every driver with ErrManagerStopping and waits for them.
func (p *Pool) Start(ctx context.Context) error {
	<-ctx.Done()
	p.cancel(errManagerStopping)
	p.wg.Wait()
	return nil
}

// NeedLeaderElection: drivers run on the leader only, like the controllers.
func (p *Pool) NeedLeaderElection() bool { return true }

// Claim records that this process starts attempt attemptID of key with
// input, replacing whatever the key held (a previous attempt's entry).
func (p *Pool) Claim(key types.NamespacedName, attemptID string, input *attemptInput) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e := p.entries[key]; e != nil && e.attemptID == attemptID {
		return
	}
	p.entries[key] = &poolEntry{attemptID: attemptID, state: stateClaimed, input: input,
		podsSeen: map[string]bool{}, podsCreated: map[string]bool{}, claimed: time.Now()}
}

// Input is the claimed attempt's input.
func (p *Pool) Input(key types.NamespacedName, attemptID string) *attemptInput {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e := p.entries[key]; e != nil && e.attemptID == attemptID {
		return e.input
	}
	return nil
}

// Owns reports whether this process claimed the attempt.
func (p *Pool) Owns(key types.NamespacedName, attemptID string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.entries[key]
	return e != nil && e.attemptID == attemptID
}

// View returns a copy of the key's entry.
func (p *Pool) View(key types.NamespacedName) (driverView, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.entries[key]
	if e == nil {
		return driverView{}, false
	}
	return driverView{AttemptID: e.attemptID, State: e.state, Registered: e.registered, Report: e.report, Result: e.result, Cause: e.cause,
		Progress: e.progress, ProgressWritten: e.progressWritten}, true
}

// ProgressWritten records that a status write of the Trial carried the
// attempt's progress at now: the throttle counts from there.
func (p *Pool) ProgressWritten(key types.NamespacedName, attemptID string, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e := p.entries[key]; e != nil && e.attemptID == attemptID {
		e.progressWritten = now
	}
}

// progressKey carries a running driver's progress sink in its context.
type progressKey struct{}

// progressSink is the function a driver publishes its attempt's progress
// to (nil outside a pool's driver).
func progressSink(ctx context.Context) func(host.TurnEvent) {
	f, _ := ctx.Value(progressKey{}).(func(host.TurnEvent))
	return f
}

// MarkPodCreated records that this process created role's pod of the
// attempt: from then on a pod missing from the cache is lag, until it was
// seen once, after which it is loss.
func (p *Pool) MarkPodCreated(key types.NamespacedName, attemptID, role string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e := p.entries[key]; e != nil && e.attemptID == attemptID {
		e.podsCreated[role] = true
	}
}

// ObservePod records that role's pod of the attempt was seen in the cache.
func (p *Pool) ObservePod(key types.NamespacedName, attemptID, role string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e := p.entries[key]; e != nil && e.attemptID == attemptID {
		e.podsSeen[role] = true
	}
}

// PodBookkeeping says which of the attempt's pods this process created and
// which it has seen.
func (p *Pool) PodBookkeeping(key types.NamespacedName, attemptID string) (created, seen map[string]bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.entries[key]
	if e == nil || e.attemptID != attemptID {
		return nil, nil
	}
	return cloneSet(e.podsCreated), cloneSet(e.podsSeen)
}

func cloneSet(m map[string]bool) map[string]bool {
	out := make(map[string]bool, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Submit hands a claimed attempt to a driver. It is idempotent (a second
// Submit of the same attempt does nothing) and never blocks. It reports
// whether the attempt was handed to a driver, by this call or an earlier one.
func (p *Pool) Submit(key types.NamespacedName, attemptID string, run driveFunc) bool {
	p.mu.Lock()
	e := p.entries[key]
	if e == nil || e.attemptID != attemptID {
		p.mu.Unlock()
		return false
	}
	if e.state != stateClaimed {
		p.mu.Unlock()
		return e.submitted
	}
	if err := context.Cause(p.ctx); err != nil {
		p.mu.Unlock()
		return false
	}
	ctx, cancel := context.WithCancelCause(p.ctx)
	e.state, e.submitted = stateQueued, true
	e.cancel = cancel
	p.queued++
	p.gaugesLocked()
	p.wg.Add(1)
	p.mu.Unlock()

	go p.drive(ctx, key, e, run)
	return true
}

func (p *Pool) drive(ctx context.Context, key types.NamespacedName, e *poolEntry, run driveFunc) {
	defer p.wg.Done()
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		p.mu.Lock()
		p.queued--
		p.gaugesLocked()
		p.mu.Unlock()
		p.finish(ctx, key, e, host.AttemptResult{
			Outcome: evalv1.OutcomeInfraFailed, Reason: evalv1.ReasonCanceled,
			Message: fmt.Sprintf("canceled before a driver was free: %v", context.Cause(ctx)),
		})
		return
	}
	defer func() { <-p.slots }()

	p.mu.Lock()
	p.queued--
	p.running++
	e.state = stateRunning
	p.gaugesLocked()
	p.mu.Unlock()

	registered := func(c runnerReport) {
		p.mu.Lock()
		first := !e.registered
		e.registered = true
		e.report = c
		p.mu.Unlock()
		if first {
			if p.metrics != nil && !e.claimed.IsZero() {
				p.metrics.AttemptStart.Observe(time.Since(e.claimed).Seconds())
			}
			p.notify(key)
		}
	}
	// Progress goes into the entry only: the Trial controller picks it up
	// on its own schedule, so a turn costs no event and no API write. It
	// rides in the context so every driveFunc keeps its signature.
	publish := func(ev host.TurnEvent) {
		ev.Content, ev.ToolCalls, ev.ToolStatuses = "", nil, nil
		p.mu.Lock()
		e.progress = &ev
		p.mu.Unlock()
	}
	res := run(context.WithValue(ctx, progressKey{}, publish), registered)

	p.mu.Lock()
	p.running--
	p.gaugesLocked()
	p.mu.Unlock()
	p.finish(ctx, key, e, res)
}

func (p *Pool) finish(ctx context.Context, key types.NamespacedName, e *poolEntry, res host.AttemptResult) {
	cause := context.Cause(ctx)
	p.mu.Lock()
	e.state = stateDone
	e.cause = cause
	e.cancel = nil
	current := p.entries[key] == e
	// A result cut short by shutdown is no result: the next manager records
	// the attempt as ManagerRestarted from status alone.
	if !errors.Is(cause, errManagerStopping) {
		e.result = &res
	}
	p.mu.Unlock()
	if current && !errors.Is(cause, errManagerStopping) {
		p.notify(key)
	}
}

// Cancel stops the key's driver, if one is queued or running, with cause.
// It reports whether a driver is still active (the caller waits for the
// done event before it removes the attempt's pods).
func (p *Pool) Cancel(key types.NamespacedName, cause error) (active bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.entries[key]
	if e == nil {
		return false
	}
	if e.cancel != nil {
		e.cancel(cause)
	}
	return e.state == stateQueued || e.state == stateRunning
}

// Active reports whether the key has a queued or running driver.
func (p *Pool) Active(key types.NamespacedName) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.entries[key]
	return e != nil && (e.state == stateQueued || e.state == stateRunning)
}

// Release is called once the attempt's end is in status. It drops the heavy
// part of the result (transcript, tool calls, grade), keeping the entry so a
// stale read still sees the attempt as owned, and closes a claim that never
// reached a driver so a stale read cannot submit it any more.
func (p *Pool) Release(key types.NamespacedName, attemptID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.entries[key]
	if e == nil || e.attemptID != attemptID {
		return
	}
	if e.state == stateClaimed {
		e.state, e.cause = stateDone, errAttemptAbandoned
	}
	e.input = nil
	if e.result != nil {
		r := *e.result
		r.Transcript, r.ToolCalls, r.Grade = nil, nil, nil
		e.result = &r
	}
}

// Forget removes the key once its trial is gone and no driver is active.
func (p *Pool) Forget(key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e := p.entries[key]; e != nil && e.state != stateQueued && e.state != stateRunning {
		delete(p.entries, key)
	}
}

// tracked is the number of trials the pool tracks.
func (p *Pool) tracked() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.entries)
}

// Occupancy is the number of queued and running drivers.
func (p *Pool) Occupancy() (running, queued int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.running, p.queued
}

func (p *Pool) gaugesLocked() {
	if p.metrics == nil {
		return
	}
	p.metrics.PoolRunning.Set(float64(p.running))
	p.metrics.PoolQueued.Set(float64(p.queued))
}

// notify wakes the Trial controller for key. It gives up only when the pool
// is stopping, when nobody reconciles any more.
func (p *Pool) notify(key types.NamespacedName) {
	obj := &evalv1.Trial{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	select {
	case p.events <- event.GenericEvent{Object: client.Object(obj)}:
	case <-p.ctx.Done():
	}
}
