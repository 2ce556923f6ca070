package controllers

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// fixedRegistry is a registry on a clock the test moves.
func fixedRegistry(now *time.Time) *slotRegistry {
	r := newSlotRegistry()
	r.epoch = "e0"
	r.now = func() time.Time { return *now }
	return r
}

var (
	classA = slotClass{Namespace: "ns", Campaign: "c", Hash: "aaaaaaaaaa"}
	classB = slotClass{Namespace: "ns", Campaign: "c", Hash: "bbbbbbbbbb"}
	pol2   = slotPolicy{Cap: 2, MaxReuses: 3, Idle: 30 * time.Second, CampaignUID: "cuid"}
)

func trialKey(i int) types.NamespacedName {
	return types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("t%d", i)}
}

func allReady(string) bool { return true }

// slotKey is a view's pod key.
func slotKey(v *slotView) types.NamespacedName {
	return types.NamespacedName{Namespace: v.Class.Namespace, Name: v.Name}
}

// claimCreated claims for trial i and marks the slot made, as execute does.
func claimCreated(t *testing.T, r *slotRegistry, c slotClass, i int, pol slotPolicy) *slotView {
	t.Helper()
	res := r.claim(c, trialKey(i), fmt.Sprintf("t%d-1", i), pol, allReady)
	if res.View == nil {
		t.Fatalf("trial %d got no slot", i)
	}
	if res.Made {
		r.markCreated(slotKey(res.View), "tok")
	}
	return res.View
}

func TestSlotClaimMakesUpToTheCapThenWaits(t *testing.T) {
	now := time.Unix(0, 0)
	r := fixedRegistry(&now)
	a := r.claim(classA, trialKey(1), "t1-1", pol2, allReady)
	b := r.claim(classA, trialKey(2), "t2-1", pol2, allReady)
	if !a.Made || !b.Made || a.View.Name == b.View.Name {
		t.Fatalf("two new slots wanted: %+v %+v", a, b)
	}
	if a.View.Name != "c-slot-aaaaaa-e00" || b.View.Name != "c-slot-aaaaaa-e01" {
		t.Errorf("names %s %s", a.View.Name, b.View.Name)
	}
	// The same attempt asking again gets the same slot, not a third.
	if again := r.claim(classA, trialKey(1), "t1-1", pol2, allReady); again.Made || again.View.Name != a.View.Name {
		t.Errorf("a second claim of the same attempt: %+v", again)
	}
	if c := r.claim(classA, trialKey(3), "t3-1", pol2, allReady); c.View != nil {
		t.Fatalf("a third slot past the cap of 2: %+v", c.View)
	}
	if w := r.waitersOf(classA); len(w) != 1 || w[0] != trialKey(3) {
		t.Errorf("waiters = %v", w)
	}
	// Another class has its own cap.
	if d := r.claim(classB, trialKey(4), "t4-1", pol2, allReady); !d.Made {
		t.Errorf("class B shares class A's cap: %+v", d)
	}
	if n := r.count(classA); n != 2 {
		t.Errorf("count(A) = %d", n)
	}
}

func TestSlotClaimTakesOnlyAFreeReadySlotOfItsClass(t *testing.T) {
	now := time.Unix(0, 0)
	r := fixedRegistry(&now)
	v := claimCreated(t, r, classA, 1, pol2)
	r.markDriven(slotKey(v), "t1-1")
	r.release(slotKey(v), "t1-1", releaseClean)

	// Not ready (its pod is gone or restarting): a new slot instead.
	if res := r.claim(classA, trialKey(2), "t2-1", pol2, func(string) bool { return false }); !res.Made {
		t.Fatalf("a not-ready free slot was claimed: %+v", res.View)
	}
	// A trial of class B never gets class A's free slot.
	if res := r.claim(classB, trialKey(3), "t3-1", pol2, allReady); !res.Made || res.View.Name == v.Name {
		t.Fatalf("class B got %+v", res.View)
	}
	// Class A's next attempt takes the free one, without making a third.
	res := r.claim(classA, trialKey(4), "t4-1", pol2, allReady)
	if res.Made || res.View.Name != v.Name || res.View.Token != "tok" {
		t.Fatalf("free slot not reused: %+v", res)
	}
}

