package campaign

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// ownerIndex indexes Trials by the UID of their controlling Campaign.
const ownerIndex = "eval.tolokaforge.io/campaign-owner-uid"

// Defaults of the reconciler's options.
const (
	defaultCreateWorkers  = 8
	defaultStatusInterval = time.Second
	// defaultTrialEventDelay is how long a Trial's change waits before its
	// Campaign reconciles, so the changes of many Trials are planned once.
	defaultTrialEventDelay = 200 * time.Millisecond
)

// Event actions.
const (
	actionRerun    = "Rerun"
	actionCreate   = "CreateTrial"
	actionComplete = "Complete"
	actionBudget   = "Budget"
)

// reconciler reconciles Campaigns. Build it with NewReconciler and
// register it with SetupWithManager.
type reconciler struct {
	client    client.Client
	apiReader client.Reader
	recorder  events.EventRecorder
	log       logr.Logger

	maxConcurrentReconciles int
	createWorkers           int
	statusInterval          time.Duration
	trialEventDelay         time.Duration
	expectationTTL          time.Duration
	now                     func() time.Time

	expect *expectations

	mu        sync.Mutex
	lastWrite map[types.UID]time.Time
	// memos keep each Campaign's expansion between reconciles.
	memos map[types.NamespacedName]*expansionMemo
}

// Option configures the reconciler.
type Option func(*reconciler)

// WithLogger sets the logger (default: the manager's, named "campaign").
func WithLogger(l logr.Logger) Option { return func(r *reconciler) { r.log = l } }

// WithStatusInterval sets the least time between two status writes of one
// Campaign that change only figures (counts, aggregates, spend); a change of
// a condition, of the plan or of rerun bookkeeping is written at once. Zero
// writes every change at once.
func WithStatusInterval(d time.Duration) Option {
	return func(r *reconciler) { r.statusInterval = d }
}

// NewReconciler builds the Campaign reconciler on mgr's client, uncached
// reader, logger and event recorder, then applies opts; register it with
// SetupWithManager.
func NewReconciler(mgr ctrl.Manager, opts ...Option) (*reconciler, error) {
	r := &reconciler{
		client:                  mgr.GetClient(),
		apiReader:               mgr.GetAPIReader(),
		log:                     mgr.GetLogger().WithName("campaign"),
		maxConcurrentReconciles: 2,
		createWorkers:           defaultCreateWorkers,
		statusInterval:          defaultStatusInterval,
		trialEventDelay:         defaultTrialEventDelay,
		now:                     time.Now,
		lastWrite:               map[types.UID]time.Time{},
		memos:                   map[types.NamespacedName]*expansionMemo{},
	}
	r.recorder = mgr.GetEventRecorder(evalv1.FieldManager)
	for _, o := range opts {
		o(r)
	}
	if r.createWorkers < 1 {
		return nil, fmt.Errorf("campaign controller: create workers must be >= 1, got %d", r.createWorkers)
	}
	if r.maxConcurrentReconciles < 1 {
		return nil, fmt.Errorf("campaign controller: max concurrent reconciles must be >= 1, got %d", r.maxConcurrentReconciles)
	}
	r.expect = newExpectations(r.expectationTTL, r.now)
	return r, nil
}

// SetupWithManager registers the Campaign controller with mgr: the owner
// index on Trials and watches on Campaigns, their Trials and Tasks.
func (r *reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &evalv1.Trial{}, ownerIndex, ownerUIDs); err != nil {
		return fmt.Errorf("campaign controller: index trials by owner: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("campaign").
		For(&evalv1.Campaign{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&evalv1.Trial{}, r.trialEvents(), builder.WithPredicates(trialChanged())).
		Watches(&evalv1.Task{}, handler.EnqueueRequestsFromMapFunc(r.campaignsForTask),
			builder.WithPredicates(taskMembershipChanged())).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.maxConcurrentReconciles}).
		Complete(r)
}

// trialEvents enqueues a Trial's controlling Campaign trialEventDelay after
// the change (a quarter of it when the Trial finished or went away); the
// queue keeps one entry per Campaign, so every change within that delay is
// planned by one reconcile.
func (r *reconciler) trialEvents() handler.EventHandler {
	enqueue := func(o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request], finished bool) {
		t, ok := o.(*evalv1.Trial)
		if !ok {
			return
		}
		name, _ := evalv1.CampaignOf(t)
		if name == "" {
			return
		}
		req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}
		d := r.trialEventDelay
		if finished {
			// A finished Trial frees a maxParallel slot: the next one should
			// not wait the whole delay (the queue keeps the earliest time, so
			// the changes already waiting come along).
			d /= 4
		}
		if d <= 0 {
			q.Add(req)
			return
		}
		q.AddAfter(req, d)
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(e.Object, q, false)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(e.ObjectNew, q, finished(e.ObjectOld, e.ObjectNew))
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(e.Object, q, true)
		},
		GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(e.Object, q, false)
		},
	}
}

