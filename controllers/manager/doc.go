// Package manager is `tolokaforge manager`: a controller-runtime manager
// running the Task and Trial controllers of package controllers, the
// Campaign controller of controllers/campaign, the driver pool, the
// operator's metrics and health probes.
//
// Main parses the subcommand's flags; Run starts the same manager against
// any rest.Config, which is how tests and `tolokaforge dev` run it in
// process.
//
// Imports: api/artifacts/blobstore, api/authn, api/llm, api/v1alpha1,
// controllers, controllers/campaign, controllers/gateway, controllers/kueue,
// the standard library, github.com/go-logr/logr, k8s.io/api, k8s.io/apimachinery,
// k8s.io/client-go, k8s.io/utils, sigs.k8s.io/controller-runtime and
// sigs.k8s.io/kueue (its API types only).
package manager
