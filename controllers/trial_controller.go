package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"tolokaforge.io/operator/api/artifacts/blobstore"
	"tolokaforge.io/operator/api/task"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/gateway"
	"tolokaforge.io/operator/controllers/refs"
)

// Field indexes of the Trial controller.
const (
	// podOwnerIndex indexes pods by the name of the Trial controlling them.
	podOwnerIndex = ".metadata.controller.trial"
	// trialTaskIndex indexes Trials by spec.taskRef.name.
	trialTaskIndex = "spec.taskRef.name"
)

// TrialReconciler runs Trials: per attempt a runner and a DB service pod, a
// driver from the Pool once both are ready, the attempt's outcome in status.
type TrialReconciler struct {
	Client client.Client
	// APIReader reads uncached: a Trial after a status conflict, ConfigMaps.
	APIReader client.Reader
	Pool      *Pool
	Driver    *Driver
	// Packs is the store spec.files.url objects are read from, with the
	// manager's credentials (runner pods get the verified files over
	// gRPC, never the store); nil: a Trial of such a Task ends Invalid.
	Packs       *blobstore.Store
	Recorder    events.EventRecorder
	Pods        PodConfig
	ManagerPeer ManagerPeer
	Metrics     *Metrics
	Log         logr.Logger
	// MaxConcurrentReconciles defaults to 8: a reconcile only reads the
	// cache and makes a few writes, and many trials start at once.
	MaxConcurrentReconciles int
	// Now is the clock (tests fix it); default time.Now.
	Now func() time.Time
	// Queue is the queueing integration (Kueue, controllers/kueue); nil: a
	// queue label means nothing here and Trials run as they always did.
	Queue QueueView
	// ProgressInterval is the least time between two status writes of a
	// Trial that carry only its running attempt's progress (0:
	// DefaultProgressInterval; tests shorten it).
	ProgressInterval time.Duration

	// runners remembers the namespaces whose RunnersPolicy this process
	// wrote (NewTrialReconciler sets it; nil: every trial checks alone).
	runners *runnersMemo
	// Slots is the registry of the Campaigns' warm slots (NewTrialReconciler
	// sets it).
	Slots *slotRegistry
	// NoSlots runs every attempt on pods of its own whatever its spec.slots
	// says: for a cluster whose pods cannot be slots (tolokaforge dev's pod
	// simulator runs one container per pod, and a slot is two).
	NoSlots bool
}

// NewTrialReconciler builds the Trial reconciler from cfg, taking mgr's
// client, uncached reader and event recorder where cfg leaves them unset.
// Register it with SetupWithManager.
func NewTrialReconciler(mgr manager.Manager, cfg TrialReconciler) *TrialReconciler {
	r := cfg
	if r.runners == nil {
		r.runners = &runnersMemo{written: map[string]bool{}}
	}
	if r.Slots == nil {
		r.Slots = newSlotRegistry()
		if r.Now != nil {
			r.Slots.now = r.Now
		}
	}
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder(evalv1.FieldManager)
	}
	return &r
}