// finished reports whether an update ended the Trial.
func finished(old, new client.Object) bool {
	o, ok1 := old.(*evalv1.Trial)
	n, ok2 := new.(*evalv1.Trial)
	return ok1 && ok2 && !IsTerminalPhase(PhaseOf(o)) && IsTerminalPhase(PhaseOf(n))
}

// ownerUIDs is the OwnerIndex function: the UID of the Campaign a Trial
// belongs to (evalv1.CampaignOf).
func ownerUIDs(o client.Object) []string {
	t, ok := o.(*evalv1.Trial)
	if !ok {
		return nil
	}
	if _, uid := evalv1.CampaignOf(t); uid != "" {
		return []string{string(uid)}
	}
	return nil
}

// trialChanged passes the Trial events the campaign's plan or status reads:
// creation, deletion, a phase, grade or usage change, deletion starting.
func trialChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*evalv1.Trial)
			n, ok2 := e.ObjectNew.(*evalv1.Trial)
			if !ok1 || !ok2 {
				return true
			}
			return PhaseOf(o) != PhaseOf(n) ||
				(o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) ||
				!sameOutcome(OutcomeOf(o), OutcomeOf(n))
		},
	}
}

func sameOutcome(a, b Outcome) bool {
	if a.Agent != b.Agent || a.Task != b.Task || a.Phase != b.Phase || a.Tokens != b.Tokens || a.CostUSD != b.CostUSD {
		return false
	}
	if (a.Score == nil) != (b.Score == nil) {
		return false
	}
	return a.Score == nil || *a.Score == *b.Score
}

// taskMembershipChanged passes Task creations, deletions and label changes:
// what can change a selector's or a name list's answer.
func taskMembershipChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return !mapsEqual(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels())
		},
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// campaignsForTask enqueues the Campaigns of the Task's namespace that select it.
func (r *reconciler) campaignsForTask(ctx context.Context, o client.Object) []reconcile.Request {
	var list evalv1.CampaignList
	if err := r.client.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		r.log.Error(err, "list campaigns for a task event", "task", o.GetName())
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		c := &list.Items[i]
		if selects(c, o) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(c)})
		}
	}
	return out
}

func selects(c *evalv1.Campaign, task client.Object) bool {
	if c.Spec.Tasks.Selector == nil {
		for _, n := range c.Spec.Tasks.Names {
			if n == task.GetName() {
				return true
			}
		}
		return false
	}
	// A label change may add the Task to a selection or remove it from one,
	// and the map function only sees the new labels, so every
	// selector-based campaign of the namespace is woken. Cheap: the plan is
	// pure and reads the cache.
	return true
}

