package controllers

import (
	"context"
	"math"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/host"
)

func TestProgressWait(t *testing.T) {
	for _, tc := range []struct {
		name    string
		elapsed time.Duration
		want    time.Duration
	}{
		{"just written", 0, 15 * time.Second},
		{"14 s ago", 14 * time.Second, time.Second},
		{"15 s ago", 15 * time.Second, 0},
		{"an hour ago", time.Hour, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := progressWait(t0.Add(tc.elapsed), t0, 15*time.Second); got != tc.want {
				t.Fatalf("wait %s, want %s", got, tc.want)
			}
		})
	}
}

// runningRegistered is a Trial whose attempt 1 is Running and registered,
// its status as the registration write left it (carrying written), and a
// world at now whose driver published ev and last had its progress written
// at lastWrite.
func runningRegistered(t *testing.T, written *evalv1.TrialProgress, ev *host.TurnEvent, lastWrite, now time.Time) *world {
	t.Helper()
	seenBoth := map[string]bool{evalv1.RoleRunner: true, evalv1.RoleDBService: true}
	tr := running(1)
	w := &world{Now: now, Trial: tr,
		Pods:        podsOf(readyPod(tr, 1, evalv1.RoleRunner, "10.0.0.1"), readyPod(tr, 1, evalv1.RoleDBService, "10.0.0.2")),
		Driver:      &driverView{AttemptID: "uid-1-1", State: stateRunning, Registered: true},
		PodsCreated: seenBoth, PodsSeen: seenBoth, ProgressInterval: 15 * time.Second}
	reg := planTrial(w)
	tr.Status = reg.Status
	tr.Status.Progress = written
	w.Driver.Progress, w.Driver.ProgressWritten = ev, lastWrite
	return w
}

func turnEvent(turn, calls int, cost float64) *host.TurnEvent {
	return &host.TurnEvent{Turn: turn, ToolCallCount: calls,
		AgentUsage: host.Usage{Calls: int64(turn), PromptTokens: 100 * int64(turn), CompletionTokens: 10 * int64(turn), CostUSD: cost}}
}

// TestPlanThrottlesProgress: progress that changed is written on its own
// once 15 s have passed since the last write that carried it, never before;
// unchanged progress is not written; the plan always comes back for it.
func TestPlanThrottlesProgress(t *testing.T) {
	at2 := progressStatus(1, turnEvent(2, 1, 0.002))
	for _, tc := range []struct {
		name      string
		written   *evalv1.TrialProgress
		ev        *host.TurnEvent
		since     time.Duration // since the last write that carried progress
		wantWrite bool
		wantTurn  int32 // status.progress.turn planned (0: none)
		requeue   time.Duration
	}{
		{"changed, written 0 s ago", nil, turnEvent(2, 1, 0.002), 0, false, 0, 15 * time.Second},
		{"changed, written 14 s ago", nil, turnEvent(2, 1, 0.002), 14 * time.Second, false, 0, time.Second},
		{"changed, written 15 s ago", nil, turnEvent(2, 1, 0.002), 15 * time.Second, true, 2, 15 * time.Second},
		{"turn 2 to 5, written 20 s ago", at2, turnEvent(5, 4, 0.005), 20 * time.Second, true, 5, 15 * time.Second},
		{"unchanged, written 15 s ago", at2, turnEvent(2, 1, 0.002), 15 * time.Second, false, 2, 15 * time.Second},
		{"no turn yet, written 15 s ago", nil, nil, 15 * time.Second, false, 0, 15 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			last := t0.Add(10 * time.Second)
			w := runningRegistered(t, tc.written, tc.ev, last, last.Add(tc.since))
			p := planTrial(w)
			if p.ProgressOnly != tc.wantWrite {
				t.Errorf("progress-only write %v, want %v", p.ProgressOnly, tc.wantWrite)
			}
			var turn int32
			if p.Status.Progress != nil {
				turn = p.Status.Progress.Turn
			}
			if turn != tc.wantTurn {
				t.Errorf("progress.turn %d, want %d (%+v)", turn, tc.wantTurn, p.Status.Progress)
			}
			if _, changed := statusChanged(w.Trial, &p); changed != tc.wantWrite {
				t.Errorf("status changed %v, want %v", changed, tc.wantWrite)
			}
			if p.RequeueAfter != tc.requeue {
				t.Errorf("requeue after %s, want %s", p.RequeueAfter, tc.requeue)
			}
			if p.ProgressAttempt != "uid-1-1" {
				t.Errorf("progress attempt %q", p.ProgressAttempt)
			}
		})
	}
}

// statusChanged reports whether the plan's status differs from the Trial's
// (whether the reconcile writes).
func statusChanged(tr *evalv1.Trial, p *plan) (*evalv1.TrialStatus, bool) {
	return &p.Status, !equality.Semantic.DeepEqual(&tr.Status, &p.Status)
}