// SetupWithManager registers the controller, its indexes and the pool.
func (r *TrialReconciler) SetupWithManager(mgr manager.Manager) error {
	ctx := context.Background()
	if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.Pod{}, podOwnerIndex, func(o client.Object) []string {
		if ref := metav1.GetControllerOf(o); ref != nil && ref.Kind == "Trial" && ref.APIVersion == evalv1.GroupVersion.String() {
			return []string{ref.Name}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("index pods by trial: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &evalv1.Trial{}, trialTaskIndex, func(o client.Object) []string {
		if ref := o.(*evalv1.Trial).Spec.TaskRef; ref != nil {
			return []string{ref.Name}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("index trials by task: %w", err)
	}
	if err := mgr.Add(r.Pool); err != nil {
		return fmt.Errorf("add driver pool: %w", err)
	}
	if r.Slots == nil {
		r.Slots = newSlotRegistry()
	}
	if err := mgr.Add(&slotSweeper{r: r, every: slotSweepInterval}); err != nil {
		return fmt.Errorf("add slot sweeper: %w", err)
	}
	workers := r.MaxConcurrentReconciles
	if workers <= 0 {
		workers = 8
	}
	b := builder.ControllerManagedBy(mgr).
		Named("trial").
		For(&evalv1.Trial{}).
		Owns(&corev1.Pod{}).
		Owns(&networkingv1.NetworkPolicy{}).
		Watches(&evalv1.Task{}, handler.EnqueueRequestsFromMapFunc(r.waitingTrialsOf)).
		WatchesRawSource(source.Channel(r.Pool.Events(), &handler.EnqueueRequestForObject{})).
		// Slot pods are the Campaign's: their changes go to the Trial that
		// holds the slot and those waiting for its class.
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.trialsOfSlot)).
		WatchesRawSource(source.Channel(r.Slots.Events(), &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers})
	if r.Queue != nil {
		b = r.Queue.Watch(b)
	}
	return b.Complete(r)
}

// waitingTrialsOf maps a Task to its Trials that have not started: a Task
// that appears or heals lets them start; started Trials keep the task they
// started with.
func (r *TrialReconciler) waitingTrialsOf(ctx context.Context, o client.Object) []reconcile.Request {
	var trials evalv1.TrialList
	if err := r.Client.List(ctx, &trials, client.InNamespace(o.GetNamespace()),
		client.MatchingFields{trialTaskIndex: o.GetName()}); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, t := range trials.Items {
		if activeAttempt(&t.Status) == nil && !isTerminal(&t.Status) {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: t.Namespace, Name: t.Name}})
		}
	}
	return reqs
}

// Reconcile implements reconcile.Reconciler.
func (r *TrialReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	log := r.Log.WithValues("trial", req.NamespacedName.String())
	t := &evalv1.Trial{}
	if err := r.Client.Get(ctx, req.NamespacedName, t); err != nil {
		if apierrors.IsNotFound(err) {
			return r.reconcileGone(ctx, req.NamespacedName)
		}
		return reconcile.Result{}, err
	}
	if t.DeletionTimestamp != nil {
		return r.reconcileGone(ctx, req.NamespacedName)
	}
	if t.ManagedElsewhere() {
		// MultiKueue runs it in a worker cluster and mirrors its status
		// here: no pod, no status write of ours.
		return reconcile.Result{}, nil
	}
	if isTerminal(&t.Status) {
		// The cache shows the outcome written, so no later read can show the
		// attempt running: the pool's memory of it is not needed again, and
		// keeping it until the Trial is deleted grew the manager by every
		// finished Trial.
		defer r.Pool.Forget(req.NamespacedName)
	}

	var p plan
	for try := 0; ; try++ {
		w, err := r.observe(ctx, t)
		if err != nil {
			return reconcile.Result{}, err
		}
		p = planTrial(w)
		if podsReadyOnly(&t.Status, &p.Status, &p) {
			break
		}
		written, changed, err := writeTrialStatus(ctx, r.Client, t, &p.Status)
		if err == nil {
			t = written
			if changed && p.ProgressAttempt != "" {
				// Every write of a running attempt carries its latest
				// progress, so the throttle counts from any of them.
				r.Pool.ProgressWritten(req.NamespacedName, p.ProgressAttempt, p.now.Time)
				if p.ProgressOnly && r.Metrics != nil {
					r.Metrics.ProgressWrites.Inc()
				}
			}
			break
		}
		if !apierrors.IsConflict(err) || try >= maxStatusConflicts {
			if apierrors.IsConflict(err) {
				return reconcile.Result{RequeueAfter: time.Second}, nil
			}
			return reconcile.Result{}, err
		}
		log.V(1).Info("status conflict; replanning from a fresh read", "try", try+1)
		fresh := &evalv1.Trial{}
		if err := r.APIReader.Get(ctx, req.NamespacedName, fresh); err != nil {
			if apierrors.IsNotFound(err) {
				return r.reconcileGone(ctx, req.NamespacedName)
			}
			return reconcile.Result{}, err
		}
		t = fresh
	}
	if err := r.execute(ctx, t, &p); err != nil {
		return reconcile.Result{}, err
	}
	if at := deleteTrialAt(t); !at.IsZero() {
		now := time.Now()
		if r.Now != nil {
			now = r.Now()
		}
		if wait := at.Sub(now); wait > 0 {
			return reconcile.Result{RequeueAfter: min(wait, nonZero(p.RequeueAfter, wait))}, nil
		}
		// ttlSecondsAfterFinished: deleted as a Job is; reconcileGone then
		// takes its pods. The UID precondition spares a re-created namesake.
		uid := t.UID
		if err := r.Client.Delete(ctx, t, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			return reconcile.Result{}, fmt.Errorf("delete finished trial %s after ttlSecondsAfterFinished: %w", req.NamespacedName, err)
		}
		log.V(1).Info("deleted after ttlSecondsAfterFinished")
		return reconcile.Result{}, nil
	}
	return reconcile.Result{RequeueAfter: p.RequeueAfter}, nil
}

