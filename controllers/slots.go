package controllers

import (
	"crypto/rand"
	"fmt"
	"sort"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// slotClass is one pool of interchangeable slots: the slots of one Campaign
// whose pods are built alike (slotClassOf). A Trial claims only a slot of
// its class.
type slotClass struct {
	Namespace, Campaign, Hash string
}

func (c slotClass) String() string { return c.Namespace + "/" + c.Campaign + "/" + c.Hash }

// slotPolicy is what the registry keeps of a Trial's SlotPolicy and its
// Campaign when it makes a slot.
type slotPolicy struct {
	// Cap is how many slots the class may have (the Campaign's maxParallel,
	// or the driver pool's size).
	Cap       int
	MaxReuses int32
	Idle      time.Duration
	// CampaignUID owns the slot's objects.
	CampaignUID types.UID
	// Queued: the class's Trials run under Kueue's admission. Its slots are
	// bounded by its admitted, unfinished Trials too (admit): a slot runs
	// only an admitted Trial, and one left over goes (sweep).
	Queued bool
}

// slotHandoff is how long a free slot of a queued class may outnumber the
// class's admitted Trials: the quota a finished Trial gave back admits the
// next Trial of its Campaign meanwhile, which takes the slot warm. A slot
// still over the bound after that is deleted (sooner when idleSeconds is
// shorter).
const slotHandoff = 2 * time.Second

// slotEntry is one slot this process made (or is making). Nothing about it
// is written to the API: the pod is never changed after create, and the
// claim lives here and in the Trial's status.
type slotEntry struct {
	name   string
	class  slotClass
	policy slotPolicy
	// token is the slot's credential, known once its Secret exists.
	token string
	// created: this process created (or found its own) Secret and pod;
	// seen: the pod was in the cache once, so its absence later is loss.
	created, seen bool
	// claim is the attempt using the slot (nil: free).
	claim *slotClaim
	// reuses counts the Trials the slot served.
	reuses int32
	// freeSince is when the slot was last freed (or made).
	freeSince time.Time
}

type slotClaim struct {
	trial     types.NamespacedName
	attemptID string
	// at is when the claim was made: the slot pod's readiness is timed
	// from it.
	at time.Time
	// driven: the attempt was handed to a driver on this slot, so its
	// release depends on how the driver's CleanupTrial went.
	driven bool
}

// slotView is a copy of a claimed slot for planning.
type slotView struct {
	Name      string
	AttemptID string
	Token     string
	Created   bool
	Seen      bool
	Driven    bool
	ClaimedAt time.Time
	Class     slotClass
}

// releaseKind is how the attempt that held a slot left it.
type releaseKind int

const (
	// releaseUnused: no driver ran on the slot (the attempt ended or never
	// started before it was submitted): free again, not a reuse.
	releaseUnused releaseKind = iota
	// releaseClean: CleanupTrial answered the slot is back to its baseline
	// and the attempt did not end InfraFailed.
	releaseClean
	// releaseDirty: anything else. The slot is never reused.
	releaseDirty
)

// slotRegistry is the manager's one record of its slots: which exist,
// which attempt holds which, which attempts wait. Mutex-guarded; every
// reconcile of a slotted Trial and the sweeper use it.
type slotRegistry struct {
	mu sync.Mutex
	// epoch is random per process: slot names of two processes never meet,
	// so a new leader never mistakes a predecessor's terminating pod for
	// its own, while a create retried in one process finds its own objects.
	epoch   string
	next    int
	slots   map[types.NamespacedName]*slotEntry
	waiting map[slotClass]map[types.NamespacedName]bool
	// admitted are, per class, the queued Trials Kueue admitted that hold
	// or claim a slot of it and have not finished: a queued class has no
	// more slots than that.
	admitted map[slotClass]map[types.NamespacedName]bool
	// policyMu guards policies.
	policyMu sync.Mutex
	// policies are the Campaigns (by UID: a Campaign re-created under the
	// same name needs its own) whose slot NetworkPolicy this process wrote.
	policies map[types.UID]bool
	events   chan event.GenericEvent
	now      func() time.Time
}

func newSlotRegistry() *slotRegistry {
	b := make([]byte, 3)
	_, _ = rand.Read(b) // crypto/rand never fails on Linux; a zero epoch is still a valid name
	return &slotRegistry{
		epoch:    fmt.Sprintf("%x", b)[:5],
		slots:    map[types.NamespacedName]*slotEntry{},
		waiting:  map[slotClass]map[types.NamespacedName]bool{},
		admitted: map[slotClass]map[types.NamespacedName]bool{},
		policies: map[types.UID]bool{},
		events:   make(chan event.GenericEvent, 1024),
		now:      time.Now,
	}
}

// Events wakes Trials that wait for a slot of a class that freed one.
func (r *slotRegistry) Events() <-chan event.GenericEvent { return r.events }

// SlotPodName is the deterministic name of the n-th slot this process makes
// for a class: a retried create finds its own Secret and pod.
func slotPodName(campaign, classHash, epoch string, n int) string {
	suffix := fmt.Sprintf("-slot-%s-%s%d", classHash[:min(6, len(classHash))], epoch, n)
	// 63: the name is also the pod's hostname.
	return shortName(campaign, 63-len(suffix)) + suffix
}

// claimResult is what claim did.
type claimResult struct {
	// View is the attempt's slot (nil: it waits).
	View *slotView
	// Made: the slot is new, its objects are to be created.
	Made bool
}

// claim gives the attempt a slot of its class: the one it already holds, a
// free slot whose pod is ready, or a new one while the class is below its
// cap. Otherwise the attempt is recorded as waiting and gets none. Under
// Kueue (pol.Queued) a trial not admitted into the class gets none and does
// not wait, and the cap is also the class's admitted Trials.
func (r *slotRegistry) claim(class slotClass, trial types.NamespacedName, attemptID string, pol slotPolicy, ready func(name string) bool) claimResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.claimOfLocked(trial); e != nil {
		if e.claim.attemptID == attemptID {
			return claimResult{View: e.viewLocked()}
		}
		// A claim of an earlier attempt not released yet: the plan releases
		// it first; this attempt waits for that.
		return claimResult{}
	}
	limit := max(pol.Cap, 1)
	if pol.Queued {
		if !r.admitted[class][trial] {
			// Never before its admission, and not as a waiter: its
			// admission brings it back.
			return claimResult{}
		}
		limit = min(limit, len(r.admitted[class]))
	}
	var free []*slotEntry
	count := 0
	for _, e := range r.slots {
		if e.class != class {
			continue
		}
		count++
		if e.claim == nil && e.created && ready(e.name) {
			free = append(free, e)
		}
	}
	if len(free) > 0 {
		// The longest free first: the others may idle out.
		sort.Slice(free, func(i, j int) bool { return free[i].freeSince.Before(free[j].freeSince) })
		e := free[0]
		e.claim = &slotClaim{trial: trial, attemptID: attemptID, at: r.now()}
		r.unwaitLocked(class, trial)
		return claimResult{View: e.viewLocked()}
	}
	if count < limit {
		name := slotPodName(class.Campaign, class.Hash, r.epoch, r.next)
		r.next++
		e := &slotEntry{name: name, class: class, policy: pol, freeSince: r.now(),
			claim: &slotClaim{trial: trial, attemptID: attemptID, at: r.now()}}
		r.slots[types.NamespacedName{Namespace: class.Namespace, Name: name}] = e
		r.unwaitLocked(class, trial)
		return claimResult{View: e.viewLocked(), Made: true}
	}
	if r.waiting[class] == nil {
		r.waiting[class] = map[types.NamespacedName]bool{}
	}
	r.waiting[class][trial] = true
	return claimResult{}
}