// Reconcile plans and acts for one Campaign.
func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := r.log.WithValues("campaign", req.NamespacedName)
	var c evalv1.Campaign
	if err := r.client.Get(ctx, req.NamespacedName, &c); err != nil {
		if apierrors.IsNotFound(err) {
			r.forgetMemo(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("get campaign %s: %w", req.NamespacedName, err)
	}
	if c.DeletionTimestamp != nil {
		// Its Trials go with it through garbage collection, and the ones
		// without an owner reference (MultiKueue's) through deleteTrials.
		r.expect.clear(c.UID)
		r.forgetWrite(c.UID)
		r.forgetMemo(req.NamespacedName)
		return r.deleteTrials(ctx, &c)
	}
	if !evalv1.OwnedByReference(c.Spec.TrialManagedBy) && !controllerutil.ContainsFinalizer(&c, evalv1.FinalizerCampaignTrials) {
		// Before its first Trial: nothing else would delete them.
		if err := r.patchFinalizers(ctx, &c, func(o *evalv1.Campaign) {
			controllerutil.AddFinalizer(o, evalv1.FinalizerCampaignTrials)
		}); err != nil {
			return ctrl.Result{}, err
		}
	}

	tasks, missing, err := r.resolveTasks(ctx, &c)
	if err != nil {
		return ctrl.Result{}, err
	}
	if done, res, err := r.expire(ctx, &c); done || err != nil {
		return res, err
	}
	w, err := r.world(ctx, &c, tasks, missing)
	if err != nil {
		return ctrl.Result{}, err
	}
	p := w.Plan()
	if len(p.Creates) > 0 {
		// Secrets are read uncached, so only when a Trial is about to be
		// created: a missing one would fail every Trial at once.
		if w.MissingRef, w.MissingRefReason, err = campaignSecrets(ctx, r.apiReader, c.Namespace, c.Spec.SecretUses()); err != nil {
			return ctrl.Result{}, fmt.Errorf("campaign %s: %w", req.NamespacedName, err)
		}
		w.RefsChecked = true
		p = w.Plan()
	}

	if p.RerunStarted {
		// Recorded before anything is deleted, under the campaign's
		// resourceVersion: a reconcile working from a stale campaign
		// conflicts here instead of retiring (and charging) Trials twice.
		updated, err := r.writeStatus(ctx, &c, &p.Status)
		if err != nil {
			if apierrors.IsConflict(err) {
				return ctrl.Result{RequeueAfter: 50 * time.Millisecond}, nil
			}
			return ctrl.Result{}, err
		}
		c = *updated
		r.event(&c, corev1.EventTypeNormal, "RerunStarted", actionRerun,
			fmt.Sprintf("rerun of phases %v at generation %d: %d Trials retired and re-created", c.Status.Rerun.Phases, c.Generation, c.Status.Rerun.Retired))
	}

	var errs []error
	for _, d := range p.Deletes {
		if err := r.deleteRetired(ctx, &c, d); err != nil {
			errs = append(errs, err)
		}
	}
	if err := r.create(ctx, &c, p.Creates); err != nil {
		errs = append(errs, err)
	}

	// The status of the world as it is after acting: creations that were
	// sent are in flight now.
	w.Campaign = &c
	w.InFlight = r.expect.pending(c.UID, func(string) bool { return false })
	final := w.Plan().Status
	if len(p.Creates) > 0 || len(p.Deletes) > 0 {
		log.V(1).Info("acted", "created", len(p.Creates), "deleted", len(p.Deletes), "progress", final.Progress)
	}
	r.announceHolds(&c, &final)
	res, err := r.maybeWriteStatus(ctx, &c, &final)
	if w.MissingRef != "" && (res.RequeueAfter == 0 || res.RequeueAfter > secretRecheck) {
		res.RequeueAfter = secretRecheck
	}
	if at := expireAt(&final, c.Spec.TTLSecondsAfterFinished); !at.IsZero() {
		if wait := at.Sub(r.now()); res.RequeueAfter == 0 || wait < res.RequeueAfter {
			res.RequeueAfter = max(wait, time.Millisecond)
		}
	}
	if err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: 50 * time.Millisecond}, errors.Join(errs...)
		}
		errs = append(errs, err)
	}
	return res, errors.Join(errs...)
}

// resolveTasks returns the selected Tasks' names (sorted) and the listed
// names that do not exist.
func (r *reconciler) resolveTasks(ctx context.Context, c *evalv1.Campaign) ([]string, []string, error) {
	if sel := c.Spec.Tasks.Selector; sel != nil {
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			return nil, nil, reconcile.TerminalError(fmt.Errorf("campaign %s/%s: spec.tasks.selector: %w", c.Namespace, c.Name, err))
		}
		var list evalv1.TaskList
		if err := r.client.List(ctx, &list, client.InNamespace(c.Namespace), client.MatchingLabelsSelector{Selector: s}); err != nil {
			return nil, nil, fmt.Errorf("list tasks of campaign %s/%s: %w", c.Namespace, c.Name, err)
		}
		names := make([]string, 0, len(list.Items))
		for _, t := range list.Items {
			if t.DeletionTimestamp == nil {
				names = append(names, t.Name)
			}
		}
		sort.Strings(names)
		return names, nil, nil
	}
	seen := map[string]bool{}
	var names, missing []string
	for _, n := range c.Spec.Tasks.Names {
		if seen[n] {
			continue
		}
		seen[n] = true
		var t evalv1.Task
		err := r.client.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: n}, &t)
		switch {
		case apierrors.IsNotFound(err):
			missing = append(missing, n)
		case err != nil:
			return nil, nil, fmt.Errorf("get task %q of campaign %s/%s: %w", n, c.Namespace, c.Name, err)
		case t.DeletionTimestamp != nil:
			missing = append(missing, n)
		default:
			names = append(names, n)
		}
	}
	sort.Strings(names)
	sort.Strings(missing)
	return names, missing, nil
}

