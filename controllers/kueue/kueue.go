// Package kueue is the Trial's Kueue integration: a Trial that names a
// LocalQueue (label kueue.x-k8s.io/queue-name, its own or copied from its
// Campaign) gets a Workload it owns, whose pod sets are the requests of the
// pods an attempt runs on (its runner and DB service pods, or the one warm
// slot pod of its Campaign it runs on), and runs only while Kueue admits that
// Workload.
//
// The contract is Kueue's jobframework.GenericJob, kept by hand. The Trial's
// suspend notion is its Workload's admission: the Trial controller starts no
// attempt while the Workload is not admitted (or is evicted), and ends a
// running one InfraFailed (reason Preempted or Evicted) when Kueue evicts it;
// spec.suspend stays the user's own hold, and nothing here writes it, which
// saves two writes per Trial over flipping it as jobframework flips a Job's.
// The Workload is finished when the Trial completes, which frees its quota;
// an evicted Workload gives its quota back once the Trial has no attempt
// running, and Kueue requeues it. Kueue lists the Trial among its
// integrations.externalFrameworks (Trial.v1alpha1.eval.tolokaforge.io) and
// runs no reconciler for it: this one is it. For MultiKueue, a Trial with
// spec.managedBy kueue.x-k8s.io/multikueue is left to Kueue in the manager
// cluster, and its worker copy uses the Workload MultiKueue made there
// (PrebuiltWorkloadLabel).
//
// Why not jobframework's own reconciler (NewGenericReconcilerFactory):
// sigs.k8s.io/kueue v0.17.0's jobframework package imports every
// integration's API (Kubeflow trainer v2.2.0, Ray, JobSet, AppWrapper), and
// the trainer's generated code does not compile against k8s.io/api v0.37
// (corev1.PodStatusResult and WorkloadReference are gone); the module proxy
// serves no newer trainer. Only Kueue's API types
// (sigs.k8s.io/kueue/apis/kueue/v1beta2) are imported, and they add nothing
// else to go.mod.
//
// Imports: api/task (a terminal task's environment), api/v1alpha1, controllers
// (QueueView, AttemptResources, EnvironmentResources), the
// standard library, github.com/go-logr/logr, k8s.io/api, k8s.io/apimachinery,
// k8s.io/client-go, k8s.io/utils, sigs.k8s.io/controller-runtime and
// sigs.k8s.io/kueue (its API types only).
package kueue

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	kueuev1 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"tolokaforge.io/operator/api/task"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers"
)

// Kueue's objects the integration reads and writes (config/rbac; the
// manager only asks for them when the integration is on, but the install
// grants them so `--kueue=auto` works once Kueue is installed).
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=workloads,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=workloads/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=workloadpriorityclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=resourceflavors,verbs=get;list;watch

// ExternalFramework is the Trial's name in Kueue's
// integrations.externalFrameworks.
var ExternalFramework = "Trial." + evalv1.GroupVersion.Version + "." + evalv1.GroupVersion.Group

// Integration reconciles the Workloads of queued Trials and answers the
// Trial controller's QueueView.
type Integration struct {
	Client client.Client
	Log    logr.Logger
}

var _ controllers.QueueView = (*Integration)(nil)

// Served reports whether the API server at cfg serves Kueue's Workloads
// (kueue.x-k8s.io/v1beta2), so a manager can turn the integration on by itself.
func Served(cfg *rest.Config) (bool, error) {
	if cfg == nil {
		return false, errors.New("kueue: rest config is nil")
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return false, fmt.Errorf("kueue: discovery client: %w", err)
	}
	list, err := dc.ServerResourcesForGroupVersion(kueuev1.GroupVersion.String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("kueue: discover %s: %w", kueuev1.GroupVersion, err)
	}
	for _, r := range list.APIResources {
		if r.Name == "workloads" {
			return true, nil
		}
	}
	return false, nil
}