func nonZero(d, fallback time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return fallback
}

// observe gathers the world of one live Trial.
func (r *TrialReconciler) observe(ctx context.Context, t *evalv1.Trial) (*world, error) {
	key := client.ObjectKeyFromObject(t)
	w := &world{
		Now:              metav1.Now().Rfc3339Copy().Time,
		Trial:            t,
		Pods:             map[int32]map[string]*corev1.Pod{},
		ProgressInterval: nonZero(r.ProgressInterval, DefaultProgressInterval),
	}
	if r.Now != nil {
		w.Now = metav1.NewTime(r.Now()).Rfc3339Copy().Time
	}
	var pods corev1.PodList
	err := r.Client.List(ctx, &pods, client.InNamespace(t.Namespace), client.MatchingFields{podOwnerIndex: t.Name})
	if err != nil {
		return nil, fmt.Errorf("list pods of trial %s: %w", key, err)
	}
	for i := range pods.Items {
		pod := &pods.Items[i]
		if ref := metav1.GetControllerOf(pod); ref == nil || ref.UID != t.UID {
			w.Strays = append(w.Strays, pod)
			continue
		}
		n, err := strconv.Atoi(pod.Labels[evalv1.LabelAttempt])
		role := pod.Labels[evalv1.LabelRole]
		if err != nil || role == "" {
			continue
		}
		if w.Pods[int32(n)] == nil {
			w.Pods[int32(n)] = map[string]*corev1.Pod{}
		}
		w.Pods[int32(n)][role] = pod
	}

	if r.Queue != nil {
		w.Queued = true
		if t.QueueName() != "" && !isTerminal(&t.Status) {
			q, err := r.Queue.State(ctx, t)
			if err != nil {
				return nil, fmt.Errorf("trial %s: queue: %w", key, err)
			}
			w.Queue = &q
		}
	}

	if v, ok := r.Pool.View(key); ok {
		w.Driver = &v
	}
	if a := activeAttempt(&t.Status); a != nil {
		for role := range w.Pods[a.Number] {
			r.Pool.ObservePod(key, a.ID, role)
		}
		w.PodsCreated, w.PodsSeen = r.Pool.PodBookkeeping(key, a.ID)
		if in := r.Pool.Input(key, a.ID); in != nil {
			w.AttemptTask = in.Task
		}
	} else if !isTerminal(&t.Status) {
		w.Task, w.TaskErr = r.resolveTask(ctx, t)
		if w.TaskErr == nil {
			_, _, w.ImageErr = runnerImage(r.Pods, t, w.Task.Desc)
			if w.Missing, w.KeyErr, err = trialSecrets(ctx, r.APIReader, t.Namespace, t.Spec.SecretUses()); err != nil {
				return nil, fmt.Errorf("trial %s: %w", key, err)
			}
			if w.Missing == nil && w.KeyErr == nil {
				w.KeyErr = checkProviderKeys(ctx, r.APIReader, t)
			}
			if w.Missing == nil && w.KeyErr == nil {
				// Every attempt creates its credential Secret (and a judged
				// Trial its gateway token) in the Trial's namespace.
				w.KeyErr = checkNamespaceGrant(ctx, r.APIReader, t)
			}
			if w.ImageErr == nil {
				w.ImageErr = environmentImageErr(w.Task.Desc)
			}
		}
	}
	if w.HasNetworkPolicy, err = r.hasNetworkPolicies(ctx, t, w.environment()); err != nil {
		return nil, err
	}
	if err := r.observeSlots(ctx, w); err != nil {
		return nil, fmt.Errorf("trial %s: slots: %w", key, err)
	}
	return w, nil
}