func TestSlotClaimOfAnEarlierAttemptBlocksTheNext(t *testing.T) {
	now := time.Unix(0, 0)
	r := fixedRegistry(&now)
	v := claimCreated(t, r, classA, 1, pol2)
	if res := r.claim(classA, trialKey(1), "t1-2", pol2, allReady); res.View != nil {
		t.Fatalf("attempt 2 got a slot while attempt 1 holds %s: %+v", v.Name, res.View)
	}
	if got := r.claimOf(trialKey(1)); got == nil || got.AttemptID != "t1-1" {
		t.Fatalf("claimOf = %+v", got)
	}
}

func TestSlotRelease(t *testing.T) {
	for _, tc := range []struct {
		name         string
		kind         releaseKind
		created      bool
		reusesBefore int
		del, replace bool
	}{
		{name: "clean: free again", kind: releaseClean, created: true},
		{name: "clean at maxReuses: retired, not replaced", kind: releaseClean, created: true, reusesBefore: 2, del: true},
		{name: "dirty: replaced", kind: releaseDirty, created: true, del: true, replace: true},
		{name: "unused: free, no reuse counted", kind: releaseUnused, created: true, reusesBefore: 2},
		{name: "unused and never made: dropped", kind: releaseUnused, del: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Unix(0, 0)
			r := fixedRegistry(&now)
			res := r.claim(classA, trialKey(1), "x-0", pol2, allReady)
			key := slotKey(res.View)
			if tc.created {
				r.markCreated(key, "tok")
			}
			for i := range tc.reusesBefore {
				r.release(key, fmt.Sprintf("x-%d", i), releaseClean)
				if got := r.claim(classA, trialKey(1), fmt.Sprintf("x-%d", i+1), pol2, allReady); got.View == nil || got.View.Name != key.Name {
					t.Fatalf("reuse %d: %+v", i, got.View)
				}
			}
			out := r.release(key, fmt.Sprintf("x-%d", tc.reusesBefore), tc.kind)
			if out.Delete != tc.del || out.Replaced != tc.replace || out.Campaign != "cuid" || out.Made != tc.created {
				t.Fatalf("release = %+v, want delete %t replaced %t", out, tc.del, tc.replace)
			}
			if r.known(key) == tc.del {
				t.Errorf("known after release = %t", r.known(key))
			}
			if r.claimOf(trialKey(1)) != nil {
				t.Error("the claim outlived its release")
			}
		})
	}
}

func TestSlotReleaseOfAnotherAttemptDoesNothing(t *testing.T) {
	now := time.Unix(0, 0)
	r := fixedRegistry(&now)
	v := claimCreated(t, r, classA, 1, pol2)
	if out := r.release(slotKey(v), "someone-else", releaseDirty); out.Delete || !r.known(slotKey(v)) || r.claimOf(trialKey(1)) == nil {
		t.Fatalf("a stale release took the slot: %+v", out)
	}
}

func TestSlotReleaseWakesTheClassWaiters(t *testing.T) {
	now := time.Unix(0, 0)
	r := fixedRegistry(&now)
	one := slotPolicy{Cap: 1, MaxReuses: 50, CampaignUID: "cuid"}
	v := claimCreated(t, r, classA, 1, one)
	r.claim(classA, trialKey(2), "t2-1", one, allReady)
	r.claim(classB, trialKey(3), "t3-1", one, allReady) // made: class B is not waiting
	r.release(slotKey(v), "t1-1", releaseClean)
	select {
	case ev := <-r.Events():
		if ev.Object.GetName() != "t2" {
			t.Fatalf("woke %s", ev.Object.GetName())
		}
	default:
		t.Fatal("the waiter of class A was not woken")
	}
	select {
	case ev := <-r.Events():
		t.Fatalf("woke %s too", ev.Object.GetName())
	default:
	}
	if got := r.claim(classA, trialKey(2), "t2-1", one, allReady); got.View == nil || got.View.Name != v.Name {
		t.Fatalf("the woken waiter did not get the slot: %+v", got.View)
	}
	if w := r.waitersOf(classA); len(w) != 0 {
		t.Errorf("waiters after the claim: %v", w)
	}
}