// SetupWithManager registers the reconciler of queued Trials' Workloads.
func (i *Integration) SetupWithManager(mgr ctrl.Manager) error {
	if i.Client == nil {
		i.Client = mgr.GetClient()
	}
	return builder.ControllerManagedBy(mgr).
		Named("trial-kueue").
		For(&evalv1.Trial{}).
		Owns(&kueuev1.Workload{}).
		Watches(&kueuev1.Workload{}, handler.EnqueueRequestsFromMapFunc(i.prebuiltWatch)).
		Watches(&kueuev1.WorkloadPriorityClass{}, handler.EnqueueRequestsFromMapFunc(i.classWatch)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Complete(i)
}

// Watch brings a Trial back to the Trial controller when its Workload changes.
func (i *Integration) Watch(b *builder.Builder) *builder.Builder {
	return b.Watches(&kueuev1.Workload{}, handler.EnqueueRequestForOwner(
		i.Client.Scheme(), i.Client.RESTMapper(), &evalv1.Trial{}, handler.OnlyControllerOwner()))
}

// prebuiltWatch maps a Workload to the Trials of its namespace that name it
// by PrebuiltWorkloadLabel: a worker copy that arrived before its Workload,
// or that has yet to claim it, is reconciled when the Workload changes.
func (i *Integration) prebuiltWatch(ctx context.Context, o client.Object) []reconcile.Request {
	var list evalv1.TrialList
	if err := i.Client.List(ctx, &list, client.InNamespace(o.GetNamespace()),
		client.MatchingLabels{PrebuiltWorkloadLabel: o.GetName()}); err != nil {
		i.Log.Error(err, "list trials naming a prebuilt workload", "workload", client.ObjectKeyFromObject(o).String())
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for idx := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[idx])})
	}
	return out
}

// classWatch maps a WorkloadPriorityClass to the Trials whose label names it:
// one that waited for the class gets its Workload once the class exists.
func (i *Integration) classWatch(ctx context.Context, o client.Object) []reconcile.Request {
	var list evalv1.TrialList
	if err := i.Client.List(ctx, &list, client.MatchingLabels{evalv1.LabelPriorityClass: o.GetName()}); err != nil {
		i.Log.Error(err, "list trials naming a priority class", "priorityClass", o.GetName())
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for idx := range list.Items {
		if !completed(&list.Items[idx]) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[idx])})
		}
	}
	return out
}

// PrebuiltWorkloadLabel names the Workload a Trial must use instead of its
// own: MultiKueue puts it on the copy it creates in a worker cluster, whose
// Workload it created there too.
const PrebuiltWorkloadLabel = "kueue.x-k8s.io/prebuilt-workload-name"

// WorkloadName is the name of t's Workload: the prebuilt one it names, else
// the Trial's name and a hash of its UID (a re-created Trial of the same name
// gets a new Workload), within 63 characters.
func WorkloadName(t *evalv1.Trial) string {
	if name := t.Labels[PrebuiltWorkloadLabel]; name != "" {
		return name
	}
	sum := sha256.Sum256([]byte(t.UID))
	suffix := "-" + hex.EncodeToString(sum[:])[:5]
	name := "trial-" + t.Name
	if max := 63 - len(suffix); len(name) > max {
		name = name[:max]
	}
	return name + suffix
}

// NewWorkload is t's Workload in queue: owned by t, one pod set per pod an
// attempt runs with its requests, priority from the WorkloadPriorityClass wpc
// (nil: none). A Trial on warm slots (controllers.QueuedOnSlots) reserves the
// one slot pod it runs on; any other its own runner and DB-service pods.
func NewWorkload(t *evalv1.Trial, wpc *kueuev1.WorkloadPriorityClass) *kueuev1.Workload {
	return newWorkload(t, wpc, nil)
}

