// Package host is the host of the runner protocol: it drives one attempt of a
// trial against a runner (RegisterTrial with the version lock, the agent loop,
// GradeTrial, CleanupTrial) and classifies how the attempt ended. The Trial
// controller and `tolokaforge trial run` both use RunAttempt, so a trial behaves
// the same on a cluster and on a laptop.
//
// It may import api/..., runner/client and dbservice/client; never controllers.
package host