// world reads the campaign's Trials from the cache and the creations it has
// not shown yet.
func (r *reconciler) world(ctx context.Context, c *evalv1.Campaign, tasks, missing []string) (*World, error) {
	var list evalv1.TrialList
	// Read-only: ViewOf copies what it keeps, so the cache's objects are
	// not deep-copied (a campaign of a thousand Trials would copy them all
	// on every reconcile).
	if err := r.client.List(ctx, &list, client.InNamespace(c.Namespace), client.MatchingFields{ownerIndex: string(c.UID)}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list trials of campaign %s/%s: %w", c.Namespace, c.Name, err)
	}
	views := make([]trialView, 0, len(list.Items))
	names := make(map[string]bool, len(list.Items))
	for i := range list.Items {
		views = append(views, viewOf(&list.Items[i]))
		names[list.Items[i].Name] = true
	}
	sort.Slice(views, func(i, j int) bool { return views[i].Name < views[j].Name })
	return &World{
		Campaign: c,
		Tasks:    tasks,
		Missing:  missing,
		Trials:   views,
		InFlight: r.expect.pending(c.UID, func(n string) bool { return names[n] }),
		Now:      metav1.NewTime(r.now()),
		memo:     r.memo(client.ObjectKeyFromObject(c)),
	}, nil
}

// memo returns the Campaign's expansion memo, made on first use.
func (r *reconciler) memo(key types.NamespacedName) *expansionMemo {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.memos[key]
	if m == nil {
		m = &expansionMemo{}
		r.memos[key] = m
	}
	return m
}

func (r *reconciler) forgetMemo(key types.NamespacedName) {
	r.mu.Lock()
	delete(r.memos, key)
	r.mu.Unlock()
}

// deleteRetired deletes one retired Trial, only if it is still the Trial
// that was retired (a re-created one of the same name has another UID).
func (r *reconciler) deleteRetired(ctx context.Context, c *evalv1.Campaign, d evalv1.RetiredTrial) error {
	t := &evalv1.Trial{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: d.Name}}
	uid := d.UID
	err := r.client.Delete(ctx, t, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return fmt.Errorf("delete retired trial %s/%s: %w", c.Namespace, d.Name, err)
}