// newWorkload is NewWorkload for a task whose environment is env (nil: none,
// or not known yet): such a task keeps per-attempt pods, the environment's
// among them.
func newWorkload(t *evalv1.Trial, wpc *kueuev1.WorkloadPriorityClass, env *task.Environment) *kueuev1.Workload {
	var sets []kueuev1.PodSet
	if controllers.QueuedOnSlots(t, env != nil) {
		// Quota still means pods: the slot pod its attempts run on, whose
		// requests are its runner's and DB service's together. A slot runs
		// only an admitted Trial, and a Campaign keeps no more slots than it
		// has admitted, unfinished Trials.
		sets = []kueuev1.PodSet{{
			Name: kueuev1.PodSetReference(controllers.SlotPodSet), Count: 1,
			Template: corev1.PodTemplateSpec{Spec: controllers.SlotPodSetSpec(t)},
		}}
	} else {
		res := controllers.AttemptResources(t)
		podSet := func(role string) kueuev1.PodSet {
			return kueuev1.PodSet{
				Name:  kueuev1.PodSetReference(role),
				Count: 1,
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: role, Resources: res[role]}},
				}},
			}
		}
		sets = []kueuev1.PodSet{podSet(evalv1.RoleRunner), podSet(evalv1.RoleDBService)}
	}
	wl := &kueuev1.Workload{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: t.Namespace,
			Name:      WorkloadName(t),
			Labels: map[string]string{
				evalv1.LabelManagedBy: evalv1.ManagedByValue,
				evalv1.LabelTrial:     evalv1.LabelValue(t.Name),
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         evalv1.GroupVersion.String(),
				Kind:               "Trial",
				Name:               t.Name,
				UID:                t.UID,
				Controller:         ptr.To(true),
				BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: kueuev1.WorkloadSpec{
			QueueName: kueuev1.LocalQueueName(t.QueueName()),
			PodSets:   sets,
		},
	}
	if env != nil {
		WithEnvironment(wl, env)
	}
	if wpc != nil {
		wl.Spec.PriorityClassRef = &kueuev1.PriorityClassRef{
			Group: kueuev1.WorkloadPriorityClassGroup, Kind: kueuev1.WorkloadPriorityClassKind, Name: wpc.Name}
		wl.Spec.Priority = ptr.To(wpc.Value)
	}
	return wl
}

// WithEnvironment adds a terminal task's environment pod to wl's pod sets,
// so the quota Kueue reserves covers the attempt's third pod too.
func WithEnvironment(wl *kueuev1.Workload, env *task.Environment) {
	wl.Spec.PodSets = append(wl.Spec.PodSets, kueuev1.PodSet{
		Name:  kueuev1.PodSetReference(evalv1.RoleEnvironment),
		Count: 1,
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: evalv1.RoleEnvironment, Resources: controllers.EnvironmentResources(env)}},
		}},
	})
}

