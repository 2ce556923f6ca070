// Package campaign is the Campaign reconciler: it expands a Campaign (tasks x
// trialsPerTask x agents) into Trials it owns, under a cap on non-terminal
// Trials (maxParallel) and a spend budget, and rebuilds the Campaign's status
// from those Trials on every reconcile: counts, pass@1, pass@k and pass^k per
// agent, per task and overall, tokens and cost.
//
// The reconcile follows the rebuild-from-the-world recipe: read the Campaign,
// the Tasks it selects and its Trials (from the informer cache), plan in one
// pure function (World.Plan) what to create, what to delete and what the
// status is, then act. A stale cache cannot over-create: creations not yet seen by
// the cache are remembered (expectations.go) and counted as running, and
// Trial names are deterministic, so a repeated create finds its own Trial.
//
// Files by concern: names.go (Trial names and label values), passk.go (the
// estimators, exact rational arithmetic), aggregate.go (cells and
// aggregates, also used by results/report), plan.go (what to create and
// the status), plan_rerun.go, plan_budget.go (maxParallel and the budget),
// plan_conditions.go (also spec.suspend's and missing Secrets' holds),
// references.go (the Secrets the Campaign's models read), trial.go (the Trial of a cell and what the
// planner reads back from one), expectations.go, reconciler.go, status.go.
//
// Imports: api/v1alpha1, controllers/refs, the standard library,
// github.com/go-logr/logr, k8s.io/api, k8s.io/apimachinery, k8s.io/client-go,
// k8s.io/utils and sigs.k8s.io/controller-runtime.
// Never the controllers package; controllers/manager registers this
// reconciler through NewReconciler and SetupWithManager.
package campaign
