package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"tolokaforge.io/operator/api/authn"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// The Trial reconciler's side of warm slots: what observe claims, what
// execute creates, releases and deletes, and the sweeper that deletes idle
// slots and slot pods this process does not know.

// actionReplaceSlot is the SlotReplaced event's action.
const actionReplaceSlot = "ReplaceSlot"

// slotSweepInterval is how often idle and orphaned slots are looked for.
const slotSweepInterval = time.Second

// campaignOf is the Campaign controlling t (nil: none, or it is gone or
// being deleted: the Trial then keeps per-attempt pods).
func (r *TrialReconciler) campaignOf(ctx context.Context, t *evalv1.Trial) (*campaignRef, error) {
	ref := metav1.GetControllerOf(t)
	if ref == nil || ref.Kind != "Campaign" || ref.APIVersion != evalv1.GroupVersion.String() {
		return nil, nil
	}
	c := &evalv1.Campaign{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: t.Namespace, Name: ref.Name}, c); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("get campaign %s/%s of trial %s: %w", t.Namespace, ref.Name, t.Name, err)
	}
	if c.UID != ref.UID || c.DeletionTimestamp != nil {
		return nil, nil
	}
	return &campaignRef{Name: c.Name, UID: c.UID, MaxParallel: c.Spec.MaxParallel}, nil
}

// observeSlots fills w.Slots for a Trial whose spec.slots is Enabled: the
// slot it holds, and, for an attempt that needs one, a claim made now.
// Claiming here, before the plan, lets the status write of this reconcile
// record the slot (and submit the attempt when the slot is Ready).
func (r *TrialReconciler) observeSlots(ctx context.Context, w *world) error {
	t := w.Trial
	if !t.Spec.Slots.Enabled() || r.Slots == nil || r.NoSlots {
		return nil
	}
	key := client.ObjectKeyFromObject(t)
	w.Slots = &slotWorld{Claim: r.Slots.claimOf(key)}
	if isTerminal(&t.Status) {
		r.Slots.forgetWaiter(key)
		r.Slots.unadmit(key)
		return r.slotPodOf(ctx, w)
	}
	a := activeAttempt(&t.Status)
	var attemptID string
	var desc *resolvedTask
	switch {
	case !slotAdmitted(w):
		// Kueue has not admitted it onto a slot pod (not yet, no longer, or
		// its Workload reserves pods of its own): it claims no slot and
		// counts for none; an attempt that ran on one ends as evicted.
	case a != nil && onSlot(t, a) && w.AttemptTask != nil:
		attemptID, desc = a.ID, w.AttemptTask
	case a == nil && r.mayStartOnSlot(w):
		attemptID, desc = AttemptID(t, int32(len(t.Status.Attempts))+1), w.Task
	}
	if attemptID == "" {
		if w.Queue != nil {
			r.Slots.forgetWaiter(key)
			r.Slots.unadmit(key)
		}
		return r.slotPodOf(ctx, w)
	}
	c, err := r.campaignOf(ctx, t)
	if err != nil || c == nil {
		return err
	}
	if a == nil {
		w.Slots.Next = true
	}
	class, tmpl := slotClassOf(r.Pods, t, desc.Desc, c.Name)
	if w.Queue != nil {
		// The slot pod goes where Kueue counted its quota: the flavor's
		// nodes, so Trials admitted into different flavors never share one.
		if pl, ok := w.Queue.Placement[SlotPodSet]; ok {
			place(tmpl, pl)
			class.Hash = slotClassHash(tmpl)
		}
		r.Slots.admit(class, key)
	}
	if w.Slots.Claim == nil || w.Slots.Claim.AttemptID == attemptID {
		pol := slotPolicy{Cap: int(c.MaxParallel), CampaignUID: c.UID, MaxReuses: 50, Idle: 30 * time.Second, Queued: w.Queue != nil}
		if pol.Cap <= 0 {
			pol.Cap = r.Pool.Size()
		}
		if sp := t.Spec.Slots; sp.MaxReuses > 0 {
			pol.MaxReuses = sp.MaxReuses
		}
		if sp := t.Spec.Slots; sp.IdleSeconds != nil {
			pol.Idle = time.Duration(*sp.IdleSeconds) * time.Second
		}
		res := r.Slots.claim(class, key, attemptID, pol, func(name string) bool {
			pod := &corev1.Pod{}
			err := r.Client.Get(ctx, types.NamespacedName{Namespace: t.Namespace, Name: name}, pod)
			return err == nil && podIsReady(pod)
		})
		w.Slots.Claim = res.View
	}
	if s := w.Slots.Claim; s != nil && s.AttemptID == attemptID && !s.Created {
		w.Slots.Make = &slotMake{Template: tmpl, Campaign: *c, Class: class}
	}
	return r.slotPodOf(ctx, w)
}