func (e *slotEntry) viewLocked() *slotView {
	v := &slotView{Name: e.name, Token: e.token, Created: e.created, Seen: e.seen, Class: e.class}
	if e.claim != nil {
		v.AttemptID, v.Driven, v.ClaimedAt = e.claim.attemptID, e.claim.driven, e.claim.at
	}
	return v
}

func (r *slotRegistry) claimOfLocked(trial types.NamespacedName) *slotEntry {
	for _, e := range r.slots {
		if e.claim != nil && e.claim.trial == trial {
			return e
		}
	}
	return nil
}

func (r *slotRegistry) unwaitLocked(class slotClass, trial types.NamespacedName) {
	if w := r.waiting[class]; w != nil {
		delete(w, trial)
		if len(w) == 0 {
			delete(r.waiting, class)
		}
	}
}

// claimOf is the trial's claimed slot, if any.
func (r *slotRegistry) claimOf(trial types.NamespacedName) *slotView {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.claimOfLocked(trial); e != nil {
		return e.viewLocked()
	}
	return nil
}

// forgetWaiter drops the trial from every class's waiters (it ended, or no
// longer runs on slots).
func (r *slotRegistry) forgetWaiter(trial types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for c := range r.waiting {
		r.unwaitLocked(c, trial)
	}
}

