package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"tolokaforge.io/operator/api/artifacts/blobstore"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// taskConfigMapIndex indexes Tasks by the ConfigMaps their initial state
// and pack files come from, so a ConfigMap change re-validates exactly those Tasks.
const taskConfigMapIndex = "spec.initialStateFrom.configMapKeyRef.name"

// transientRetry is how soon a Task whose ConfigMap could not be read is
// looked at again, besides the ConfigMap watch.
const transientRetry = 30 * time.Second

// TaskReconciler decodes each Task's description and reports what it holds
// (or why it does not decode) in status.
type TaskReconciler struct {
	Client client.Client
	// APIReader reads ConfigMaps uncached: only their metadata is watched,
	// so the manager never holds every ConfigMap's data.
	APIReader client.Reader
	// Packs is the store spec.files.url objects are read from (the
	// manager's artifact store); nil: such Tasks are not Valid.
	Packs *blobstore.Store
}

// SetupWithManager registers the controller.
func (r *TaskReconciler) SetupWithManager(mgr manager.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &evalv1.Task{}, taskConfigMapIndex,
		func(o client.Object) []string {
			t := o.(*evalv1.Task)
			var names []string
			if t.Spec.InitialStateFrom != nil {
				names = append(names, t.Spec.InitialStateFrom.ConfigMapKeyRef.Name)
			}
			if t.Spec.Files != nil && t.Spec.Files.ConfigMap != "" {
				names = append(names, t.Spec.Files.ConfigMap)
			}
			return names
		}); err != nil {
		return fmt.Errorf("index tasks by configMap: %w", err)
	}
	return builder.ControllerManagedBy(mgr).
		Named("task").
		For(&evalv1.Task{}).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.tasksForConfigMap),
			builder.OnlyMetadata).
		Complete(r)
}

func (r *TaskReconciler) tasksForConfigMap(ctx context.Context, o client.Object) []reconcile.Request {
	var tasks evalv1.TaskList
	if err := r.Client.List(ctx, &tasks, client.InNamespace(o.GetNamespace()),
		client.MatchingFields{taskConfigMapIndex: o.GetName()}); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(tasks.Items))
	for _, t := range tasks.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: t.Namespace, Name: t.Name}})
	}
	return reqs
}

// Reconcile implements reconcile.Reconciler.
func (r *TaskReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	t := &evalv1.Task{}
	if err := r.Client.Get(ctx, req.NamespacedName, t); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	resolved, err := resolveTaskSpec(ctx, r.APIReader, r.Packs, t.Namespace, &t.Spec)
	var te *taskError
	if err != nil && !errors.As(err, &te) {
		return reconcile.Result{}, fmt.Errorf("resolve task %s: %w", req.NamespacedName, err)
	}
	desired := taskStatusFor(t, resolved, te)
	if err := r.writeStatus(ctx, t, desired); err != nil {
		if apierrors.IsConflict(err) {
			return reconcile.Result{RequeueAfter: time.Second}, nil
		}
		return reconcile.Result{}, err
	}
	if te != nil && te.Transient {
		return reconcile.Result{RequeueAfter: transientRetry}, nil
	}
	return reconcile.Result{}, nil
}

// taskStatusFor is the Task's status given what resolving it gave.
func taskStatusFor(t *evalv1.Task, resolved *resolvedTask, te *taskError) evalv1.TaskStatus {
	st := evalv1.TaskStatus{
		ObservedGeneration: t.Generation,
		Conditions:         append([]metav1.Condition(nil), t.Status.Conditions...),
	}
	cond := metav1.Condition{Type: evalv1.TaskValid, ObservedGeneration: t.Generation}
	if te != nil {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, te.Reason, truncate(te.Error(), 32<<10)
	} else {
		s := summarize(resolved.Desc)
		st.TaskID, st.Category = s.TaskID, s.Category
		st.AgentTools, st.UserTools, st.GoldenActions = s.AgentTools, s.UserTools, s.GoldenActions
		cond.Status, cond.Reason = metav1.ConditionTrue, evalv1.ReasonTaskValid
		cond.Message = fmt.Sprintf("task %q: %d agent tools, %d user tools, %d golden actions",
			s.TaskID, s.AgentTools, s.UserTools, s.GoldenActions)
	}
	meta.SetStatusCondition(&st.Conditions, cond)
	return st
}

func (r *TaskReconciler) writeStatus(ctx context.Context, t *evalv1.Task, desired evalv1.TaskStatus) error {
	if equality.Semantic.DeepEqual(t.Status, desired) {
		return nil
	}
	orig := t.DeepCopy()
	t.Status = desired
	patch := client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})
	if err := r.Client.Status().Patch(ctx, t, patch, client.FieldOwner(evalv1.FieldManager)); err != nil {
		return fmt.Errorf("write status of task %s/%s: %w", t.Namespace, t.Name, err)
	}
	return nil
}