// create sends the creations, a few at a time. Each is recorded as expected
// before it is sent, so a reconcile that runs while the create is in flight
// counts it.
func (r *reconciler) create(ctx context.Context, c *evalv1.Campaign, creates []creation) error {
	if len(creates) == 0 {
		return nil
	}
	agents := map[string]evalv1.ModelSpec{}
	for _, a := range c.Spec.Agents {
		agents[a.Name] = a.Model
	}
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	work := make(chan creation)
	for range min(r.createWorkers, len(creates)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for cr := range work {
				if err := r.createOne(ctx, c, cr, agents[cr.Cell.Agent]); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	for _, cr := range creates {
		work <- cr
	}
	close(work)
	wg.Wait()
	return errors.Join(errs...)
}

func (r *reconciler) createOne(ctx context.Context, c *evalv1.Campaign, cr creation, agent evalv1.ModelSpec) error {
	t := buildTrial(c, cr.Cell, cr.Name, agent)
	r.expect.expect(c.UID, cr.Name, cr.Cell)
	err := r.client.Create(ctx, t, client.FieldOwner(evalv1.FieldManager))
	if err == nil {
		return nil
	}
	if apierrors.IsAlreadyExists(err) {
		// Ours (a create whose response was lost, a cache behind): keep
		// expecting it. Someone else's: the name is taken for good.
		var existing evalv1.Trial
		if gerr := r.apiReader.Get(ctx, client.ObjectKeyFromObject(t), &existing); gerr == nil {
			if _, uid := evalv1.CampaignOf(&existing); uid == c.UID {
				return nil
			}
		}
		r.expect.forget(c.UID, cr.Name)
		r.event(c, corev1.EventTypeWarning, "NameConflict", actionCreate,
			fmt.Sprintf("Trial %s exists and is not this campaign's; cell %s/%s/%d cannot be created", cr.Name, cr.Cell.Agent, cr.Cell.Task, cr.Cell.Index))
		return fmt.Errorf("create trial %s/%s: the name is taken by a Trial this campaign does not control", c.Namespace, cr.Name)
	}
	r.expect.forget(c.UID, cr.Name)
	return fmt.Errorf("create trial %s/%s: %w", c.Namespace, cr.Name, err)
}

func (r *reconciler) event(c *evalv1.Campaign, typ, reason, action, msg string) {
	if r.recorder == nil {
		return
	}
	r.recorder.Eventf(c, nil, typ, reason, action, "%s", msg)
}

// announceHolds emits an event when Suspended, TasksResolved or
// ReferencesResolved changes, so `kubectl describe` tells when and why
// creation stopped (a missing Task or Secret named) and resumed.
func (r *reconciler) announceHolds(c *evalv1.Campaign, st *evalv1.CampaignStatus) {
	for _, typ := range []string{evalv1.CampaignSuspended, evalv1.CampaignTasksResolved, evalv1.CampaignReferencesResolved} {
		now := meta.FindStatusCondition(st.Conditions, typ)
		if now == nil {
			continue
		}
		before := meta.FindStatusCondition(c.Status.Conditions, typ)
		if before != nil && before.Status == now.Status && before.Reason == now.Reason {
			continue
		}
		if before == nil && (now.Reason == evalv1.ReasonResolved) {
			continue // resolved from the start: nothing to tell
		}
		typEv := corev1.EventTypeNormal
		if now.Reason == evalv1.ReasonSecretNotFound || now.Reason == evalv1.ReasonTaskNotFound || now.Reason == evalv1.ReasonNoTasksSelected {
			typEv = corev1.EventTypeWarning
		}
		r.event(c, typEv, now.Reason, actionCreate, now.Message)
	}
}

// expireAt is when ttlSecondsAfterFinished deletes a completed Campaign
// (zero: never).
func expireAt(st *evalv1.CampaignStatus, ttl *int32) time.Time {
	done := meta.FindStatusCondition(st.Conditions, evalv1.CampaignCompleted)
	if ttl == nil || *ttl < 0 || done == nil || done.Status != metav1.ConditionTrue {
		return time.Time{}
	}
	return done.LastTransitionTime.Add(time.Duration(*ttl) * time.Second)
}

// expire deletes the Campaign once its ttlSecondsAfterFinished is over, as
// the TTL controller deletes a finished Job; its Trials go with it.
func (r *reconciler) expire(ctx context.Context, c *evalv1.Campaign) (bool, ctrl.Result, error) {
	at := expireAt(&c.Status, c.Spec.TTLSecondsAfterFinished)
	if at.IsZero() || r.now().Before(at) {
		return false, ctrl.Result{}, nil
	}
	uid := c.UID
	err := r.client.Delete(ctx, c, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
		return true, ctrl.Result{}, fmt.Errorf("delete campaign %s/%s after ttlSecondsAfterFinished: %w", c.Namespace, c.Name, err)
	}
	r.log.V(1).Info("deleted after ttlSecondsAfterFinished", "campaign", client.ObjectKeyFromObject(c).String())
	return true, ctrl.Result{}, nil
}

// deleteTrials deletes the Trials of a Campaign being deleted that no
// garbage collector would (evalv1.FinalizerCampaignTrials), and lets the
// Campaign go once none is left. Their deletions bring it back here.
func (r *reconciler) deleteTrials(ctx context.Context, c *evalv1.Campaign) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(c, evalv1.FinalizerCampaignTrials) {
		return ctrl.Result{}, nil
	}
	var list evalv1.TrialList
	if err := r.client.List(ctx, &list, client.InNamespace(c.Namespace), client.MatchingFields{ownerIndex: string(c.UID)}); err != nil {
		return ctrl.Result{}, fmt.Errorf("list trials of deleted campaign %s/%s: %w", c.Namespace, c.Name, err)
	}
	for i := range list.Items {
		t := &list.Items[i]
		if t.DeletionTimestamp != nil {
			continue
		}
		uid := t.UID
		err := r.client.Delete(ctx, t, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			return ctrl.Result{}, fmt.Errorf("delete trial %s/%s of deleted campaign %s: %w", t.Namespace, t.Name, c.Name, err)
		}
	}
	if len(list.Items) > 0 {
		// A Trial's deletion enqueues the Campaign; the requeue covers a
		// Trial whose finalizers outlive the watch's patience.
		return ctrl.Result{RequeueAfter: 5 * time.Second}, nil
	}
	if err := r.patchFinalizers(ctx, c, func(o *evalv1.Campaign) {
		controllerutil.RemoveFinalizer(o, evalv1.FinalizerCampaignTrials)
	}); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	return ctrl.Result{}, nil
}

// patchFinalizers edits c's finalizers under its resourceVersion.
func (r *reconciler) patchFinalizers(ctx context.Context, c *evalv1.Campaign, edit func(*evalv1.Campaign)) error {
	updated := c.DeepCopy()
	edit(updated)
	patch := client.MergeFromWithOptions(c, client.MergeFromWithOptimisticLock{})
	if err := r.client.Patch(ctx, updated, patch, client.FieldOwner(evalv1.FieldManager)); err != nil {
		return fmt.Errorf("write finalizers of campaign %s/%s: %w", c.Namespace, c.Name, err)
	}
	*c = *updated
	return nil
}