func TestSlotSweep(t *testing.T) {
	now := time.Unix(0, 0)
	r := fixedRegistry(&now)
	one := slotPolicy{Cap: 1, MaxReuses: 50, Idle: 30 * time.Second}
	free := claimCreated(t, r, classA, 1, one)
	r.release(slotKey(free), "t1-1", releaseUnused)
	busy := claimCreated(t, r, classB, 2, one)
	none := func(types.NamespacedName, bool) bool { return false }

	now = now.Add(29 * time.Second)
	if got := r.sweep(none); len(got) != 0 {
		t.Fatalf("swept before idleSeconds: %v", got)
	}
	// A waiting attempt of the class keeps the free slot (it can use it).
	r.claim(classA, trialKey(3), "t3-1", slotPolicy{Cap: 1}, func(string) bool { return false })
	now = now.Add(time.Minute)
	if got := r.sweep(none); len(got) != 0 {
		t.Fatalf("swept a slot its class waits for: %v", got)
	}
	r.forgetWaiter(trialKey(3))
	got := r.sweep(none)
	if len(got) != 1 || got[0] != slotKey(free) {
		t.Fatalf("sweep = %v, want the idle %s only (not the busy %s)", got, free.Name, busy.Name)
	}
	// A free slot whose pod is gone goes at once.
	r.release(slotKey(busy), "t2-1", releaseUnused)
	got = r.sweep(func(k types.NamespacedName, seen bool) bool { return k == slotKey(busy) })
	if len(got) != 1 || got[0] != slotKey(busy) {
		t.Fatalf("sweep of a gone slot = %v", got)
	}
}

// Many reconciles claim at once: never more slots than the cap, never one
// slot for two trials.
func TestSlotConcurrentClaims(t *testing.T) {
	now := time.Unix(0, 0)
	var mu sync.Mutex
	r := newSlotRegistry()
	r.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	pol := slotPolicy{Cap: 3, MaxReuses: 50}
	var wg sync.WaitGroup
	got := make([]*slotView, 40)
	for i := range got {
		wg.Go(func() {
			got[i] = r.claim(classA, trialKey(i), fmt.Sprintf("t%d-1", i), pol, allReady).View
		})
	}
	wg.Wait()
	holders := map[string]int{}
	for i, v := range got {
		if v != nil {
			holders[v.Name]++
			if v.AttemptID != fmt.Sprintf("t%d-1", i) {
				t.Errorf("trial %d got attempt %s's claim", i, v.AttemptID)
			}
		}
	}
	if len(holders) != 3 {
		t.Fatalf("%d slots for a cap of 3: %v", len(holders), holders)
	}
	for name, n := range holders {
		if n != 1 {
			t.Errorf("slot %s held by %d trials", name, n)
		}
	}
	if w := r.waitersOf(classA); len(w) != 37 {
		t.Errorf("%d waiters, want 37", len(w))
	}
}

// Two processes never name a slot alike; one process names it the same on
// every retry of its create.
func TestSlotPodNames(t *testing.T) {
	if got := slotPodName("c", "abcdef0123", "e1", 0); got != "c-slot-abcdef-e10" {
		t.Fatalf("name %q, want the same on every retry: c-slot-abcdef-e10", got)
	}
	if slotPodName("c", "abcdef0123", "e1", 0) == slotPodName("c", "abcdef0123", "e2", 0) {
		t.Fatal("two epochs share a name")
	}
	long := slotPodName(string(make([]byte, 300)), "abcdef0123", "e1", 12)
	if len(long) > 63 {
		t.Fatalf("name of %d characters", len(long))
	}
}

// The first slots of a Campaign, made at once, send one policy create; a
// failed create is tried again by the next slot.
func TestSlotPolicyOncePerCampaign(t *testing.T) {
	r := newSlotRegistry()
	fail := true
	if err := r.ensurePolicy("c1", func() error { return fmt.Errorf("refused") }); err == nil {
		t.Fatal("a refused create reported success")
	}
	var mu sync.Mutex
	calls := 0
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			_ = r.ensurePolicy("c1", func() error {
				mu.Lock()
				defer mu.Unlock()
				calls++
				return nil
			})
		})
	}
	wg.Wait()
	if calls != 1 {
		t.Fatalf("%d creates after the refusal, want 1", calls)
	}
	if err := r.ensurePolicy("c2", func() error { fail = false; return nil }); err != nil || fail {
		t.Fatal("another Campaign's policy was not made")
	}
}