// TestPlanProgressRidesAlong: a status write that happens anyway (the
// registration) carries the latest progress whatever the throttle says, so
// it costs no write of its own; the figures are the driver's.
func TestPlanProgressRidesAlong(t *testing.T) {
	seenBoth := map[string]bool{evalv1.RoleRunner: true, evalv1.RoleDBService: true}
	tr := running(1)
	now := t0.Add(3 * time.Second)
	w := &world{Now: now, Trial: tr,
		Pods: podsOf(readyPod(tr, 1, evalv1.RoleRunner, "10.0.0.1"), readyPod(tr, 1, evalv1.RoleDBService, "10.0.0.2")),
		Driver: &driverView{AttemptID: "uid-1-1", State: stateRunning, Registered: true,
			Progress: &host.TurnEvent{Turn: 1, ToolCallCount: 2,
				AgentUsage: host.Usage{PromptTokens: 300, CompletionTokens: 20, CostUSD: 0.0015},
				UserUsage:  host.Usage{PromptTokens: 50, CompletionTokens: 5, CostUSD: 0.0005}},
			ProgressWritten: now},
		PodsCreated: seenBoth, PodsSeen: seenBoth, ProgressInterval: 15 * time.Second}
	p := planTrial(w)
	if p.Status.Phase != evalv1.PhaseRunning || p.ProgressOnly {
		t.Fatalf("phase %s, progress-only %v", p.Status.Phase, p.ProgressOnly)
	}
	pr := p.Status.Progress
	if pr == nil || pr.Attempt != 1 || pr.Turn != 1 || pr.ToolCalls != 2 ||
		pr.Usage.Agent.PromptTokens != 300 || pr.Usage.UserSimulator.CompletionTokens != 5 ||
		pr.Usage.TotalTokens != 375 || math.Abs(pr.Usage.TotalCostUSD-0.002) > 1e-12 ||
		pr.UpdateTime == nil || !pr.UpdateTime.Time.Equal(now) {
		t.Fatalf("progress = %+v", pr)
	}
}

// TestPlanClearsProgressWhenTheAttemptEnds: the ended attempt's figures
// move to turns and usage; progress is gone, so a reader summing usage and
// progress counts nothing twice.
func TestPlanClearsProgressWhenTheAttemptEnds(t *testing.T) {
	w := runningRegistered(t, progressStatus(1, turnEvent(3, 2, 0.003)), turnEvent(3, 2, 0.003), t0, t0.Add(20*time.Second))
	w.Driver.State = stateDone
	w.Driver.Result = &host.AttemptResult{Outcome: evalv1.OutcomePassed, Reason: evalv1.ReasonPassed, Turns: 4,
		AgentUsage: host.Usage{Calls: 4, PromptTokens: 400, CompletionTokens: 40, CostUSD: 0.004}}
	p := planTrial(w)
	if p.Status.Progress != nil || p.ProgressAttempt != "" || p.ProgressOnly {
		t.Fatalf("progress %+v attempt %q only %v after the attempt ended", p.Status.Progress, p.ProgressAttempt, p.ProgressOnly)
	}
	if p.Status.Turns != 4 || p.Status.Usage == nil || p.Status.Usage.TotalCostUSD != 0.004 {
		t.Fatalf("turns %d usage %+v", p.Status.Turns, p.Status.Usage)
	}
}

// TestPoolKeepsPublishedProgress: a driver's published progress lands in
// its pool entry, without the turn's words and without a pool event (no
// reconcile per turn); ProgressWritten is per attempt.
func TestPoolKeepsPublishedProgress(t *testing.T) {
	p, _ := startPool(t, 1)
	p.Claim(keyA, "a-1", nil)
	published, release := make(chan struct{}), make(chan struct{})
	p.Submit(keyA, "a-1", func(ctx context.Context, registered func(runnerReport)) host.AttemptResult {
		sink := progressSink(ctx)
		if sink == nil {
			t.Error("no progress sink in the driver's context")
		} else {
			sink(host.TurnEvent{Turn: 3, Actor: "agent", Content: "secret-looking words", ToolCalls: []string{"x"},
				ToolCallCount: 2, AgentUsage: host.Usage{PromptTokens: 10, CostUSD: 0.5}})
		}
		close(published)
		<-release
		return host.AttemptResult{Outcome: evalv1.OutcomePassed}
	})
	<-published
	noEvent(t, p)
	v, _ := p.View(keyA)
	if v.Progress == nil || v.Progress.Turn != 3 || v.Progress.ToolCallCount != 2 || v.Progress.AgentUsage.CostUSD != 0.5 ||
		v.Progress.Content != "" || v.Progress.ToolCalls != nil {
		t.Fatalf("progress in the view = %+v", v.Progress)
	}
	p.ProgressWritten(keyA, "a-0", t0) // another attempt's: ignored
	if v, _ := p.View(keyA); !v.ProgressWritten.IsZero() {
		t.Fatalf("progress written at %s for an attempt the entry does not hold", v.ProgressWritten)
	}
	p.ProgressWritten(keyA, "a-1", t0)
	if v, _ := p.View(keyA); !v.ProgressWritten.Equal(t0) {
		t.Fatalf("progress written at %s, want %s", v.ProgressWritten, t0)
	}
	close(release)
	nextEvent(t, p)
	if progressSink(context.Background()) != nil {
		t.Fatal("a progress sink outside a driver")
	}
}
