// Package controllers holds the Task and Trial reconcilers of the Tolokaforge
// operator and the bounded pool of trial drivers they hand ready attempts to.
//
// The Trial reconciler follows the rebuild-from-the-world recipe: every
// reconcile reads the Trial, its pods and the driver pool, plans the whole
// desired status and the side effects in one pure function (plan.go), writes
// the status once under an optimistic lock (status.go), and only then acts
// (pods, network policy, drivers, deletions, events). A stale cache therefore
// never acts twice: its status write conflicts and the plan is redone from a
// fresh read.
//
// Files by concern: attempts.go (attempt lifecycle, outcome action table,
// backoff), pods.go and networkpolicy.go (what is created per attempt and per
// trial), pool.go and driver.go (the drivers that run host.RunAttempt off the
// reconcile path), status.go (status write), grade.go (runner grade to status),
// references.go (the Secrets a Trial reads, looked up before any pod),
// reasons.go (condition types, reasons and labels shared by conditions and
// events), events.go, metrics.go. Warm slots (docs/warm-slots.md): slots.go
// (the in-memory registry of claims), slotpod.go (a slot's pod, Secret and
// its Campaign's NetworkPolicy), slotplan.go (the pure plan of an attempt on
// a slot), slotctl.go (observe's claim, the slot objects' creation and
// deletion, the idle and orphan sweeper).
//
// Imports: api/artifacts/blobstore, api/authn, api/llm, api/packfiles, api/result, api/runnerpb,
// api/task, api/telemetry, api/v1alpha1, controllers/gateway, controllers/host,
// controllers/host/agents, controllers/refs, runner/client, the standard library,
// github.com/go-logr/logr, github.com/prometheus/client_golang, go.opentelemetry.io/otel/trace, google.golang.org/grpc,
// k8s.io/api, k8s.io/apimachinery, k8s.io/client-go, k8s.io/utils and
// sigs.k8s.io/controller-runtime. Nothing imports this
// package but controllers/manager.
package controllers