// resolveTask finds the Trial's task: inline, or the referenced Task with
// its ConfigMap merged in. A Task that is missing or unreadable is
// transient; one that does not decode is final.
func (r *TrialReconciler) resolveTask(ctx context.Context, t *evalv1.Trial) (*resolvedTask, *taskError) {
	if t.Spec.Task != nil {
		desc, err := decodeDescription(t.Spec.Task.Raw, "spec.task")
		if err != nil {
			return nil, asTaskError(err)
		}
		return &resolvedTask{Desc: desc}, nil
	}
	if t.Spec.TaskRef == nil {
		return nil, &taskError{Reason: string(evalv1.PhaseInvalid), Err: errors.New("spec names no task")}
	}
	task := &evalv1.Task{}
	tkey := types.NamespacedName{Namespace: t.Namespace, Name: t.Spec.TaskRef.Name}
	err := r.Client.Get(ctx, tkey, task)
	if apierrors.IsNotFound(err) {
		// The cache may lag a Task created just before the Trial: only the
		// API server's NotFound fails the Trial.
		err = r.APIReader.Get(ctx, tkey, task)
	}
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &taskError{Reason: evalv1.ReasonTaskNotFound, Transient: true,
				Err:     fmt.Errorf("task %s/%s not found", t.Namespace, t.Spec.TaskRef.Name),
				Missing: &refs.MissingRef{Reason: evalv1.ReasonTaskNotFound, Kind: "Task", Namespace: t.Namespace, Name: t.Spec.TaskRef.Name, Field: "spec.taskRef"}}
		}
		return nil, &taskError{Reason: evalv1.ReasonTaskNotFound, Transient: true, Err: err}
	}
	rt, err := resolveTaskSpec(ctx, r.APIReader, r.Packs, t.Namespace, &task.Spec)
	if err != nil {
		te := asTaskError(err)
		te.Err = fmt.Errorf("task %s: %w", task.Name, te.Err)
		return nil, te
	}
	return rt, nil
}

func asTaskError(err error) *taskError {
	var te *taskError
	if errors.As(err, &te) {
		return te
	}
	return &taskError{Reason: evalv1.ReasonInitialStateUnavailable, Err: err, Transient: true}
}

// execute carries out a plan whose status is written.
func (r *TrialReconciler) execute(ctx context.Context, t *evalv1.Trial, p *plan) error {
	key := client.ObjectKeyFromObject(t)
	if p.Claim != nil {
		r.Pool.Claim(key, p.ClaimID, p.Claim)
	}
	if p.Cancel != nil {
		r.Pool.Cancel(key, p.Cancel)
	}
	for _, v := range p.AttemptsEnded {
		if r.Metrics != nil {
			r.Metrics.Attempts.WithLabelValues(string(v.Outcome), v.Reason).Inc()
		}
	}
	if r.Metrics != nil {
		if p.TrialStarted {
			r.Metrics.TrialsStarted.Inc()
		}
		if p.CompletedReason != "" {
			r.Metrics.TrialsCompleted.WithLabelValues(p.CompletedReason).Inc()
		}
	}
	if p.Release != "" {
		r.Pool.Release(key, p.Release)
	}
	if p.CompletedReason != "" && usesGateway(t, r.Pods.GatewayURL) {
		// The gateway already refuses a completed Trial's token; deleting
		// the Secret also leaves nothing to read it from. A Trial without a
		// judge never had one: a DELETE answered 404 is still an API
		// write, one per Trial.
		if err := r.deleteGatewaySecret(ctx, key); err != nil {
			r.Log.Error(err, "revoke gateway token", "trial", key.String())
		}
	}
	emit(r.Recorder, t, p.Events)
	for _, e := range p.Events {
		r.Log.Info(e.Message, "trial", key.String(), "reason", e.Reason, "type", e.Type)
	}

	if p.EnsureNP {
		if err := r.ensureNetworkPolicies(ctx, t, p.Env); err != nil {
			return err
		}
	}
	var errs []error
	if err := r.executeSlots(ctx, t, p); err != nil {
		errs = append(errs, err)
	}
	if a := activeAttempt(&t.Status); a != nil {
		createErrs, err := r.startAttempt(ctx, t, a, p)
		if err != nil {
			return err
		}
		errs = append(errs, createErrs...)
	}
	for _, n := range p.DeletePodsOf {
		err := r.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(t.Namespace),
			client.MatchingLabels{evalv1.LabelTrial: evalv1.LabelValue(t.Name), evalv1.LabelAttempt: strconv.Itoa(int(n))})
		if err != nil {
			errs = append(errs, fmt.Errorf("delete pods of attempt %d of trial %s: %w", n, key, err))
		}
	}
	for _, s := range p.DeleteStrays {
		if err := r.Client.Delete(ctx, s, client.Preconditions{UID: &s.UID}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("delete stray pod %s/%s: %w", s.Namespace, s.Name, err))
		}
	}
	return errors.Join(errs...)
}