// slotAdmitted: the Trial's queue, if it waits in one, lets it have a slot
// now: Kueue admitted its Workload (not evicted), and that Workload reserves
// a slot pod (controllers/kueue makes it so for a Trial that runs on slots;
// one made before keeps per-attempt pods, which its pod sets describe).
func slotAdmitted(w *world) bool {
	q := w.Queue
	return q == nil || (q.Admitted && q.EvictedReason == "" && q.SlotPodSet)
}

// mayStartOnSlot: an attempt of the Trial may start now, on a slot. A
// Trial whose Kueue queue has not admitted it onto a slot (slotAdmitted)
// does not claim one; one whose task has an environment of its own takes
// its runner and DB service from a slot and keeps a fresh environment pod
// per attempt (slotEnvironmentPod); one held, in backoff or refused does not
// claim a slot it would not use.
func (r *TrialReconciler) mayStartOnSlot(w *world) bool {
	t := w.Trial
	if !slotAdmitted(w) || t.Held() || w.Task == nil || w.TaskErr != nil || w.KeyErr != nil ||
		w.Missing != nil || w.ImageErr != nil {
		return false
	}
	if n := len(t.Status.Attempts); n > 0 {
		last := &t.Status.Attempts[n-1]
		if countedAttempts(&t.Status) >= maxAttempts(t) {
			return false
		}
		// As startNext: an attempt a suspension ended (Kueue's eviction)
		// waits no backoff.
		if last.EndTime != nil && !evictedBy(last) && w.Now.Before(last.EndTime.Add(backoffAfter(t, infraFailures(&t.Status)))) {
			return false
		}
	}
	return true
}

// slotPodOf reads the claimed slot's pod from the cache.
func (r *TrialReconciler) slotPodOf(ctx context.Context, w *world) error {
	s := w.Slots.Claim
	if s == nil {
		return nil
	}
	key := types.NamespacedName{Namespace: w.Trial.Namespace, Name: s.Name}
	pod := &corev1.Pod{}
	if err := r.Client.Get(ctx, key, pod); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("get slot pod %s: %w", key, err)
	}
	r.Slots.markSeen(key)
	s.Seen = true
	w.Slots.Pod = pod
	return nil
}

