package controllers

import (
	"time"

	"k8s.io/apimachinery/pkg/api/equality"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/host"
)

// DefaultProgressInterval is the least time between two status writes of a
// Trial that carry nothing but its running attempt's progress: a Trial
// shorter than this writes no more than it would without live progress.
const DefaultProgressInterval = 15 * time.Second

// liveProgress takes the registered attempt's latest published figures.
// Whether they are written is settled once the rest of the status is
// planned (settleProgress).
func (p *plan) liveProgress(w *world, a *evalv1.AttemptStatus, d *driverView) {
	if w.ProgressInterval <= 0 {
		return
	}
	p.ProgressAttempt = a.ID
	p.liveFigures = progressStatus(a.Number, d.Progress)
	p.progressSince = d.ProgressWritten
	if p.progressSince.IsZero() && a.StartTime != nil {
		p.progressSince = a.StartTime.Time
	}
}

// settleProgress writes the running attempt's progress into the planned
// status when a write happens anyway, or on its own when it changed and the
// last write that carried it is at least ProgressInterval old; otherwise it
// asks to come back when it may be written.
func (p *plan) settleProgress(w *world) {
	st := &p.Status
	if activeAttempt(st) == nil {
		st.Progress = nil
		p.ProgressAttempt = ""
		return
	}
	if p.ProgressAttempt == "" {
		return
	}
	fresh := p.liveFigures
	if fresh == nil || sameProgress(st.Progress, fresh) {
		// Nothing new yet: the pool announces no turn, so look again later.
		p.requeueIn(w.ProgressInterval)
		return
	}
	other := !equality.Semantic.DeepEqual(&w.Trial.Status, st)
	if wait := progressWait(w.Now, p.progressSince, w.ProgressInterval); !other && wait > 0 {
		p.requeueIn(wait)
		return
	}
	fresh.UpdateTime = &p.now
	st.Progress = fresh
	p.ProgressOnly = !other
	p.requeueIn(w.ProgressInterval)
}

// progressWait is how long progress that changed must wait before it may be
// written on its own: 0 once interval has passed since last.
func progressWait(now, last time.Time, interval time.Duration) time.Duration {
	return max(interval-now.Sub(last), 0)
}

// sameProgress compares the figures, not when they were written.
func sameProgress(a, b *evalv1.TrialProgress) bool {
	if a == nil || b == nil {
		return a == b
	}
	x, y := *a, *b
	x.UpdateTime, y.UpdateTime = nil, nil
	return equality.Semantic.DeepEqual(x, y)
}

// progressStatus is the status form of a driver's latest turn event (nil:
// no turn yet).
func progressStatus(attempt int32, ev *host.TurnEvent) *evalv1.TrialProgress {
	if ev == nil {
		return nil
	}
	pr := &evalv1.TrialProgress{Attempt: attempt, Turn: int32(ev.Turn), ToolCalls: int32(ev.ToolCallCount)}
	if u := addUsage(nil, &host.AttemptResult{AgentUsage: ev.AgentUsage, UserUsage: ev.UserUsage}); u != nil {
		pr.Usage = *u
	}
	return pr
}