// startAttempt brings the active attempt's parts into being: its
// credential (and gateway token for a runner that uses the gateway), the
// pods the plan says are missing, and its driver once the plan submits it.
// Failed pod creates come back in createErrs (a later reconcile retries
// them); a missing credential ends the pass (err).
func (r *TrialReconciler) startAttempt(ctx context.Context, t *evalv1.Trial, a *evalv1.AttemptStatus, p *plan) (createErrs []error, err error) {
	key := client.ObjectKeyFromObject(t)
	ref := attemptRef{Trial: t, Number: a.Number}
	if len(p.CreatePod) > 0 {
		if err := r.ensureAuthSecret(ctx, ref); err != nil {
			return nil, err
		}
	}
	if slices.Contains(p.CreatePod, evalv1.RoleRunner) && usesGateway(t, r.Pods.GatewayURL) {
		if err := r.ensureGatewaySecret(ctx, t); err != nil {
			// The runner pod mounts the token: without it the pod could
			// not start, so neither pod is created until it exists.
			emit(r.Recorder, t, []eventRecord{warningEvent(evalv1.ReasonPodsPending, actionStartAttempt, err.Error())})
			return nil, err
		}
	}
	// The pods do not depend on each other (each finds the other's IP
	// through the manager): created at once, one round trip for both.
	pods := make([]*corev1.Pod, len(p.CreatePod))
	created := make([]error, len(p.CreatePod))
	var wg sync.WaitGroup
	// The claim holds the task resolved when the attempt started; a retried
	// create finds it in the pool.
	var desc *task.TaskDescription
	if in := r.Pool.Input(key, a.ID); in != nil && in.Task != nil {
		desc = in.Task.Desc
	}
	if e := p.SlotEnv; e != nil && desc != nil && desc.Environment != nil {
		// The fence first, as ensureNetworkPolicies does for pods of their
		// own: the environment never runs admitting anyone but its slot.
		np := SlotEnvironmentPolicy(t, a.Number, e.Slot, desc.Environment)
		if err := r.Client.Create(ctx, np, client.FieldOwner(evalv1.FieldManager)); err != nil && !apierrors.IsAlreadyExists(err) {
			msg := fmt.Sprintf("create network policy %s: %v; the environment pod is not created without it", np.Name, err)
			emit(r.Recorder, t, []eventRecord{warningEvent(evalv1.ReasonNetworkPolicyUnavailable, actionStartAttempt, msg)})
			return nil, fmt.Errorf("network policy %s of trial %s: %w", np.Name, key, err)
		}
	}
	for i, role := range p.CreatePod {
		switch role {
		case evalv1.RoleRunner:
			pods[i] = runnerPod(r.Pods, ref, desc)
		case evalv1.RoleEnvironment:
			pods[i] = environmentPod(r.Pods, ref, desc.Environment)
			if e := p.SlotEnv; e != nil {
				pods[i] = onSlotEnvironment(pods[i], e.Campaign)
			}
		default:
			pods[i] = dbServicePod(r.Pods, ref)
		}
		place(pods[i], p.Placement[role])
		wg.Go(func() { created[i] = r.Client.Create(ctx, pods[i], client.FieldOwner(evalv1.FieldManager)) })
	}
	wg.Wait()
	for i, role := range p.CreatePod {
		pod, err := pods[i], created[i]
		if err != nil && !apierrors.IsAlreadyExists(err) {
			// Status was written before this create, so the refusal
			// (quota, admission) is told in an event; the attempt stays
			// PodsPending and the create is retried until podsReady.
			emit(r.Recorder, t, []eventRecord{warningEvent(evalv1.ReasonPodsPending, actionStartAttempt,
				fmt.Sprintf("create pod %s: %v", pod.Name, err))})
			createErrs = append(createErrs, fmt.Errorf("create pod %s: %w", pod.Name, err))
			continue
		}
		r.Pool.MarkPodCreated(key, a.ID, role)
	}
	if p.Submit && p.OnSlot {
		in := r.Pool.Input(key, a.ID)
		if in == nil {
			return createErrs, nil
		}
		if usesGateway(t, r.Pods.GatewayURL) {
			// The judge's key goes to the slot's runner in RegisterTrial's
			// metadata, read from this Secret by the driver.
			if err := r.ensureGatewaySecret(ctx, t); err != nil {
				return createErrs, err
			}
		}
		r.Slots.markDriven(types.NamespacedName{Namespace: t.Namespace, Name: a.Slot}, a.ID)
		r.Pool.Submit(key, a.ID, r.Driver.DriveSlot(in, p.RunnerIP, p.EnvIP, p.SlotToken))
		return createErrs, nil
	}
	if p.Submit {
		if in := r.Pool.Input(key, a.ID); in != nil {
			r.Pool.Submit(key, a.ID, r.Driver.Drive(in, p.RunnerIP, p.DBIP, p.EnvIP))
		}
	}
	return createErrs, nil
}