// executeSlots carries out the slot side of a written plan: the release
// first (it may free what a create would otherwise add), then the new
// slot's objects.
func (r *TrialReconciler) executeSlots(ctx context.Context, t *evalv1.Trial, p *plan) error {
	if r.Slots != nil && isTerminal(&t.Status) {
		// Finished: its admission no longer counts for a slot, from the
		// write on (Kueue may admit the next Trial before this one is
		// reconciled again).
		key := client.ObjectKeyFromObject(t)
		r.Slots.forgetWaiter(key)
		r.Slots.unadmit(key)
	}
	var errs []error
	if rel := p.SlotRelease; rel != nil {
		errs = append(errs, r.releaseSlot(ctx, t, rel))
	}
	if m := p.SlotCreate; m != nil {
		if a := activeAttempt(&t.Status); a != nil && a.Slot != "" {
			if err := r.createSlot(ctx, t.Namespace, a.Slot, m); err != nil {
				// Status was written before: the refusal (quota, admission)
				// is told in an event, and the create is retried until the
				// slot's podsReady time runs out.
				emit(r.Recorder, t, []eventRecord{warningEvent(evalv1.ReasonPodsPending, actionStartAttempt, err.Error())})
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// releaseSlot ends the trial's claim: a dirty slot's pod and Secret are
// deleted, with one Warning on the Campaign; one retired after maxReuses
// goes without a warning; a clean one is free for the next Trial.
func (r *TrialReconciler) releaseSlot(ctx context.Context, t *evalv1.Trial, rel *slotRelease) error {
	key := types.NamespacedName{Namespace: t.Namespace, Name: rel.Slot}
	out := r.Slots.release(key, rel.AttemptID, rel.Kind)
	if !out.Delete || !out.Made {
		return nil
	}
	if out.Replaced {
		n := int32(0)
		for _, a := range t.Status.Attempts {
			if a.ID == rel.AttemptID {
				n = a.Number
			}
		}
		c := &evalv1.Campaign{ObjectMeta: metav1.ObjectMeta{Namespace: t.Namespace, Name: out.Class.Campaign, UID: out.Campaign}}
		emit(r.Recorder, c, []eventRecord{warningEvent(evalv1.ReasonSlotReplaced, actionReplaceSlot,
			slotWhy(rel.Slot, n, t.Name, rel.Why))})
	}
	return r.deleteSlot(ctx, key)
}

// createSlot makes a new slot: its Campaign's NetworkPolicy (once), the
// Secret, then the pod that mounts it. Names are the registry's, so a
// create retried after a lost response finds its own objects; a Secret
// found so is read back for its token.
func (r *TrialReconciler) createSlot(ctx context.Context, ns, name string, m *slotMake) error {
	err := r.Slots.ensurePolicy(m.Campaign.UID, func() error {
		np := SlotNetworkPolicy(ns, m.Campaign, r.ManagerPeer)
		err := r.Client.Create(ctx, np, client.FieldOwner(evalv1.FieldManager))
		if apierrors.IsAlreadyExists(err) {
			return r.refreshSlotPolicy(ctx, np)
		}
		if err != nil {
			return fmt.Errorf("create slot network policy %s/%s: %w", ns, np.Name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	token, err := authn.NewToken()
	if err != nil {
		return fmt.Errorf("slot %s/%s: %w", ns, name, err)
	}
	sec := slotSecret(ns, name, m.Class.Hash, token, m.Campaign)
	addMetricsToken(sec, r.Pods.RunnerMetrics)
	if err := r.Client.Create(ctx, sec, client.FieldOwner(evalv1.FieldManager)); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create slot secret %s/%s: %w", ns, sec.Name, err)
		}
		if token, err = r.slotToken(ctx, ns, name, m.Campaign.UID); err != nil {
			return err
		}
	}
	pod := slotPod(m.Template, ns, name, m.Class.Hash, m.Campaign)
	if err := r.Client.Create(ctx, pod, client.FieldOwner(evalv1.FieldManager)); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create slot pod %s/%s: %w", ns, name, err)
	}
	r.Slots.markCreated(types.NamespacedName{Namespace: ns, Name: name}, token)
	return nil
}

// slotToken reads a slot's token back (uncached), refusing a Secret its
// Campaign does not control: its token could be known to someone else.
func (r *TrialReconciler) slotToken(ctx context.Context, ns, pod string, campaign types.UID) (string, error) {
	s := &corev1.Secret{}
	key := types.NamespacedName{Namespace: ns, Name: SlotSecretName(pod)}
	if err := r.APIReader.Get(ctx, key, s); err != nil {
		return "", fmt.Errorf("read slot secret %s: %w", key, err)
	}
	if ref := metav1.GetControllerOf(s); ref == nil || ref.UID != campaign {
		return "", fmt.Errorf("secret %s is not controlled by the slot's campaign", key)
	}
	tok := string(s.Data[authn.SecretKey])
	if tok == "" {
		return "", fmt.Errorf("secret %s has no %q key", key, authn.SecretKey)
	}
	return tok, nil
}

// deleteSlot deletes a slot's pod and its Secret.
func (r *TrialReconciler) deleteSlot(ctx context.Context, key types.NamespacedName) error {
	var errs []error
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	if err := r.Client.Delete(ctx, pod); client.IgnoreNotFound(err) != nil {
		errs = append(errs, fmt.Errorf("delete slot pod %s: %w", key, err))
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: SlotSecretName(key.Name)}}
	if err := r.Client.Delete(ctx, sec); client.IgnoreNotFound(err) != nil && !apierrors.IsForbidden(err) {
		errs = append(errs, fmt.Errorf("delete slot secret %s/%s: %w", key.Namespace, sec.Name, err))
	}
	return errors.Join(errs...)
}

// releaseSlotOfGone drops a deleted Trial's slot: nobody can say how it was
// left, so it is replaced.
func (r *TrialReconciler) releaseSlotOfGone(ctx context.Context, key types.NamespacedName) error {
	if r.Slots == nil {
		return nil
	}
	name, out := r.Slots.releaseTrial(key)
	if !out.Delete {
		return nil
	}
	c := &evalv1.Campaign{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: out.Class.Campaign, UID: out.Campaign}}
	emit(r.Recorder, c, []eventRecord{warningEvent(evalv1.ReasonSlotReplaced, actionReplaceSlot,
		fmt.Sprintf("slot %s is replaced: trial %s was deleted while it held it", name, key.Name))})
	return r.deleteSlot(ctx, types.NamespacedName{Namespace: key.Namespace, Name: name})
}

// trialsOfSlot maps a slot pod's change to the Trials it concerns: the one
// holding it (its readiness or loss) and those waiting for its class.
func (r *TrialReconciler) trialsOfSlot(_ context.Context, o client.Object) []reconcile.Request {
	if _, ok := o.GetLabels()[evalv1.LabelSlotClass]; !ok || r.Slots == nil {
		return nil
	}
	key := types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}
	var reqs []reconcile.Request
	if t, ok := r.Slots.claimantOf(key); ok {
		reqs = append(reqs, reconcile.Request{NamespacedName: t})
	}
	if c, ok := r.Slots.classOf(key); ok {
		for _, t := range r.Slots.waitersOf(c) {
			reqs = append(reqs, reconcile.Request{NamespacedName: t})
		}
	}
	return reqs
}

// slotSweeper deletes idle slots and slot pods this process does not know
// (at startup: every one, since no process can vouch for a slot it did not
// make; later: those whose delete failed). Runs on the leader only.
type slotSweeper struct {
	r     *TrialReconciler
	every time.Duration
}

func (s *slotSweeper) NeedLeaderElection() bool { return true }

func (s *slotSweeper) Start(ctx context.Context) error {
	t := time.NewTicker(s.every)
	defer t.Stop()
	for {
		if err := s.r.sweepSlots(ctx); err != nil && ctx.Err() == nil {
			s.r.Log.Error(err, "sweep slots")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// sweepSlots is one pass of the sweeper.
func (r *TrialReconciler) sweepSlots(ctx context.Context) error {
	var errs []error
	idle := r.Slots.sweep(func(k types.NamespacedName, seen bool) bool {
		pod := &corev1.Pod{}
		err := r.Client.Get(ctx, k, pod)
		if apierrors.IsNotFound(err) {
			return seen
		}
		h, _, _ := observePod(pod)
		return err == nil && h == podGone
	})
	for _, k := range idle {
		errs = append(errs, r.deleteSlot(ctx, k))
	}
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.HasLabels{evalv1.LabelSlotClass}); err != nil {
		return errors.Join(append(errs, fmt.Errorf("list slot pods: %w", err))...)
	}
	for i := range pods.Items {
		pod := &pods.Items[i]
		key := client.ObjectKeyFromObject(pod)
		if pod.DeletionTimestamp != nil || r.Slots.known(key) {
			continue
		}
		errs = append(errs, r.deleteSlot(ctx, key))
	}
	return errors.Join(errs...)
}
