package controllers

// The manager's permissions, gathered here so config/rbac is generated from one place.
// deletecollection on pods: an attempt's pods go in one request (DeleteAllOf).
// No Secrets here: the manager reads provider Secrets (and writes the per-trial
// gateway token Secret) only in namespaces the install grants, through the Role
// of config/namespace-grant (helm: trialNamespaces). It reads them with a direct
// get (Driver.APIReader), never a cache, so it needs no list or watch.
// Each attempt's credential Secret is created there too (owned by the Trial,
// so garbage collection removes it).
//
// +kubebuilder:rbac:groups=eval.tolokaforge.io,resources=tasks;trials;campaigns,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=eval.tolokaforge.io,resources=tasks/status;trials/status;campaigns/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=eval.tolokaforge.io,resources=tasks/finalizers;trials/finalizers;campaigns/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete;deletecollection
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