// admit records that Kueue admitted trial, which holds or claims a slot of
// class: a queued class may have as many slots as it has such Trials.
func (r *slotRegistry) admit(class slotClass, trial types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for c := range r.admitted {
		if c != class {
			r.unadmitLocked(c, trial)
		}
	}
	if r.admitted[class] == nil {
		r.admitted[class] = map[types.NamespacedName]bool{}
	}
	r.admitted[class][trial] = true
}

// unadmit drops trial from every class's admitted Trials: it finished, Kueue
// took its admission back, or it claims no slot now.
func (r *slotRegistry) unadmit(trial types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for c := range r.admitted {
		r.unadmitLocked(c, trial)
	}
}

func (r *slotRegistry) unadmitLocked(class slotClass, trial types.NamespacedName) {
	if a := r.admitted[class]; a != nil {
		delete(a, trial)
		if len(a) == 0 {
			delete(r.admitted, class)
		}
	}
}

// markCreated records the slot's Secret and pod as made, with its token.
func (r *slotRegistry) markCreated(slot types.NamespacedName, token string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.slots[slot]; e != nil {
		e.created, e.token = true, token
	}
}

// markSeen records that the slot's pod was in the cache.
func (r *slotRegistry) markSeen(slot types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.slots[slot]; e != nil {
		e.seen = true
	}
}

// markDriven records that the attempt holding the slot was handed to a driver.
func (r *slotRegistry) markDriven(slot types.NamespacedName, attemptID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.slots[slot]; e != nil && e.claim != nil && e.claim.attemptID == attemptID {
		e.claim.driven = true
	}
}

// released says what release did with a slot.
type released struct {
	// Delete: the slot is out of the registry; its pod and Secret go.
	Delete bool
	// Replaced: deleted because it may not be reused (dirty), as opposed to
	// retired after maxReuses.
	Replaced bool
	// Made: its objects were created (a slot dropped before that has
	// nothing to delete).
	Made     bool
	Class    slotClass
	Campaign types.UID
}

// release ends attemptID's claim on slot. A clean or unused slot is free
// again unless it served maxReuses Trials; a dirty one is dropped. Either
// way the class's waiters are woken: a free slot or room for a new one.
func (r *slotRegistry) release(slot types.NamespacedName, attemptID string, kind releaseKind) released {
	r.mu.Lock()
	e := r.slots[slot]
	if e == nil || e.claim == nil || e.claim.attemptID != attemptID {
		r.mu.Unlock()
		return released{}
	}
	out := released{Class: e.class, Campaign: e.policy.CampaignUID, Made: e.created}
	e.claim = nil
	switch kind {
	case releaseDirty:
		out.Delete, out.Replaced = true, true
	case releaseClean:
		e.reuses++
		out.Delete = e.reuses >= e.policy.MaxReuses
	case releaseUnused:
		// A slot never created is dropped, not kept as a phantom that
		// counts against the cap.
		out.Delete = !e.created
	}
	if out.Delete {
		delete(r.slots, slot)
	} else {
		e.freeSince = r.now()
	}
	waiters := r.waitersLocked(e.class)
	r.mu.Unlock()
	r.wake(waiters)
	return out
}

// releaseTrial drops whatever slot the trial holds as dirty (the Trial is
// gone: nobody can say how its slot was left).
func (r *slotRegistry) releaseTrial(trial types.NamespacedName) (string, released) {
	v := r.claimOf(trial)
	r.forgetWaiter(trial)
	r.unadmit(trial)
	if v == nil {
		return "", released{}
	}
	return v.Name, r.release(types.NamespacedName{Namespace: v.Class.Namespace, Name: v.Name}, v.AttemptID, releaseDirty)
}

