// Package manager is `tolokaforge manager`: a controller-runtime manager
// running the Task and Trial controllers of package controllers, the
// Campaign controller of controllers/campaign, the driver pool, the
// operator's metrics and health probes.
//
// Main parses the subcommand's flags; Run starts the same manager against
// any rest.Config, which is how tests and `tolokaforge dev` run it in
// process.
//
// Imports: controllers, controllers/campaign, api/v1alpha1, controller-runtime
// and client-go.
package manager