// trialEnvironment is the environment of t's task (inline or its Task), nil
// for other tasks or when the Task cannot be read yet (the Trial then waits
// for it as TaskNotFound, and its Workload reserves two pods).
func (i *Integration) trialEnvironment(ctx context.Context, t *evalv1.Trial) *task.Environment {
	raw := []byte(nil)
	switch {
	case t.Spec.Task != nil:
		raw = t.Spec.Task.Raw
	case t.Spec.TaskRef != nil:
		var tk evalv1.Task
		if err := i.Client.Get(ctx, types.NamespacedName{Namespace: t.Namespace, Name: t.Spec.TaskRef.Name}, &tk); err != nil {
			return nil
		}
		raw = tk.Spec.Description.Raw
	}
	var d struct {
		Environment *task.Environment `json:"environment"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &d) != nil {
		return nil
	}
	return d.Environment
}

// State implements controllers.QueueView from the cache.
func (i *Integration) State(ctx context.Context, t *evalv1.Trial) (controllers.QueueState, error) {
	wl := &kueuev1.Workload{}
	err := i.Client.Get(ctx, types.NamespacedName{Namespace: t.Namespace, Name: WorkloadName(t)}, wl)
	if apierrors.IsNotFound(err) {
		why, err := i.whyNoWorkload(ctx, t)
		return controllers.QueueState{Pending: why}, err
	}
	if err != nil {
		return controllers.QueueState{}, fmt.Errorf("get workload %s/%s: %w", t.Namespace, WorkloadName(t), err)
	}
	if why := notTrials(t, wl); why != "" {
		// Someone else's admission is no gate for this Trial: it waits.
		return controllers.QueueState{Workload: wl.Name, Pending: why}, nil
	}
	s := stateOf(wl)
	if s.Admitted {
		if s.Placement, err = i.placement(ctx, wl); err != nil {
			return controllers.QueueState{}, err
		}
	}
	return s, nil
}

// placement is where wl's admission puts each pod set (jobframework's
// PodSetInfo, less what a Trial has no use for): the node labels and
// tolerations of the ResourceFlavors assigned to it, then its admission
// checks' pod set updates (a ProvisioningRequest's node selector).
func (i *Integration) placement(ctx context.Context, wl *kueuev1.Workload) (map[string]controllers.Placement, error) {
	out := map[string]controllers.Placement{}
	get := func(role string) controllers.Placement {
		pl, ok := out[role]
		if !ok {
			pl = controllers.Placement{NodeSelector: map[string]string{}}
		}
		return pl
	}
	for _, psa := range wl.Status.Admission.PodSetAssignments {
		role := string(psa.Name)
		pl := get(role)
		names := map[kueuev1.ResourceFlavorReference]bool{}
		for _, f := range psa.Flavors {
			names[f] = true
		}
		for _, name := range slices.Sorted(maps.Keys(names)) {
			rf := &kueuev1.ResourceFlavor{}
			if err := i.Client.Get(ctx, types.NamespacedName{Name: string(name)}, rf); err != nil {
				return nil, fmt.Errorf("workload %s/%s: ResourceFlavor %s of pod set %s: %w", wl.Namespace, wl.Name, name, role, err)
			}
			maps.Copy(pl.NodeSelector, rf.Spec.NodeLabels)
			pl.Tolerations = append(pl.Tolerations, rf.Spec.Tolerations...)
		}
		out[role] = pl
	}
	for _, ac := range wl.Status.AdmissionChecks {
		for _, u := range ac.PodSetUpdates {
			role := string(u.Name)
			pl := get(role)
			maps.Copy(pl.NodeSelector, u.NodeSelector)
			pl.Tolerations = append(pl.Tolerations, u.Tolerations...)
			out[role] = pl
		}
	}
	return out, nil
}

// whyNoWorkload says what keeps t's Workload from being created, when the
// Trial can tell ("" otherwise): the priority class its label names.
func (i *Integration) whyNoWorkload(ctx context.Context, t *evalv1.Trial) (string, error) {
	name := t.Labels[evalv1.LabelPriorityClass]
	if name == "" || t.Labels[PrebuiltWorkloadLabel] != "" {
		return "", nil
	}
	err := i.Client.Get(ctx, types.NamespacedName{Name: name}, &kueuev1.WorkloadPriorityClass{})
	if apierrors.IsNotFound(err) {
		return fmt.Sprintf("WorkloadPriorityClass %q (label %s) does not exist", name, evalv1.LabelPriorityClass), nil
	}
	if err != nil {
		return "", fmt.Errorf("trial %s/%s: WorkloadPriorityClass %q: %w", t.Namespace, t.Name, name, err)
	}
	return "", nil
}

// notTrials says why wl does not gate t ("" when it does): a Workload gates
// only the Trial that controls it. A Trial names its Workload by name (its
// own UID-derived one, or a prebuilt one by label), and a label is anyone's
// to write: without this, a Trial made by hand with another Trial's Workload
// name in kueue.x-k8s.io/prebuilt-workload-name would run under that Trial's
// admission, outside every quota.
func notTrials(t *evalv1.Trial, wl *kueuev1.Workload) string {
	ref := metav1.GetControllerOf(wl)
	switch {
	case ref == nil:
		return fmt.Sprintf("workload %s is not yet claimed by this Trial", wl.Name)
	case ref.UID == t.UID:
		return ""
	default:
		return fmt.Sprintf("workload %s belongs to %s %s, not to this Trial", wl.Name, ref.Kind, ref.Name)
	}
}

// outOfSync says how a prebuilt Workload's pod sets differ from what t's
// attempt asks for ("" when they match). The quota Kueue reserved is the
// Workload's: a Trial whose pods ask for more than its prebuilt Workload
// would run beyond it, so such a Workload is never claimed (jobframework
// likewise refuses a prebuilt Workload out of sync with its job).
func outOfSync(t *evalv1.Trial, wl *kueuev1.Workload) string {
	want := NewWorkload(t, nil).Spec.PodSets
	if len(wl.Spec.PodSets) != len(want) {
		return fmt.Sprintf("prebuilt workload %s has %d pod sets, the Trial's attempt runs %d pods", wl.Name, len(wl.Spec.PodSets), len(want))
	}
	for i := range want {
		got, w := &wl.Spec.PodSets[i], &want[i]
		if got.Name != w.Name || got.Count != w.Count {
			return fmt.Sprintf("prebuilt workload %s: pod set %d is %s x%d, the Trial's is %s x%d", wl.Name, i, got.Name, got.Count, w.Name, w.Count)
		}
		have, asked := podSetRequests(got), podSetRequests(w)
		for _, res := range slices.Sorted(maps.Keys(asked)) {
			q := asked[res]
			if h, ok := have[res]; !ok || h.Cmp(q) < 0 {
				return fmt.Sprintf("prebuilt workload %s: pod set %s reserves %s %s, the Trial's %s pod requests %s",
					wl.Name, got.Name, h.String(), res, w.Name, q.String())
			}
		}
	}
	return ""
}

// podSetRequests sums the requests of ps's containers (limits stand in for
// missing requests, as the API server defaults them).
func podSetRequests(ps *kueuev1.PodSet) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, c := range ps.Template.Spec.Containers {
		for res, q := range c.Resources.Limits {
			if _, ok := c.Resources.Requests[res]; !ok {
				sum := out[res]
				sum.Add(q)
				out[res] = sum
			}
		}
		for res, q := range c.Resources.Requests {
			sum := out[res]
			sum.Add(q)
			out[res] = sum
		}
	}
	return out
}

// stateOf reads a Workload's conditions.
func stateOf(wl *kueuev1.Workload) controllers.QueueState {
	s := controllers.QueueState{Workload: wl.Name, Admitted: admitted(wl)}
	for _, ps := range wl.Spec.PodSets {
		if string(ps.Name) == controllers.SlotPodSet {
			s.SlotPodSet = true
		}
	}
	if s.Admitted {
		s.ClusterQueue = string(wl.Status.Admission.ClusterQueue)
	}
	if c := meta.FindStatusCondition(wl.Status.Conditions, kueuev1.WorkloadQuotaReserved); c != nil && c.Status == metav1.ConditionFalse {
		s.Pending = c.Message
	}
	if c := meta.FindStatusCondition(wl.Status.Conditions, kueuev1.WorkloadEvicted); c != nil && c.Status == metav1.ConditionTrue {
		s.EvictedReason, s.EvictedMessage = c.Reason, c.Message
	}
	return s
}

func admitted(wl *kueuev1.Workload) bool {
	return wl.Status.Admission != nil && meta.IsStatusConditionTrue(wl.Status.Conditions, kueuev1.WorkloadAdmitted)
}

func quotaReserved(wl *kueuev1.Workload) bool {
	return meta.IsStatusConditionTrue(wl.Status.Conditions, kueuev1.WorkloadQuotaReserved)
}

func finished(wl *kueuev1.Workload) bool {
	return meta.IsStatusConditionTrue(wl.Status.Conditions, kueuev1.WorkloadFinished)
}

func evicted(wl *kueuev1.Workload) *metav1.Condition {
	if c := meta.FindStatusCondition(wl.Status.Conditions, kueuev1.WorkloadEvicted); c != nil && c.Status == metav1.ConditionTrue {
		return c
	}
	return nil
}

// running: the Trial's last attempt has not ended (its pods may exist).
func running(t *evalv1.Trial) bool {
	n := len(t.Status.Attempts)
	return n > 0 && t.Status.Attempts[n-1].Outcome == evalv1.OutcomeRunning
}

func completed(t *evalv1.Trial) bool {
	return meta.IsStatusConditionTrue(t.Status.Conditions, evalv1.TrialCompleted)
}

// Reconcile implements reconcile.Reconciler: the steps of jobframework's
// ReconcileGenericJob that a Trial needs, in its order.
func (i *Integration) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	t := &evalv1.Trial{}
	if err := i.Client.Get(ctx, req.NamespacedName, t); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, i.deleteOrphans(ctx, req.NamespacedName)
		}
		return reconcile.Result{}, err
	}
	if t.QueueName() == "" || t.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	log := i.Log.WithValues("trial", req.String())
	wl := &kueuev1.Workload{}
	err := i.Client.Get(ctx, types.NamespacedName{Namespace: t.Namespace, Name: WorkloadName(t)}, wl)
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, fmt.Errorf("get workload of trial %s: %w", req, err)
	}
	exists := err == nil

	// 1. The Trial has its outcome: the Workload is finished, its quota free.
	// Only its own: a Trial that names another's Workload (by a prebuilt
	// label) and ends must not end that Workload's admission.
	if completed(t) {
		if exists && notTrials(t, wl) != "" {
			return reconcile.Result{}, nil
		}
		if exists && !finished(wl) {
			return reconcile.Result{}, i.finish(ctx, t, wl)
		}
		if exists {
			// Kueue's finalizer is the job integration's to drop once the
			// Workload is finished, so the Trial's deletion takes it along.
			return reconcile.Result{}, i.dropFinalizer(ctx, wl)
		}
		return reconcile.Result{}, nil
	}
	// 2. No Workload yet: create it (the Trial waits for its admission). A
	// prebuilt one (MultiKueue's, in a worker cluster) is waited for.
	prebuilt := t.Labels[PrebuiltWorkloadLabel] != ""
	if !exists && prebuilt {
		// Its creation brings the Trial back (prebuiltWatch).
		return reconcile.Result{}, nil
	}
	if !exists {
		var wpc *kueuev1.WorkloadPriorityClass
		if name := t.Labels[evalv1.LabelPriorityClass]; name != "" {
			wpc = &kueuev1.WorkloadPriorityClass{}
			err := i.Client.Get(ctx, types.NamespacedName{Name: name}, wpc)
			if apierrors.IsNotFound(err) {
				// The Trial's Admitted condition says so (whyNoWorkload);
				// the class's creation brings the Trial back (classWatch).
				log.Info("workload waits for its priority class", "priorityClass", name)
				return reconcile.Result{}, nil
			}
			if err != nil {
				return reconcile.Result{}, fmt.Errorf("trial %s: WorkloadPriorityClass %q (label %s): %w", req, name, evalv1.LabelPriorityClass, err)
			}
		}
		wl = newWorkload(t, wpc, i.trialEnvironment(ctx, t))
		if err := i.Client.Create(ctx, wl, client.FieldOwner(evalv1.FieldManager)); err != nil && !apierrors.IsAlreadyExists(err) {
			return reconcile.Result{}, fmt.Errorf("create workload %s/%s of trial %s: %w", wl.Namespace, wl.Name, req, err)
		}
		log.V(1).Info("created workload", "workload", wl.Name, "queue", t.QueueName())
		return reconcile.Result{}, nil
	}
	if finished(wl) {
		return reconcile.Result{}, nil
	}
	if ref := metav1.GetControllerOf(wl); ref == nil && prebuilt {
		if why := outOfSync(t, wl); why != "" {
			log.Info("not claiming prebuilt workload", "workload", wl.Name, "why", why)
			return reconcile.Result{}, nil
		}
		// Owned from now on, so its changes bring the Trial back; the
		// optimistic lock lets one Trial claim it, never two.
		if err := i.own(ctx, t, wl); err != nil {
			return reconcile.Result{}, err
		}
	} else if ref == nil || ref.UID != t.UID {
		// Not this Trial's: State keeps the Trial waiting, and nothing here
		// touches another's Workload.
		log.Info("workload is not this trial's", "workload", wl.Name, "why", notTrials(t, wl))
		return reconcile.Result{}, nil
	}
	// 3. Evicted: the Trial controller ends the running attempt (its gate is
	// the admission); once no attempt runs, the quota goes back and Kueue
	// requeues the Workload.
	if c := evicted(wl); c != nil {
		if quotaReserved(wl) && !running(t) {
			log.Info("workload evicted; releasing its quota", "workload", wl.Name, "reason", c.Reason, "message", c.Message)
			return reconcile.Result{}, i.releaseQuota(ctx, wl, c)
		}
		return reconcile.Result{}, nil
	}
	// 4. Admitted: Kueue's waitForPodsReady (when a cluster turns it on)
	// evicts a Workload whose pods are not ready in time, so its PodsReady
	// condition follows the Trial's, as jobframework writes a Job's.
	if admitted(wl) {
		if c, write := podsReadyCondition(t, wl); write {
			return reconcile.Result{}, i.patchStatus(ctx, wl, func(w *kueuev1.Workload) {
				c.ObservedGeneration = w.Generation
				meta.SetStatusCondition(&w.Status.Conditions, c)
			})
		}
		return reconcile.Result{}, nil
	}
	// 5. Waiting: the queue may have changed meanwhile.
	if q := kueuev1.LocalQueueName(t.QueueName()); wl.Spec.QueueName != q && !quotaReserved(wl) {
		wl.Spec.QueueName = q
		if err := i.Client.Update(ctx, wl, client.FieldOwner(evalv1.FieldManager)); err != nil {
			return reconcile.Result{}, fmt.Errorf("move workload %s/%s to queue %s: %w", wl.Namespace, wl.Name, q, err)
		}
	}
	return reconcile.Result{}, nil
}

// podsReadyCondition is the PodsReady condition wl should carry for t, and
// whether it must be written: True (Started, or Recovered after a lost
// attempt) once the running attempt's pods are ready; False
// (WaitForRecovery) when they were and the attempt has ended. The
// WaitForStart condition jobframework writes before the pods are ready is
// left out: Kueue's timeout reads a missing condition as not ready, and it
// would cost every Trial a write.
func podsReadyCondition(t *evalv1.Trial, wl *kueuev1.Workload) (metav1.Condition, bool) {
	cur := meta.FindStatusCondition(wl.Status.Conditions, kueuev1.WorkloadPodsReady)
	ready := running(t) && meta.IsStatusConditionTrue(t.Status.Conditions, evalv1.TrialPodsReady)
	switch {
	case ready && (cur == nil || cur.Status != metav1.ConditionTrue):
		reason := kueuev1.WorkloadStarted
		if cur != nil && (cur.Reason == kueuev1.WorkloadWaitForRecovery || cur.Reason == kueuev1.WorkloadRecovered) {
			reason = kueuev1.WorkloadRecovered
		}
		return metav1.Condition{Type: kueuev1.WorkloadPodsReady, Status: metav1.ConditionTrue, Reason: reason,
			Message: "All pods reached readiness and the workload is running"}, true
	case !ready && cur != nil && cur.Status == metav1.ConditionTrue:
		return metav1.Condition{Type: kueuev1.WorkloadPodsReady, Status: metav1.ConditionFalse, Reason: kueuev1.WorkloadWaitForRecovery,
			Message: "At least one pod has failed, waiting for recovery"}, true
	}
	return metav1.Condition{}, false
}

// finish marks the Workload Finished (Kueue frees its quota), in the Trial's
// words.
func (i *Integration) finish(ctx context.Context, t *evalv1.Trial, wl *kueuev1.Workload) error {
	reason := kueuev1.WorkloadFinishedReasonSucceeded
	if t.Status.Phase != evalv1.PhasePassed {
		reason = kueuev1.WorkloadFinishedReasonFailed
	}
	msg := fmt.Sprintf("trial %s", t.Status.Phase)
	if c := meta.FindStatusCondition(t.Status.Conditions, evalv1.TrialCompleted); c != nil && c.Message != "" {
		msg += ": " + c.Message
	}
	return i.patchStatus(ctx, wl, func(w *kueuev1.Workload) {
		meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{
			Type: kueuev1.WorkloadFinished, Status: metav1.ConditionTrue, Reason: reason,
			Message: truncate(msg, 32768), ObservedGeneration: w.Generation,
		})
	})
}

// releaseQuota gives an evicted Workload's quota back once its Trial has
// stopped, as jobframework does for a job no longer active: QuotaReserved
// and Admitted False, no admission, Requeued True after a preemption.
func (i *Integration) releaseQuota(ctx context.Context, wl *kueuev1.Workload, ev *metav1.Condition) error {
	return i.patchStatus(ctx, wl, func(w *kueuev1.Workload) {
		meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{
			Type: kueuev1.WorkloadRequeued, Status: boolStatus(ev.Reason == kueuev1.WorkloadEvictedByPreemption),
			Reason: ev.Reason, Message: truncate(ev.Message, 32768), ObservedGeneration: w.Generation,
		})
		meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{
			Type: kueuev1.WorkloadQuotaReserved, Status: metav1.ConditionFalse, Reason: "Pending",
			Message: truncate(ev.Message, 32768), ObservedGeneration: w.Generation,
		})
		meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{
			Type: kueuev1.WorkloadAdmitted, Status: metav1.ConditionFalse, Reason: "NoReservation",
			Message: "The workload has no reservation", ObservedGeneration: w.Generation,
		})
		w.Status.Admission = nil
	})
}

func (i *Integration) patchStatus(ctx context.Context, wl *kueuev1.Workload, edit func(*kueuev1.Workload)) error {
	updated := wl.DeepCopy()
	edit(updated)
	patch := client.MergeFromWithOptions(wl, client.MergeFromWithOptimisticLock{})
	if err := i.Client.Status().Patch(ctx, updated, patch, client.FieldOwner(evalv1.FieldManager)); err != nil {
		return fmt.Errorf("write status of workload %s/%s: %w", wl.Namespace, wl.Name, err)
	}
	return nil
}

// deleteOrphans deletes the Workloads of a Trial that is gone: owner
// references would, where a garbage collector runs, and a Workload left
// behind keeps its quota.
func (i *Integration) deleteOrphans(ctx context.Context, key types.NamespacedName) error {
	var list kueuev1.WorkloadList
	if err := i.Client.List(ctx, &list, client.InNamespace(key.Namespace),
		client.MatchingLabels{evalv1.LabelTrial: evalv1.LabelValue(key.Name), evalv1.LabelManagedBy: evalv1.ManagedByValue}); err != nil {
		return fmt.Errorf("list workloads of deleted trial %s: %w", key, err)
	}
	for idx := range list.Items {
		wl := &list.Items[idx]
		if ref := metav1.GetControllerOf(wl); ref == nil || ref.Kind != "Trial" || ref.Name != key.Name {
			continue
		}
		if err := i.dropFinalizer(ctx, wl); err != nil {
			return err
		}
		if err := i.Client.Delete(ctx, wl, client.Preconditions{UID: &wl.UID}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			return fmt.Errorf("delete workload %s/%s of deleted trial %s: %w", wl.Namespace, wl.Name, key, err)
		}
	}
	return nil
}

// own makes t the controller of its prebuilt Workload wl.
func (i *Integration) own(ctx context.Context, t *evalv1.Trial, wl *kueuev1.Workload) error {
	updated := wl.DeepCopy()
	updated.OwnerReferences = append(updated.OwnerReferences, metav1.OwnerReference{
		APIVersion: evalv1.GroupVersion.String(), Kind: "Trial", Name: t.Name, UID: t.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	})
	patch := client.MergeFromWithOptions(wl, client.MergeFromWithOptimisticLock{})
	if err := i.Client.Patch(ctx, updated, patch, client.FieldOwner(evalv1.FieldManager)); err != nil {
		return fmt.Errorf("own prebuilt workload %s/%s: %w", wl.Namespace, wl.Name, err)
	}
	return nil
}

// dropFinalizer removes Kueue's resource-in-use finalizer from wl.
func (i *Integration) dropFinalizer(ctx context.Context, wl *kueuev1.Workload) error {
	if !controllerutil.ContainsFinalizer(wl, kueuev1.ResourceInUseFinalizerName) {
		return nil
	}
	updated := wl.DeepCopy()
	controllerutil.RemoveFinalizer(updated, kueuev1.ResourceInUseFinalizerName)
	patch := client.MergeFromWithOptions(wl, client.MergeFromWithOptimisticLock{})
	if err := i.Client.Patch(ctx, updated, patch, client.FieldOwner(evalv1.FieldManager)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("remove finalizer of workload %s/%s: %w", wl.Namespace, wl.Name, err)
	}
	return nil
}

func boolStatus(b bool) metav1.ConditionStatus {
	if b {
		return metav1.ConditionTrue
	}
	return metav1.ConditionFalse
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