// reconcileGone cleans up after a deleted Trial: its driver is cancelled
// (host.RunAttempt sends CleanupTrial on the way out), then, once the driver
// has returned, its pods and network policy are deleted explicitly. Owner
// references would get there too, but only where a garbage collector runs.
func (r *TrialReconciler) reconcileGone(ctx context.Context, key types.NamespacedName) (reconcile.Result, error) {
	if r.Pool.Cancel(key, errTrialDeleted) {
		// The driver's done event brings us back.
		return reconcile.Result{}, nil
	}
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(key.Namespace), client.MatchingFields{podOwnerIndex: key.Name}); err != nil {
		return reconcile.Result{}, fmt.Errorf("list pods of deleted trial %s: %w", key, err)
	}
	live := false
	for i := range pods.Items {
		if pods.Items[i].DeletionTimestamp == nil {
			live = true
		}
	}
	if live {
		if err := r.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(key.Namespace),
			client.MatchingLabels{evalv1.LabelTrial: evalv1.LabelValue(key.Name)}); err != nil {
			return reconcile.Result{}, fmt.Errorf("delete pods of deleted trial %s: %w", key, err)
		}
	}
	// The namespace's RunnersPolicy stays: it serves the namespace's other
	// trials.
	for _, name := range []string{NetworkPolicyName(key.Name), legacyRunnerEgressPolicyName(key.Name)} {
		np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: name}}
		if err := r.Client.Get(ctx, client.ObjectKeyFromObject(np), np); err == nil && np.DeletionTimestamp == nil {
			if err := r.Client.Delete(ctx, np, client.Preconditions{UID: &np.UID}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
				return reconcile.Result{}, fmt.Errorf("delete network policy of deleted trial %s: %w", key, err)
			}
		}
	}
	if err := r.deleteGatewaySecret(ctx, key); err != nil {
		return reconcile.Result{}, err
	}
	if err := r.releaseSlotOfGone(ctx, key); err != nil {
		return reconcile.Result{}, err
	}
	r.Pool.Forget(key)
	return reconcile.Result{}, nil
}

// ensureGatewaySecret creates the Trial's gateway token Secret with a fresh
// token, once per Trial: a Secret already there (an earlier attempt, a
// create whose response was lost) keeps its token.
func (r *TrialReconciler) ensureGatewaySecret(ctx context.Context, t *evalv1.Trial) error {
	tok, err := gateway.NewToken(client.ObjectKeyFromObject(t))
	if err != nil {
		return err
	}
	err = r.Client.Create(ctx, gatewaySecret(t, tok), client.FieldOwner(evalv1.FieldManager))
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create gateway token secret %s/%s: %w", t.Namespace, gateway.SecretName(t.Name), err)
	}
	return nil
}

// deleteGatewaySecret revokes the Trial's gateway token.
func (r *TrialReconciler) deleteGatewaySecret(ctx context.Context, key types.NamespacedName) error {
	if r.Pods.GatewayURL == "" {
		return nil
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: gateway.SecretName(key.Name)}}
	if err := r.Client.Delete(ctx, s); client.IgnoreNotFound(err) != nil && !apierrors.IsForbidden(err) {
		return fmt.Errorf("delete gateway token secret %s/%s: %w", key.Namespace, s.Name, err)
	}
	return nil
}