func (r *slotRegistry) waitersLocked(c slotClass) []types.NamespacedName {
	out := make([]types.NamespacedName, 0, len(r.waiting[c]))
	for k := range r.waiting[c] {
		out = append(out, k)
	}
	return out
}

// waitersOf and claimantOf map a slot pod's event to the Trials it concerns.
func (r *slotRegistry) waitersOf(c slotClass) []types.NamespacedName {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.waitersLocked(c)
}

func (r *slotRegistry) claimantOf(slot types.NamespacedName) (types.NamespacedName, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.slots[slot]; e != nil && e.claim != nil {
		return e.claim.trial, true
	}
	return types.NamespacedName{}, false
}

// wake enqueues trials without ever blocking a reconcile: a full channel
// drops the wake-up, and a waiting Trial requeues itself anyway.
func (r *slotRegistry) wake(trials []types.NamespacedName) {
	for _, k := range trials {
		obj := &evalv1.Trial{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}}
		select {
		case r.events <- event.GenericEvent{Object: client.Object(obj)}:
		default:
		}
	}
}

// classOf is a known slot's class.
func (r *slotRegistry) classOf(slot types.NamespacedName) (slotClass, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.slots[slot]; e != nil {
		return e.class, true
	}
	return slotClass{}, false
}

// count is the number of slots of a class.
func (r *slotRegistry) count(c slotClass) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.slots {
		if e.class == c {
			n++
		}
	}
	return n
}

// known reports whether the slot is this process's.
func (r *slotRegistry) known(slot types.NamespacedName) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.slots[slot] != nil
}

// sweep drops the free slots to delete now: those idle longer than their
// policy's idleSeconds while no attempt of their class waits, those whose
// pod is gone (gone reports it from the cache), and those by which a queued
// class outnumbers its admitted Trials once they have been free for the
// handoff (longest free first). Slots being made are kept: their claimant
// is waiting for them.
func (r *slotRegistry) sweep(gone func(slot types.NamespacedName, seen bool) bool) []types.NamespacedName {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	var out []types.NamespacedName
	for k, e := range r.slots {
		if e.claim != nil || !e.created {
			continue
		}
		idle := len(r.waiting[e.class]) == 0 && now.Sub(e.freeSince) >= e.policy.Idle
		if idle || gone(k, e.seen) {
			delete(r.slots, k)
			out = append(out, k)
		}
	}
	out = append(out, r.sweepExcessLocked(now)...)
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// sweepExcessLocked drops the free slots by which each queued class
// outnumbers its admitted, unfinished Trials, so Kueue's quota still means
// pods; a slot freed less than the handoff ago is left for the Trial its
// quota admits next.
func (r *slotRegistry) sweepExcessLocked(now time.Time) []types.NamespacedName {
	count := map[slotClass]int{}
	var free []types.NamespacedName
	for k, e := range r.slots {
		if !e.policy.Queued {
			continue
		}
		count[e.class]++
		if e.claim == nil && e.created {
			free = append(free, k)
		}
	}
	sort.Slice(free, func(i, j int) bool {
		a, b := r.slots[free[i]], r.slots[free[j]]
		if !a.freeSince.Equal(b.freeSince) {
			return a.freeSince.Before(b.freeSince)
		}
		return free[i].String() < free[j].String()
	})
	var out []types.NamespacedName
	for _, k := range free {
		e := r.slots[k]
		if count[e.class] <= len(r.admitted[e.class]) || now.Sub(e.freeSince) < min(slotHandoff, e.policy.Idle) {
			continue
		}
		count[e.class]--
		delete(r.slots, k)
		out = append(out, k)
	}
	return out
}

// ensurePolicy runs create once per Campaign and process, until it
// succeeds. Concurrent first slots of a Campaign wait for the one create
// (under policyMu, not mu: claims go on meanwhile) rather than each
// sending their own, and none of their pods is created before its fence.
func (r *slotRegistry) ensurePolicy(campaign types.UID, create func() error) error {
	r.policyMu.Lock()
	defer r.policyMu.Unlock()
	if r.policies[campaign] {
		return nil
	}
	if err := create(); err != nil {
		return err
	}
	r.policies[campaign] = true
	return nil
}
